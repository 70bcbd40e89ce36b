"""Kernel text every lane-id wgmma source shares, rendered once here: the types a source
needs, the ARGS, the shared-memory address of a tile and PTX's matrix descriptor. A
warpgroup (128 threads, one block) is one wave; thread t of wave w reads a[w][t][..], b and
c and writes D to d[w][t][..]; a tile's value v of thread t is its element v * 128 + t."""

from probelab.kits.lane_id.mma_sync import ARGS, comment, typedef

_NARROW = {8: "typedef unsigned char uint8_t;\n", 16: "typedef unsigned short uint16_t;\n"}

SHARED_ADDRESS = """\
__device__ __forceinline__ uint32_t shared_address(const void* p) {
    uint32_t r;
    asm volatile("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }"
                 : "=r"(r) : "l"(p));
    return r;
}
"""

DESCRIPTOR = """\
// PTX's matrix descriptor: start address, leading and stride byte offsets (each >> 4, 14
// bits), swizzle mode in bits 62-63 (0 none, 1 128B, 2 64B, 3 32B); base offset 0
__device__ __forceinline__ uint64_t descriptor(uint32_t address, uint32_t lbo, uint32_t sbo,
                                               uint64_t mode) {
    return (uint64_t)((address & 0x3FFFF) >> 4) | ((uint64_t)((lbo & 0x3FFFF) >> 4) << 16) |
           ((uint64_t)((sbo & 0x3FFFF) >> 4) << 32) | (mode << 62);
}
"""


def head(vendor: str, prose: str, narrow: tuple[int, ...] = (16,)) -> str:
    """The opening comment, the types (32 bits as `vendor`'s compilers take it, 64 bits, and
    the `narrow` element widths a tile holds) and the ARGS."""
    return (comment(prose) + typedef(vendor) + "typedef unsigned long long uint64_t;\n"
            + "".join(_NARROW[bits] for bits in narrow) + "\n" + ARGS)


def preamble(vendor: str, prose: str, narrow: tuple[int, ...] = (16,)) -> str:
    """`head`, then the shared address and the general descriptor, a blank line apart."""
    return head(vendor, prose, narrow) + "\n" + SHARED_ADDRESS + "\n" + DESCRIPTOR
