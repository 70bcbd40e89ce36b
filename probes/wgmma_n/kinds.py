"""The wgmma-<type>-wide and -n256 probes' element types and kernels, declared once: the probe
(probe.py) and the kernel source's generator (generate.py) both read them."""

from dataclasses import dataclass

from probelab.formats import BF16, E4M3, E5M2, F16, F32, S8, S32, TF32
from probelab.kits.elements import Codec
from probelab.kits.tiles import Tile, grid_facts

# QGMMA into f32 keeps sums exact only below 2**14 (probes/wgmma_types, version 1 of its fp8
# probes): ids and C digits are planned within it
FP8_SUMS = 2**14


@dataclass(frozen=True)
class Kind:
    codec: Codec
    bytes: int  # one element of A and B
    k: int
    ptx: str  # the PTX form's types: dtype.atype.btype
    sass: str  # the SASS form after "<unit>.64xNxK."
    unit: str  # HGMMA, QGMMA, IGMMA
    scaled: bool  # takes imm-scale-a/b (all but the integer form)
    transposable: bool  # takes imm-trans-a/b (16-bit types only)

    def acc_registers(self, n: int) -> int:
        """32-bit accumulator registers per thread at width n (n / 2 values each)."""
        return n // 2 * self.codec.accumulator.bits // 32


KINDS = {
    "f16-f32": Kind(Codec(F16, F32), 2, 16, "f32.f16.f16", "F32", "HGMMA", True, True),
    "bf16-f32": Kind(Codec(BF16, F32), 2, 16, "f32.bf16.bf16", "F32.BF16", "HGMMA", True, True),
    "f16-f16": Kind(Codec(F16, F16), 2, 16, "f16.f16.f16", "F16", "HGMMA", True, True),
    "tf32-f32": Kind(Codec(TF32, F32), 4, 8, "f32.tf32.tf32", "F32.TF32", "HGMMA", True, False),
    "e4m3-f32": Kind(Codec(E4M3, F32, sums_exact=FP8_SUMS), 1, 32, "f32.e4m3.e4m3",
                     "F32.E4M3.E4M3", "QGMMA", True, False),
    "e5m2-f32": Kind(Codec(E5M2, F32, sums_exact=FP8_SUMS), 1, 32, "f32.e5m2.e5m2",
                     "F32.E5M2.E5M2", "QGMMA", True, False),
    "s8-s32": Kind(Codec(S8, S32), 1, 32, "s32.s8.s8", "S8.S8", "IGMMA", False, False),
}


@dataclass(frozen=True)
class Form:
    """One kernel: N, A from registers (a_tile 0) or a 2 KiB shared tile, and each tile's
    descriptor (swizzle bytes, 0: none; LBO; SBO). Every tile is K-major and holds exactly
    its matrix: rows of 32 bytes of k (two 16-byte core matrices, LBO 128, when
    unswizzled), 8-row groups SBO = 256 bytes apart."""

    name: str
    n: int
    a: tuple[int, int, int] | None  # None: A from registers
    b: tuple[int, int, int]

    @property
    def tiles(self) -> tuple[Tile, ...]:
        """Its shared tiles, each K-major."""
        return (*((Tile("a", *self.a),) if self.a else ()), Tile("b", *self.b))

    @property
    def facts(self) -> tuple[tuple[str, int], ...]:
        """The grid's per-kernel coordinates (no A tile: a_tile 0, its fields 0)."""
        return grid_facts(self.tiles, ("a_tile", "a_swizzle", "a_lbo", "a_sbo", "b_swizzle",
                                       "b_lbo", "b_sbo"))


NONE, SW32 = (0, 128, 256), (32, 16, 256)
# each probe's kernels share buffers strided for the widest, so N = 256 is a probe of its own
FORMS = {
    "wide": (Form("rs_n16", 16, None, NONE), Form("rs_n64", 64, None, SW32),
             Form("ss_n8", 8, NONE, SW32), Form("ss_n16", 16, SW32, NONE),
             Form("ss_n64", 64, SW32, SW32)),
    "n256": (Form("rs_n256", 256, None, SW32), Form("ss_n256", 256, NONE, NONE)),
}


def b_values(kind: Kind, form: Form) -> int:
    """B's tile elements per thread: the matrix's, and one at least (tf32 m64n8k8's 64
    elements sit in a 128-element tile whose other half the instruction never reads)."""
    return max(1, kind.k * form.n // 128)


def kernel_name(kind: str, form: Form) -> str:
    return f"{kind.replace('-', '_')}_{form.name}"
