"""numerics-mma-f16-f32, numerics-mma-bf16-f32 and numerics-mma-tf32-f32: how NVIDIA's
mma.sync m16n8k16 f16 (bf16) -> f32 and m16n8k8 tf32 -> f32 (SASS HMMA.16816.F32,
.F32.BF16, HMMA.1688.F32.TF32 on sm_90) round and accumulate, measured against sealed
numeric models (issue 19).

Each wave is one MMA and one case: the case's 16 values of A fill row 0, its 16 of B column
0, its C the element D(0, 0); every other element of A, B and C is +0, so D(0, 0) is the
case's result and every other D element must come back +0 (`rest_zero`). The fragments are
placed by the PTX ISA's m16n8k16 and m16n8k8 figures (9.7.13.4.8), which this lab measured
CONFIRMED on the H200 (mma-f16-f32 ptx-layouts, mma-tf32 ptx-fragments). Cases come from
probelab.numerics.stimulus: every value exact in its format. Raw D registers are kept
whole (`d_raw`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from probelab.numerics import stimulus as families
from probelab.numerics.exact import decode, encode
from probelab.numerics.formats import FORMATS
from probelab.numerics.models import FmaChain, FusedDot
from probelab.probe import Evidence, Kernel, Launch, load_sibling

HERE = Path(__file__).parent
F32 = FORMATS["f32"]
LANES = 32


def a_cell(lane: int, i: int) -> tuple[int, int]:
    """(m, k) of element i of lane's A fragment (PTX m16n8k16 .f16/.bf16, row-major A)."""
    g, t = lane >> 2, lane % 4
    return g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)


def b_cell(lane: int, i: int) -> tuple[int, int]:
    """(k, n) of element i of lane's B fragment (column-major B)."""
    g, t = lane >> 2, lane % 4
    return 2 * t + (i & 1) + 8 * (i >> 1), g


def a_cell_tf32(lane: int, i: int) -> tuple[int, int]:
    """(m, k) of element i of lane's A fragment (PTX m16n8k8 .tf32)."""
    g, t = lane >> 2, lane % 4
    return g + 8 * (i & 1), t + 4 * (i >> 1)


def b_cell_tf32(lane: int, i: int) -> tuple[int, int]:
    g, t = lane >> 2, lane % 4
    return t + 4 * i, g


def d_cell(lane: int, i: int) -> tuple[int, int]:
    """(m, n) of register i of lane's C/D fragment (f32)."""
    g, t = lane >> 2, lane % 4
    return g + 8 * (i >> 1), 2 * t + (i & 1)


def _table(cell, elements: int) -> np.ndarray:
    return np.array([[cell(lane, i) for i in range(elements)] for lane in range(LANES)])


@dataclass(frozen=True)
class Kind:
    k: int
    shape: str  # the kernel's PTX shape
    sass: str
    a_map: np.ndarray  # (lanes, A elements, 2) -> (m, k)
    b_map: np.ndarray  # (lanes, B elements, 2) -> (k, n)


KINDS = {
    "f16": Kind(16, "m16n8k16", r"HMMA\.16816\.F32", _table(a_cell, 8), _table(b_cell, 4)),
    "bf16": Kind(16, "m16n8k16", r"HMMA\.16816\.F32\.BF16", _table(a_cell, 8),
                 _table(b_cell, 4)),
    "tf32": Kind(8, "m16n8k8", r"HMMA\.1688\.F32\.TF32", _table(a_cell_tf32, 4),
                 _table(b_cell_tf32, 2)),
}
D_MAP = _table(d_cell, 4)


def cases(k: int) -> list[tuple[str, str, tuple, tuple, object]]:
    return [(name, case, a, b, c) for name, family in families.FAMILIES.items()
            for case, a, b, c in family(k)]


