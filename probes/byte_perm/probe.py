"""byte-perm: what CUDA's __byte_perm and PTX prmt.b32 (default mode) do with each selector,
and on AMD what HIP's __byte_perm and the raw v_perm_b32 do with the same stimulus.

Stimulus: all 65,536 16-bit selectors x a set of operand pairs. Source bytes 0-3 are x and
4-7 are y (CUDA's order; v_perm_b32 reads them the other way round, see v_perm_model).
Each structured pair gives byte k the low bits k + 1, so a plain pick names its source byte,
and sets bit 7 (the sign) on a chosen set of bytes: none, all, or exactly one (seeds/002
section 5 style). Random pairs catch anything the structure misses.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from probelab.probe import Evidence, Kernel, Launch, load_sibling, stack_kernels

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr

HERE = Path(__file__).parent
N_SELECTORS = 1 << 16
N_RANDOM = 6
RANDOM_SEED = 0x5EED_0002


def _pair(sign_bytes: set[int]) -> tuple[int, int]:
    raw = [(k + 1) | (0x80 if k in sign_bytes else 0) for k in range(8)]
    word = int.from_bytes(bytes(raw), "little")
    return word & 0xFFFFFFFF, word >> 32


def operand_pairs() -> tuple[np.ndarray, np.ndarray, list[str]]:
    patterns = {"msb_none": set(), "msb_all": set(range(8))}
    patterns |= {f"msb_byte{k}": {k} for k in range(8)}
    xs, ys, names = [], [], []
    for name, signs in patterns.items():
        x, y = _pair(signs)
        xs.append(x)
        ys.append(y)
        names.append(name)
    rng = np.random.default_rng(RANDOM_SEED)
    random = rng.integers(0, 1 << 32, size=(N_RANDOM, 2), dtype=np.uint64)
    for k, (x, y) in enumerate(random):
        xs.append(int(x))
        ys.append(int(y))
        names.append(f"random{k}")
    return np.array(xs, np.uint32), np.array(ys, np.uint32), names


def prmt_default(x: np.ndarray, y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """PTX prmt.b32 default mode, used only by the simulated device (never as evidence)."""
    source = (y.astype(np.uint64) << np.uint64(32)) | x.astype(np.uint64)
    out = np.zeros(np.broadcast_shapes(x.shape, s.shape), np.uint64)
    for lane in range(4):
        nibble = (s.astype(np.uint64) >> np.uint64(4 * lane)) & np.uint64(0xF)
        byte = (source >> (np.uint64(8) * (nibble & np.uint64(7)))) & np.uint64(0xFF)
        sign = np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0))
        byte = np.where(nibble & np.uint64(8), sign, byte)
        out |= byte << np.uint64(8 * lane)
    return out.astype(np.uint32)


def v_perm_model(x: np.ndarray, y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """v_perm_b32 (= __builtin_amdgcn_perm(x, y, s)) as seeds/002 section 5 measured it on
    gfx1201, with the RDNA ISA's "13 and above: 0xFF" for selector bytes the seeds did not
    test. Used only by the simulated device (never as evidence).

    Source bytes 0-3 are the SECOND operand (y), 4-7 the first (x). Output byte k is chosen
    by selector byte k: 0-7 pick that source byte, 8-11 replicate the sign of source byte
    1, 3, 5, 7 (0x00 or 0xFF), 12 gives 0x00, 13 and above 0xFF."""
    source = (x.astype(np.uint64) << np.uint64(32)) | y.astype(np.uint64)
    out = np.zeros(np.broadcast_shapes(x.shape, s.shape), np.uint64)
    for lane in range(4):
        pick = (s.astype(np.uint64) >> np.uint64(8 * lane)) & np.uint64(0xFF)
        byte = (source >> (np.uint64(8) * (pick & np.uint64(7)))) & np.uint64(0xFF)
        odd = (source >> (np.uint64(16) * (pick & np.uint64(3)) + np.uint64(8))) & np.uint64(0xFF)
        sign = np.where(odd & np.uint64(0x80), np.uint64(0xFF), np.uint64(0))
        byte = np.select([pick < 8, pick < 12, pick == 12], [byte, sign, np.uint64(0)],
                         np.uint64(0xFF))
        out |= byte << np.uint64(8 * lane)
    return out.astype(np.uint32)


class BytePerm:
    id = "byte-perm"
    version = "1"
    summary = ("__byte_perm vs prmt.b32 (NVIDIA) and v_perm_b32 (AMD): every 16-bit selector "
               "over sign-marked operand bytes")
    targets = ("sm_*", "gfx*")
    observables = MappingProxyType({"value": ("operand", "selector")})

    def kernels(self, vendor: str) -> list[Kernel]:
        if vendor == "amd":
            return self._amd_kernels()
        if vendor != "nvidia":
            return []
        source = HERE / "byte_perm.cu"
        # SASS PRMT reads (a, selector, b). __byte_perm may transform its selector (it is a
        # library function), so only "a load reaches it" is required there; the raw
        # instruction must get all three operands straight from memory.
        return [
            Kernel(
                "byte_perm", "probe_byte_perm", source, "nvidia",
                Evidence(r"PRMT", operands=("unmodified", "from_memory", "unmodified")),
            ),
            Kernel(
                "prmt", "probe_prmt", source, "nvidia",
                Evidence(r"PRMT", operands=("unmodified", "unmodified", "unmodified")),
            ),
        ]

    def _amd_kernels(self) -> list[Kernel]:
        # `byte_perm` shares its name with the CUDA kernel so the two datasets line up
        # (`probelab diff`). HIP's __byte_perm is a library function, not one instruction:
        # nothing is claimed about its code, the histogram is recorded. It needs HIP's headers,
        # so only hiprtc on the device builds it.
        # v_perm_b32 reads (src0, src1, src2) = (x, y, selector) in GCN disassembly (checked
        # on gfx1201 and gfx942): all three must come straight from global loads.
        return [
            Kernel("byte_perm", "probe_byte_perm", HERE / "byte_perm_hip.hip", "amd",
                   Evidence(instruction=None), headers="hip"),
            Kernel("v_perm", "probe_v_perm", HERE / "byte_perm_builtin.hip", "amd",
                   Evidence(r"v_perm_b32", operands=("unmodified", "unmodified", "unmodified"))),
        ]

    def stimulus(self) -> xr.Dataset:
        import xarray as xr

        xs, ys, names = operand_pairs()
        return xr.Dataset(
            coords={
                "operand": ("operand", np.arange(len(xs), dtype=np.uint32)),
                "x": ("operand", xs, {"description": "source bytes 0-3", "display": "hex"}),
                "y": ("operand", ys, {"description": "source bytes 4-7", "display": "hex"}),
                "pattern": ("operand", np.array(names)),
                "selector": ("selector", np.arange(N_SELECTORS, dtype=np.uint32),
                             {"display": "hex"}),
            }
        )

    def launch(self, stimulus: xr.Dataset) -> Launch:
        n_sel = stimulus.sizes["selector"]
        cells = stimulus.sizes["operand"] * n_sel
        return Launch(
            inputs={
                "params": np.array([n_sel, cells], np.uint32),
                "x": stimulus["x"].values,
                "y": stimulus["y"].values,
                "sel": stimulus["selector"].values,
            },
            outputs={"out": cells},
            threads=cells,
        )

    def assemble(
        self, stimulus: xr.Dataset, outputs: Mapping[str, Mapping[str, np.ndarray]]
    ) -> xr.Dataset:
        ds, values = stack_kernels(stimulus, outputs, "out", self.observables["value"])
        ds["value"] = (
            ("kernel", "operand", "selector"),
            values,
            {"description": "raw 32-bit result; cell (operand, selector) ran on thread "
             "operand * n_selector + selector, lane = thread % 32"},
        )
        return ds

    def simulate(self, kernel: Kernel, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        x, y, sel = inputs["x"][:, None], inputs["y"][:, None], inputs["sel"][None, :]
        if kernel.vendor == "amd" and kernel.name == "v_perm":
            return {"out": v_perm_model(x, y, sel).reshape(-1)}
        # __byte_perm, CUDA's and HIP's alike: the documented & 0x7 per nibble.
        if kernel.name == "byte_perm":
            sel = sel & np.uint32(0x7777)
        return {"out": prmt_default(x, y, sel).reshape(-1)}

    @property
    def plots(self):
        # Loaded on demand: matplotlib is not needed to sweep or check.
        return load_sibling(HERE / "plots.py").PLOTS


PROBE = BytePerm()
