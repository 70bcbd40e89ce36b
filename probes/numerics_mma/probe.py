"""numerics-mma-* and numerics-wgmma-*: how NVIDIA's matrix units round and accumulate,
measured against sealed numeric models (issue 19). mma.sync m16n8k16 f16 and bf16 into f32
and f16 -> f16 (SASS HMMA.16816.F32[.BF16], .F16), m16n8k8 tf32 (HMMA.1688.F32.TF32),
m16n8k32 e4m3/e5m2 (lowered on sm_90 to two f16 HMMA and C's FADD, as probes/mma_fp8
proves), f64 m8n8k4 and m16n8k16 (DMMA); wgmma m64n8k16 f16/bf16, m64n8k8 tf32 and m64n8k32
e4m3/e5m2 into f32 (HGMMA, QGMMA), A from registers and B from a shared tile.

Each wave is one MMA and one case: the case's K values of A fill row 0, its K of B column
0, its C the element D(0, 0); every other element of A, B and C is +0, so D(0, 0) is the
case's result and every other D element must come back +0 (`rest_zero`). The fragments are
placed by the PTX ISA's figures (9.7.13.4, 9.7.15.5), which this lab measured CONFIRMED on
the H200 (the mma-*, dmma-f64 and wgmma-* lane maps); B's wgmma tile is K-major without
swizzle, as wgmma-* measured it. Cases come from probelab.kits.numerics.stimulus, placed by
each kind's Frame: every value exact in its format. Raw D registers are kept whole (`d_raw`).

numerics-order-* (issue 38): the same kernels on the `order` family alone, FPRev's
swamping made deep, so D(0, 0) counts the unit products that join after the step where the
pair +M, -M meets (`survivors`), and `joins_after` gives, per k, the most any pair with it
leaves: the unit's accumulation order, read from the data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import ClassVar

import numpy as np

from probelab.formats import FORMATS
from probelab.kits import SEPARATION_FLOOR
from probelab.kits.numerics import stimulus as families
from probelab.kits.numerics.draws import pattern
from probelab.kits.numerics.stimulus import FIRST, Frame
from probelab.kits.tiles import Tile
from probelab.numerics.exact import decode, encode
from probelab.numerics.models import FmaChain, FusedDot
from probelab.probe import Evidence, Kernel, Launch, load_sibling

HERE = Path(__file__).parent
F16, F32, F64, E4M3, E5M2 = (FORMATS[n] for n in ("f16", "f32", "f64", "e4m3", "e5m2"))
Cell = Callable[[int, int], tuple[int, int]]  # (lane of a warp, element) -> (row, col)


def a_cell(lane: int, i: int) -> tuple[int, int]:
    """(m, k) of element i of lane's A fragment (PTX m16n8k16 .f16/.bf16, row-major A)."""
    g, t = lane >> 2, lane % 4
    return g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)


def b_cell(lane: int, i: int) -> tuple[int, int]:
    """(k, n) of element i of lane's B fragment (column-major B)."""
    g, t = lane >> 2, lane % 4
    return 2 * t + (i & 1) + 8 * (i >> 1), g


def a_cell_tf32(lane: int, i: int) -> tuple[int, int]:
    """(m, k) of element i of lane's A fragment (PTX m16n8k8 .tf32; m16n8k16 and, as
    element 0, m8n8k4 .f64)."""
    g, t = lane >> 2, lane % 4
    return g + 8 * (i & 1), t + 4 * (i >> 1)


def b_cell_tf32(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    return t + 4 * i, g


def a_cell_fp8(lane: int, i: int) -> tuple[int, int]:
    """(m, k) of element i of lane's A fragment (PTX m16n8k32 .e4m3/.e5m2)."""
    g, t = lane >> 2, lane % 4
    return g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >> 3)