@dataclass
class NumericsProbe:
    kind: str  # the input format: "f16", "bf16" or "tf32"
    version: str = "1"
    targets: tuple[str, ...] = ("sm_8*", "sm_90*")
    observables: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: {
        "d_bits": ("case",), "rest_zero": ("case",)})  # one prediction serves every kernel
    plots: Mapping[str, object] = field(default_factory=lambda: {
        "alignment": load_sibling(HERE / "plots.py").alignment})
    # the simulated unit's model (tests and the sim backend only; never evidence)
    sim_model: FusedDot | FmaChain = field(default_factory=lambda: FusedDot(
        25, "toward-zero"))

    def __post_init__(self) -> None:
        self.id = f"numerics-mma-{self.kind}-f32"
        self.spec = KINDS[self.kind]
        self.summary = (f"{self.kind} -> f32 mma.sync {self.spec.shape}: D(0, 0) of one MMA per "
                        "case, raw f32 bits, against sealed numeric models")
        self.fmt = FORMATS[self.kind]
        self.per = 32 // self.fmt.bits  # elements per A/B register

    def kernels(self, vendor: str) -> list[Kernel]:
        if vendor != "nvidia":
            return []
        form, shape = self.spec.sass, self.spec.shape
        return [Kernel(f"{self.kind}_f32_{shape}", f"probe_{self.kind}_f32_{shape}",
                       HERE / "numerics_mma.cu", "nvidia",
                       Evidence(form, forbidden=(rf"HMMA\.(?!{form[6:]}$).*", r"IMMA.*",
                                                 r"DMMA.*", r"HFMA2.*"),
                                operands=("unmodified",) * 3, spans=(4, 2, 4)))]

    def stimulus(self):
        import xarray as xr

        found = cases(self.spec.k)
        a = np.array([[encode(self.fmt, v) for v in c[2]] for c in found], np.uint32)
        b = np.array([[encode(self.fmt, v) for v in c[3]] for c in found], np.uint32)
        c = np.array([encode(F32, x[4]) for x in found], np.uint32)
        names = list(families.FAMILIES)
        return xr.Dataset(coords={
            "case": ("case", np.arange(len(found), dtype=np.uint32)),
            "k": ("k", np.arange(self.spec.k, dtype=np.uint32)),
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
            "a_format": ((), self.kind), "b_format": ((), self.kind), "d_format": ((), "f32")})

    def launch(self, stimulus) -> Launch:
        a, b, c = (stimulus[n].values.astype(np.uint32) for n in ("a_bits", "b_bits", "c_bits"))
        waves = len(c)
        regs = {"a": np.zeros((waves, LANES, 4), np.uint32),
                "b": np.zeros((waves, LANES, 2), np.uint32),
                "c": np.zeros((waves, LANES, 4), np.uint32)}
        per, width = self.per, 32 // self.per
        for lane in range(LANES):  # the case: A's row 0 and B's column 0
            for i, (m, k) in enumerate(self.spec.a_map[lane]):
                if m == 0:
                    regs["a"][:, lane, i // per] |= a[:, k] << (width * (i % per))
            for i, (k, n) in enumerate(self.spec.b_map[lane]):
                if n == 0:
                    regs["b"][:, lane, i // per] |= b[:, k] << (width * (i % per))
        regs["c"][:, 0, 0] = c  # D(0, 0): lane 0, register 0
        inputs = {"params": np.array([waves], np.uint32)} | \
            {n: v.reshape(-1) for n, v in regs.items()}
        return Launch(inputs=inputs, outputs={"d": waves * LANES * 4}, threads=waves * LANES,
                      block=128)

    def assemble(self, stimulus, outputs):
        names = list(outputs)
        raw = np.stack([np.asarray(outputs[k]["d"], np.uint32).reshape(-1, LANES, 4)
                        for k in names])
        rest = raw.copy()
        rest[:, :, 0, 0] = 0
        ds = stimulus.assign_coords(kernel=("kernel", np.array(names)),
                                    lane=("lane", np.arange(LANES, dtype=np.uint32)),
                                    reg=("reg", np.arange(4, dtype=np.uint32)))
        ds["d_raw"] = (("kernel", "case", "lane", "reg"), raw,
                       {"description": "every lane's four f32 D registers, raw bits"})
        ds["d_bits"] = (("kernel", "case"), raw[:, :, 0, 0],
                        {"description": "D(0, 0) of the case's MMA (lane 0, register 0), raw "
                         "f32 bits"})
        ds["rest_zero"] = (("kernel", "case"), (rest == 0).all((2, 3)).astype(np.uint32),
                           {"description": "1 where every D element but D(0, 0) is +0"})
        return ds

    def simulate(self, kernel: Kernel, inputs: Mapping[str, np.ndarray]
                 ) -> dict[str, np.ndarray]:
        waves = int(inputs["params"][0])
        a = np.asarray(inputs["a"], np.uint32).reshape(waves, LANES, 4)
        b = np.asarray(inputs["b"], np.uint32).reshape(waves, LANES, 2)
        c = np.asarray(inputs["c"], np.uint32).reshape(waves, LANES, 4)
        out = np.zeros((waves, LANES, 4), np.uint32)
        per, width, k = self.per, 32 // self.per, self.spec.k
        mask = (1 << width) - 1
        for w in range(waves):
            am = np.zeros((16, k), np.uint32)
            bm = np.zeros((k, 8), np.uint32)
            for lane in range(LANES):
                for i, cell in enumerate(self.spec.a_map[lane]):
                    am[tuple(cell)] = (int(a[w, lane, i // per]) >> (width * (i % per))) & mask
                for i, cell in enumerate(self.spec.b_map[lane]):
                    bm[tuple(cell)] = (int(b[w, lane, i // per]) >> (width * (i % per))) & mask
            for lane in range(LANES):
                for i in range(4):
                    m, n = D_MAP[lane, i]
                    d = self.sim_model([decode(self.fmt, int(x)) for x in am[m]],
                                       [decode(self.fmt, int(y)) for y in bm[:, n]],
                                       decode(F32, int(c[w, lane, i])),
                                       (self.fmt, self.fmt, F32))
                    out[w, lane, i] = encode(F32, d)
        return {"d": out.reshape(-1)}


PROBES = tuple(NumericsProbe(kind) for kind in KINDS)