def b_cell_fp8(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    return 4 * t + (i & 3) + 16 * (i >> 2), g


def d_cell(lane: int, i: int) -> tuple[int, int]:
    """(m, n) of element i of lane's C/D fragment (f32, f16 and f64 alike)."""
    g, t = lane >> 2, lane % 4
    return g + 8 * (i >> 1), 2 * t + (i & 1)


def _table(cell: Cell, lanes: int, elements: int) -> np.ndarray:
    """(lanes, elements, 2): a warpgroup's warp w holds rows 16 w.. (wgmma's figures)."""
    return np.array([[np.add(cell(lane % 32, i), (16 * (lane // 32), 0))
                      for i in range(elements)] for lane in range(lanes)])


def mma_evidence(form: str, spans: tuple[int, int, int]) -> Evidence:
    """Exactly one MMA of this form and no other; A, B and C straight from their loads."""
    unit = form.split("\\.")[0]
    others = tuple(rf"{u}.*" for u in ("HMMA", "IMMA", "DMMA") if u != unit)
    return Evidence(form, forbidden=(rf"{unit}\.(?!{form[len(unit) + 2:]}$).*", *others,
                                     r"HFMA2.*" if unit == "HMMA" else r"DFMA.*"),
                    operands=("unmodified",) * 3, spans=spans)


def fp8_evidence(name: str) -> Evidence:
    """sm_90's realisation of fp8 mma.sync (probes/mma_fp8 measured it): A and B unpacked to
    f16, two f16 HMMA m16n8k16, the first from a zero C, and C's FADD after them."""
    return Evidence(
        r"HMMA\.16816\.F32", count=2,
        lowered=f"sm_90 has no fp8 mma.sync unit: ptxas unpacks A and B to f16 "
                f"(F2FP.F16.{name.upper()}.UNPACK_B), issues two f16 HMMA m16n8k16, the first "
                "from a zero C and the second accumulating on it, and adds C after them (FADD)",
        forbidden=(r"HMMA\.(?!16816\.F32$).*", r"IMMA.*", r"DMMA.*", r"[HQ]GMMA.*"),
        operands=("from_memory", "from_memory", "any"), spans=(4, 2, 4),
        companions=((rf"F2FP\.F16\.{name.upper()}\.UNPACK_B", "before", 12),
                    ("FADD", "after", 4)))


def wgmma_evidence(form: str) -> Evidence:
    """One warpgroup MMA of this form and no other matrix instruction; A and C straight from
    their loads; B placed by the tile's store, then the async-proxy fence, the warpgroup's
    arrive before the MMA and its wait after."""
    return Evidence(form, forbidden=(rf"(?!{form}$)[HIQ]GMMA.*", r"[HID]MMA.*"),
                    operands=("unmodified", "any", "unmodified"), spans=(4, 1, 4),
                    companions=((r"STS", "before", 1), (r"FENCE\.VIEW\.ASYNC\.S", "before", 1),
                                (r"WARPGROUP\.ARRIVE", "before", 1),
                                (r"WARPGROUP\.DEPBAR\.LE", "after", 1)))


ALL = (*FIRST, "window", "carry", "c_ties", "carry_ties", "overflow")
# issue 38: every kind takes `targeted` (its thin families again at each exponent shift, a
# shifted case kept only where its inputs stay normals) and `nans`, so that each pair of its
# sealed models parts on >= 32 cells; version 3 (the first three: 4) marks the new stimulus
EVERY = (*ALL, "targeted", "nans")
# issue 38 item 3: the probes whose laws were read from their first data (lowered-pairs-law,
# dfma-nans) take cases drawn from a seed their datasets record (`stimulus_seed`), so those
# laws can be confirmed on cases they have not seen; version 4 marks the new stimulus
SEEDED = (*EVERY, "seeded")
SEED = 20261205  # chosen before any dataset of it existed; another seed is another version
UP, DOWN = tuple(range(1, 28)), tuple(range(-1, -28, -1))


@dataclass(frozen=True)
class Kind:
    id: str
    kernel: str  # the kernel's name; its symbol is probe_<kernel>
    a: str  # A's and B's format
    out: str  # C's and D's
    shape: str  # the PTX shape
    a_cell: Cell
    b_cell: Cell | None  # None: B from wgmma's shared tile
    elements: tuple[int, int, int]  # A, B and C/D elements per lane
    evidence: Evidence
    frame: Frame
    families: tuple[str, ...] = ALL
    # the input format the order probe's span was sealed with, where it is not the frame's
    # (mma.sync bf16/tf32: f16's, their frames' before they took every family)
    order_a: str | None = None
    # 3: the stimulus took every family and the targeted one (issue 38), which flips laws
    # confirmed on version 2's cases (the first three: 4); 4 of the SEEDED kinds: their
    # seeded cases added; None: the probe's default
    version: str | None = None
    lanes: int = 32  # 128: a warpgroup
    targets: tuple[str, ...] = ("sm_90*",)

    @property
    def k(self) -> int:
        return self.frame.k


# the first three probes' kinds took FIRST's cases when first sealed; since issue 38 they take
# every family (window, carry, ties of C, overflow: alignment reference and overflow tested)
# fp8: the unit terms inside e4m3/e5m2, and ties of a 14-bit result (QGMMA keeps 13 bits)
F8 = dict(one=16, swamp_one=-8, shifts=range(8, 29), carry_precision=14, offsets=DOWN,
          rolls=tuple(range(1, 16)))
FP8_TINY = {"e4m3": ((-9, 0), (-7, 0), (-6, -6), (-9, -9)),
            "e5m2": ((-16, 0), (-15, 0), (-14, -14), (-16, -16))}
F64_FRAME = dict(a=F64, out=F64, shifts=range(48, 60), c_tiny=-1060, offsets=UP,
                 tiny=((-1074, 0), (-1060, 0), (-1022, -30), (-600, -500)))
SM8 = ("sm_8*", "sm_90*")  # the first three probes' (their kernels are sm_80's too)
WGMMA = dict(b_cell=None, lanes=128, elements=(8, 0, 4))
KINDS = {k.id: k for k in (
    Kind("numerics-mma-f16-f32", "f16_f32_m16n8k16", "f16", "f32", "m16n8k16", a_cell, b_cell,
         (8, 4, 4), mma_evidence(r"HMMA\.16816\.F32", (4, 2, 4)), Frame(16, offsets=UP),
         EVERY, targets=SM8, version="4"),
    Kind("numerics-mma-bf16-f32", "bf16_f32_m16n8k16", "bf16", "f32", "m16n8k16", a_cell,
         b_cell, (8, 4, 4), mma_evidence(r"HMMA\.16816\.F32\.BF16", (4, 2, 4)),
         Frame(16, a=FORMATS["bf16"], offsets=UP), EVERY, targets=SM8, order_a="f16",
         version="4"),
    Kind("numerics-mma-tf32-f32", "tf32_f32_m16n8k8", "tf32", "f32", "m16n8k8", a_cell_tf32,
         b_cell_tf32, (4, 2, 4), mma_evidence(r"HMMA\.1688\.F32\.TF32", (4, 2, 4)),
         Frame(8, a=FORMATS["tf32"], offsets=UP), EVERY, targets=SM8, order_a="f16",
         version="4"),
    Kind("numerics-mma-f16-f16", "f16_f16_m16n8k16", "f16", "f16", "m16n8k16", a_cell, b_cell,
         (8, 4, 4), mma_evidence(r"HMMA\.16816\.F16", (4, 2, 2)),
         Frame(16, out=F16, one=10, tiny=((-24, 0), (-20, 0), (-14, -6), (-15, -10)),
               c_tiny=-20, offsets=(*DOWN, *UP)), EVERY, version="3"),
    *(Kind(f"numerics-mma-{n}-f32", f"{n}_f32_m16n8k32", n, "f32", "m16n8k32", a_cell_fp8,
           b_cell_fp8, (16, 8, 4), fp8_evidence(n),
           Frame(32, a=FORMATS[n], tiny=FP8_TINY[n], seed=SEED, **F8), SEEDED, version="4")
      for n in ("e4m3", "e5m2")),
    Kind("numerics-mma-f64-m8n8k4", "f64_m8n8k4", "f64", "f64", "m8n8k4", a_cell_tf32,
         b_cell_tf32, (1, 1, 2), mma_evidence(r"DMMA\.8x8x4", (2, 2, 4)),
         Frame(4, seed=SEED, **F64_FRAME), SEEDED, version="4"),
    Kind("numerics-mma-f64-m16n8k16", "f64_m16n8k16", "f64", "f64", "m16n8k16", a_cell_tf32,
         b_cell_tf32, (8, 4, 4), mma_evidence(r"DMMA\.16x8x16", (16, 8, 8)),
         Frame(16, seed=SEED, **F64_FRAME), SEEDED, version="4"),
    Kind("numerics-wgmma-f16-f32", "wgmma_f16_f32_m64n8k16", "f16", "f32", "m64n8k16", a_cell,
         evidence=wgmma_evidence(r"HGMMA\.64x8x16\.F32"), frame=Frame(16, offsets=UP),
         families=EVERY, version="3", **WGMMA),
    Kind("numerics-wgmma-bf16-f32", "wgmma_bf16_f32_m64n8k16", "bf16", "f32", "m64n8k16",
         a_cell, evidence=wgmma_evidence(r"HGMMA\.64x8x16\.F32\.BF16"),
         frame=Frame(16, a=FORMATS["bf16"], offsets=UP), families=EVERY, version="3",
         **WGMMA),
    Kind("numerics-wgmma-tf32-f32", "wgmma_tf32_f32_m64n8k8", "tf32", "f32", "m64n8k8",
         a_cell_tf32, evidence=wgmma_evidence(r"HGMMA\.64x8x8\.F32\.TF32"),
         frame=Frame(8, a=FORMATS["tf32"], offsets=UP), families=EVERY, version="3",
         **{**WGMMA, "elements": (4, 0, 4)}),
    *(Kind(f"numerics-wgmma-{n}-f32", f"wgmma_{n}_f32_m64n8k32", n, "f32", "m64n8k32",
           a_cell_fp8, evidence=wgmma_evidence(rf"QGMMA\.64x8x32\.F32\.{n.upper()}\.{n.upper()}"),
           frame=Frame(32, a=FORMATS[n], tiny=FP8_TINY[n], **F8), families=EVERY,
           version="3", **{**WGMMA, "elements": (16, 0, 4)}) for n in ("e4m3", "e5m2")),
)}
TILE_BYTES = 512  # wgmma's B tile (the first 256 bytes hold the N = 8, K-major matrix)
B_TILE = Tile("b", 0, 128, 256)  # as numerics_wgmma.cu builds it: K-major, no swizzle


def pack(values: np.ndarray, bits: int) -> np.ndarray:
    """(..., elements) patterns of `bits` into (..., words) little-endian 32-bit words."""
    values = values.astype(np.uint64)
    if bits == 64:
        return np.stack([values & 0xFFFFFFFF, values >> 32], -1).reshape(
            *values.shape[:-1], -1).astype(np.uint32)
    per = 32 // bits
    words = np.zeros((*values.shape[:-1], -(-values.shape[-1] // per)), np.uint64)
    for i in range(values.shape[-1]):
        words[..., i // per] |= values[..., i] << np.uint64(bits * (i % per))
    return words.astype(np.uint32)


def unpack(words: np.ndarray, bits: int, elements: int) -> np.ndarray:
    """pack's inverse: (..., words) into (..., elements) patterns (uint64)."""
    words = words.astype(np.uint64)
    if bits == 64:
        return words[..., 0::2][..., :elements] | (words[..., 1::2][..., :elements] << 32)
    per, mask = 32 // bits, np.uint64((1 << bits) - 1)
    return np.stack([(words[..., i // per] >> np.uint64(bits * (i % per))) & mask
                     for i in range(elements)], -1)


def tile_byte(k: int, size: int) -> int:
    """Byte of B(k, 0) in wgmma's tile (`B_TILE`)."""
    return B_TILE.byte(k, 0, size)


@dataclass
class NumericsProbe:
    separation_floor: ClassVar[int] = SEPARATION_FLOOR
    kind: str  # the kind's id (the probe's, unless `order`)
    order: bool = False  # numerics-order-*: the kind's kernel on the order family alone
    # 2: d_raw's lane and reg axes carry no coordinates, so the dataset's grid is the sealed
    # one (version 1's datasets added them, and their grids matched no seal)
    version: str = "2"
    plots: Mapping[str, object] = field(default_factory=lambda: {
        "alignment": load_sibling(HERE / "plots.py").alignment})
    # the simulated unit's model (tests and the sim backend only; never evidence)
    sim_model: FusedDot | FmaChain = field(default_factory=lambda: FusedDot(
        25, "toward-zero"))

    def __post_init__(self) -> None:
        self.spec = spec = KINDS[self.kind]
        self.id = self.kind.replace("numerics-", "numerics-order-") if self.order else self.kind
        self.families = ("order",) if self.order else spec.families
        self.fmt, self.out = FORMATS[spec.a], FORMATS[spec.out]
        unit = "wgmma" if spec.lanes == 128 else "mma.sync"
        self.summary = (f"{spec.a} -> {spec.out} {unit} {spec.shape}: D(0, 0) of one MMA per "
                        f"case, raw {spec.out} bits, against sealed numeric models" +
                        (" (the accumulation order: +M, -M at each pair of k)" if self.order
                         else ""))
        if self.order:  # 2: where K leaves few pairs, each witnessed 16 ways, not 4
            self.version = "2" if spec.k * (spec.k - 1) < 128 else "1"
        elif spec.version:
            self.version = spec.version
        self.targets = spec.targets
        # D(0, 0) as one 32-bit observable, or an f64's two words
        words = ("d_lo", "d_hi") if self.out.bits == 64 else ("d_bits",)
        self.observables = {w: ("case",) for w in (*words, "rest_zero")}
        if self.order:
            self.observables |= {"survivors": ("case",), "joins_after": ("k",)}
        self.a_map = _table(spec.a_cell, spec.lanes, spec.elements[0])
        self.b_map = None if spec.b_cell is None else _table(spec.b_cell, 32, spec.elements[1])
        self.d_map = _table(d_cell, spec.lanes, spec.elements[2])

    def kernels(self, vendor: str) -> list[Kernel]:
        if vendor != "nvidia":
            return []
        wgmma = self.spec.lanes == 128
        return [Kernel(self.spec.kernel, f"probe_{self.spec.kernel}",
                       HERE / ("numerics_wgmma.cu" if wgmma else "numerics_mma.cu"), "nvidia",
                       self.spec.evidence, options={"arch": "sm_90a"} if wgmma else {})]

    def stimulus(self):
        import xarray as xr

        frame = self.spec.frame
        if self.order and self.spec.order_a:
            frame = replace(frame, a=FORMATS[self.spec.order_a])
        found = [(name, case, a, b, c) for name in self.families
                 for case, a, b, c in families.FAMILIES[name](frame)]
        dtype = np.uint64 if self.out.bits == 64 else np.uint32
        a = np.array([[pattern(self.fmt, v) for v in c[2]] for c in found], dtype)
        b = np.array([[pattern(self.fmt, v) for v in c[3]] for c in found], dtype)
        c = np.array([pattern(self.out, x[4]) for x in found], dtype)
        names = list(self.families)
        ds = xr.Dataset(coords={
            "case": ("case", np.arange(len(found), dtype=np.uint32)),
            "k": ("k", np.arange(frame.k, dtype=np.uint32)),
            "a_bits": (("case", "k"), a), "b_bits": (("case", "k"), b), "c_bits": ("case", c),
            "family": ("case", np.array([f for f, *_ in found])),
            "family_id": ("case", np.array([names.index(f) for f, *_ in found], np.uint32),
                          {"flag_values": np.arange(len(names), dtype=np.uint32),
                           "flag_meanings": " ".join(names)}),
            "case_name": ("case", np.array([n for _, n, *_ in found])),
            # 1 where every input is finite: then every D element off the case is +0 (an
            # infinity in row 0 or column 0 meets the zeros elsewhere: NaN there)
            "finite_inputs": ("case", np.array([all(v.kind == "finite" for v in (*x[2], *x[3],
                                                                                 x[4]))
                                                for x in found], np.uint32)),
            "a_format": ((), self.spec.a), "b_format": ((), self.spec.a),
            "d_format": ((), self.spec.out)})
        if "seeded" in self.families:  # what its seeded cases were drawn from (check reads it)
            ds = ds.assign_coords(stimulus_seed=((), np.uint32(frame.seed)))
        if self.order:  # where each case's pair sits, and the unit product's exponent
            unit, gap = frame.order_span()
            bigs = [sorted(range(frame.k), key=lambda k, x=x: -x[2][k].top())[:2]
                    for x in found]
            ds = ds.assign_coords(
                pair_i=("case", np.array([min(b) for b in bigs], np.uint32)),
                pair_j=("case", np.array([max(b) for b in bigs], np.uint32)),
                unit_sign=("case", np.array([_product_sign(x, next(k for k in range(frame.k)
                                                                     if k not in b))
                                             for x, b in zip(found, bigs, strict=True)],
                                            np.uint32)),
                unit_exponent=((), np.int32(unit)), gap_bits=((), np.uint32(gap)))
        return ds

    def _words(self, elements: int, bits: int) -> int:
        return -(-elements * bits // 32)

    @property
    def stimulus_facts(self) -> dict[str, object]:
        """What its datasets record of the stimulus beyond the grid: where a case's values
        go ([lane, element, k] of A's row 0 and B's column 0; C is D(0, 0), lane 0's element
        0), B's wgmma tile and where B(k, 0) sits in it, and how the buffers hold the bits."""
        spec = self.spec

        def placed(table: np.ndarray, zero: int) -> list[list[int]]:
            return [[lane, i, int(cell[1 - zero])] for lane, row in enumerate(table)
                    for i, cell in enumerate(row) if cell[zero] == 0]

        facts: dict[str, object] = {
            "kit": "numerics", "lanes": spec.lanes, "elements": dict(zip("abc", spec.elements,
                                                                         strict=True)),
            "case": "one MMA per case: its k values fill A's row 0 and B's column 0, its c "
                    "D(0, 0); every other element of A, B and C is +0",
            "a_row0": placed(self.a_map, 0), "c_cell": [0, 0],
            "packing": "buffer[wave][lane][word]: a lane's elements in order, element i at "
                       "bits [i * bits, (i + 1) * bits) of its words (f64: low word first)"}
        if self.b_map is None:
            size = self.fmt.bits // 8
            facts["b_tile"] = B_TILE.record(self.fmt.bits, TILE_BYTES // size) | {
                "k_bytes": [B_TILE.byte(k, 0, size) for k in range(spec.k)],
                "read": "thread t stores its b word at word t of the tile"}
        else:
            facts["b_col0"] = placed(self.b_map, 1)
        return facts

    def launch(self, stimulus) -> Launch:
        spec, bits, lanes = self.spec, self.fmt.bits, self.spec.lanes
        a, b, c = (stimulus[n].values.astype(np.uint64) for n in ("a_bits", "b_bits", "c_bits"))
        waves = len(c)
        av = np.zeros((waves, lanes, spec.elements[0]), np.uint64)
        for lane in range(lanes):  # the case: A's row 0 and B's column 0
            for i, (m, k) in enumerate(self.a_map[lane]):
                if m == 0:
                    av[:, lane, i] = a[:, k]
        if self.b_map is None:  # wgmma: B(k, 0) at its byte of the tile, word t to thread t
            tile = np.zeros((waves, TILE_BYTES), np.uint64)
            size = bits // 8
            for k in range(spec.k):
                for byte in range(size):
                    tile[:, tile_byte(k, size) + byte] = (b[:, k] >> np.uint64(8 * byte)) & 0xFF
            bw = pack(tile, 8).reshape(waves, lanes, 1)
        else:
            bv = np.zeros((waves, lanes, spec.elements[1]), np.uint64)
            for lane in range(lanes):
                for i, (k, n) in enumerate(self.b_map[lane]):
                    if n == 0:
                        bv[:, lane, i] = b[:, k]
            bw = pack(bv, bits)
        cv = np.zeros((waves, lanes, spec.elements[2]), np.uint64)
        cv[:, 0, 0] = c  # D(0, 0): lane 0, element 0
        inputs = {"params": np.array([waves], np.uint32), "a": pack(av, bits).reshape(-1),
                  "b": bw.reshape(-1), "c": pack(cv, self.out.bits).reshape(-1)}
        d_words = self._words(spec.elements[2], self.out.bits)
        return Launch(inputs=inputs, outputs={"d": waves * lanes * d_words},
                      threads=waves * lanes, block=128)

    def assemble(self, stimulus, outputs):
        names, lanes = list(outputs), self.spec.lanes
        words = self._words(self.spec.elements[2], self.out.bits)
        raw = np.stack([np.asarray(outputs[k]["d"], np.uint32).reshape(-1, lanes, words)
                        for k in names])
        d = unpack(raw, self.out.bits, self.spec.elements[2])
        first = d[:, :, 0, 0]
        rest = d.copy()
        rest[:, :, 0, 0] = 0
        # no coordinates beside the stimulus's (and the kernel axis): a dataset's grid is
        # then the sealed grid, so `check` holds each prediction to its sealed table
        ds = stimulus.assign_coords(kernel=("kernel", np.array(names)))
        ds["d_raw"] = (("kernel", "case", "lane", "reg"), raw,
                       {"description": f"every lane's {words} D registers, raw bits"})
        out = self.out.name
        if self.out.bits == 64:
            for name, part, half in (("d_lo", first & 0xFFFFFFFF, "low"),
                                     ("d_hi", first >> 32, "high")):
                ds[name] = (("kernel", "case"), part.astype(np.uint32),
                            {"description": f"the {half} 32 bits of D(0, 0), raw f64 bits"})
        else:
            ds["d_bits"] = (("kernel", "case"), first.astype(np.uint32),
                            {"description": "D(0, 0) of the case's MMA (lane 0, its first "
                             f"element), raw {out} bits"})
        ds["rest_zero"] = (("kernel", "case"), (rest == 0).all((2, 3)).astype(np.uint32),
                           {"description": "1 where every D element but D(0, 0) is +0"})
        return self._joins(ds, first) if self.order else ds

    def _joins(self, ds, first: np.ndarray):
        """survivors: D(0, 0) in unit products (NOT_UNITS where it is none: a NaN, a
        fraction, a negative); joins_after(k): the most survivors of any pair holding k,
        i.e. how many unit products join after the step where k meets its partner."""
        unit, signs = int(ds["unit_exponent"]), ds["unit_sign"].values
        units = np.array([[_in_units(decode(self.out, int(x)), unit, int(sign))
                           for x, sign in zip(row, signs, strict=True)] for row in first],
                         np.int64)
        ds["survivors"] = (("kernel", "case"), np.where(units < 0, NOT_UNITS, units)
                           .astype(np.uint32), {
            "description": "D(0, 0) / (the units' sign * 2**unit_exponent): the unit "
                           "products that survived",
            "flag_values": np.uint32(NOT_UNITS), "flag_meanings": "not_whole_units"})
        k = ds.sizes["k"]
        pairs = np.stack([ds["pair_i"].values, ds["pair_j"].values])
        joins = np.zeros((len(ds["kernel"]), k), np.int64)
        for kk in range(k):
            held = units[:, (pairs == kk).any(0)]
            joins[:, kk] = np.where((held < 0).any(1), -1, held.max(1))
        ds["joins_after"] = (("kernel", "k"), np.where(joins < 0, NOT_UNITS, joins)
                             .astype(np.uint32), {
            "description": "per k: the most unit products any pair holding k left (those "
                           "summed after the step where k's pair met)",
            "flag_values": np.uint32(NOT_UNITS), "flag_meanings": "a_pair_not_whole_units"})
        return ds

    def simulate(self, kernel: Kernel, inputs: Mapping[str, np.ndarray]
                 ) -> dict[str, np.ndarray]:
        spec, lanes, bits = self.spec, self.spec.lanes, self.fmt.bits
        waves, rows = int(inputs["params"][0]), 16 * (lanes // 32)
        av = unpack(np.asarray(inputs["a"], np.uint32).reshape(waves, lanes, -1), bits,
                    spec.elements[0])
        cv = unpack(np.asarray(inputs["c"], np.uint32).reshape(waves, lanes, -1),
                    self.out.bits, spec.elements[2])
        am = np.zeros((waves, rows, spec.k), np.uint64)
        bm = np.zeros((waves, spec.k, 8), np.uint64)
        cm = np.zeros((waves, rows, 8), np.uint64)
        for lane in range(lanes):
            for i, (m, k) in enumerate(self.a_map[lane]):
                am[:, m, k] = av[:, lane, i]
            for i, (m, n) in enumerate(self.d_map[lane]):
                cm[:, m, n] = cv[:, lane, i]
        if self.b_map is None:  # the tile's bytes, read back as the MMA reads them
            tile = unpack(np.asarray(inputs["b"], np.uint32).reshape(waves, -1), 8,
                          TILE_BYTES)
            size = bits // 8
            for k in range(spec.k):
                for n in range(8):
                    at = B_TILE.byte(k, n, size)
                    bm[:, k, n] = sum(tile[:, at + j] << np.uint64(8 * j) for j in range(size))
        else:
            bv = unpack(np.asarray(inputs["b"], np.uint32).reshape(waves, 32, -1), bits,
                        spec.elements[1])
            for lane in range(32):
                for i, (k, n) in enumerate(self.b_map[lane]):
                    bm[:, k, n] = bv[:, lane, i]
        dm = np.zeros_like(cm)
        formats = (self.fmt, self.fmt, self.out)
        for w in range(waves):
            # a cell off row 0 and column 0 with C = +0 sums zeros: +0 (the unit's own law
            # would say the same; computing it 100 times per case only costs time); a cell
            # whose A row, B column and C bits are another's of the wave is its result again
            # (the models are functions of their inputs: row 0 against B's +0 columns, A's
            # +0 rows against column 0)
            done: dict[tuple[bytes, bytes, int], int] = {}
            for m, n in {(m, n) for m in range(rows) for n in range(8)
                         if m == 0 or n == 0 or cm[w, m, n]}:
                key = (am[w, m].tobytes(), bm[w, :, n].tobytes(), int(cm[w, m, n]))
                if key not in done:
                    d = self.sim_model([decode(self.fmt, int(x)) for x in am[w, m]],
                                       [decode(self.fmt, int(y)) for y in bm[w, :, n]],
                                       decode(self.out, int(cm[w, m, n])), formats)
                    done[key] = encode(self.out, d)
                dm[w, m, n] = done[key]
        dv = np.zeros_like(cv)
        for lane in range(lanes):
            for i, (m, n) in enumerate(self.d_map[lane]):
                dv[:, lane, i] = dm[:, m, n]
        return {"d": pack(dv, self.out.bits).reshape(-1)}


NOT_UNITS = 0xFFFFFFFF  # survivors / joins_after: D(0, 0) is no whole count of units


def _product_sign(case: tuple, k: int) -> int:
    """The sign of a case's product at k (A's value's sign xor B's)."""
    return case[2][k].sign ^ case[3][k].sign


def _in_units(v, unit: int, sign: int) -> int:
    """v / (+-2**unit, the units' sign) as a whole number >= 0, or -1 where v is none (a
    NaN, a fraction, the other sign) or is past what the uint32 variables hold apart from
    NOT_UNITS (an M that never cancelled is 2**gap_bits units: cast, 0 or another count)."""
    if v.kind != "finite":
        return -1
    if not v.significand:
        return 0
    shift = v.exponent - unit
    if v.sign != sign or (shift < 0 and v.significand % (1 << -shift)):
        return -1
    units = v.significand << shift if shift >= 0 else v.significand >> -shift
    return units if units < NOT_UNITS else -1


PROBES = (*(NumericsProbe(kind) for kind in KINDS),
          *(NumericsProbe(kind, order=True) for kind in KINDS))
