"""builtin-modifiers: what each constant argument of a matrix builtin becomes in the
instruction, read off the compiler's own output (a static probe: no device).

Cases: every (arg1, arg3, arg7) of __builtin_amdgcn_swmmac_i32_16x16x{32,64}_iu4_w32 (gfx12),
and (cbsz, abid, blgp) in {0,1} x {0,1} x 0..7 of __builtin_amdgcn_mfma_f64_16x16x4f64
(gfx90a, gfx942, gfx950: clang >= 20). The grid is the same for every target; a case whose
builtin the target lacks is recorded as builds = 0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from probelab.isa import Instruction
from probelab.probe import Evidence, Kernel

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr

HERE = Path(__file__).parent
SOURCE = HERE / "modifiers.hip"
SWMMAC, MFMA = 0, 1
OBSERVABLES = ("builds", "count", "mod_neg_lo", "mod_neg_hi", "mod_clamp", "mod_index_key",
               "mod_cbsz", "mod_abid", "mod_blgp", "mod_neg")
INSTRUCTION = {
    (SWMMAC, 32): r"v_swmmac_i32_16x16x32_iu4",
    (SWMMAC, 64): r"v_swmmac_i32_16x16x64_iu4",
    (MFMA, 0): r"v_mfma_f64_16x16x4_?f64",  # gfx90a spells it ...4f64, gfx94x ...4_f64
}
FORBIDDEN = {SWMMAC: (r"v_swmmac_.*_iu8", r"v_wmma_.*"), MFMA: (r"v_mfma_f32_.*",)}
_FLAG = re.compile(r"^(\w+)(?::(\[[01,]+\]|-?\d+|0x[0-9a-f]+))?$")


def _cases() -> list[dict[str, int]]:
    cases = [dict(family=SWMMAC, k=k, a1=a1, a3=a3, a7=a7, cbsz=0, abid=0, blgp=0)
             for k in (32, 64) for a1 in (0, 1) for a3 in (0, 1) for a7 in (0, 1)]
    cases += [dict(family=MFMA, k=0, a1=0, a3=0, a7=0, cbsz=c, abid=a, blgp=g)
              for c in (0, 1) for a in (0, 1) for g in range(8)]
    return cases


def modifier_values(insn: Instruction) -> dict[str, int]:
    """Modifiers as integers: flags are 1, lists [x,y,z] are bit masks (x = bit 0)."""
    values = {}
    for token in insn.modifiers:
        m = _FLAG.match(token)
        if not m:
            continue
        name, value = m.group(1), m.group(2)
        if value is None:
            values[name] = 1
        elif value.startswith("["):
            bits = value.strip("[]").split(",")
            values[name] = sum(int(b) << i for i, b in enumerate(bits))
        else:
            values[name] = int(value, 0)
    return values


class BuiltinModifiers:
    id = "builtin-modifiers"
    version = "1"
    summary = "constant builtin arguments -> instruction modifiers (swmmac iu4, f64 MFMA)"
    targets = ("gfx1200", "gfx1201", "gfx90a", "gfx942", "gfx950")
    static = True
    observables = MappingProxyType({name: ("case",) for name in OBSERVABLES})
    plots = MappingProxyType({})

    def kernels(self, vendor: str) -> list[Kernel]:
        if vendor != "amd":
            return []
        return [self.variant(case) for case in _cases() if case["a1"] == case["blgp"] == 0
                and case["a3"] == case["a7"] == case["cbsz"] == case["abid"] == 0]

    def stimulus(self) -> xr.Dataset:
        import xarray as xr

        cases = _cases()
        coords = {"case": ("case", np.arange(len(cases), dtype=np.uint32))}
        for key in cases[0]:
            coords[key] = ("case", np.array([c[key] for c in cases], np.uint32))
        coords["builtin"] = ("case", np.array([
            f"swmmac_i32_16x16x{c['k']}_iu4_w32" if c["family"] == SWMMAC
            else "mfma_f64_16x16x4f64" for c in cases]))
        return xr.Dataset(coords=coords)

    def variant(self, case: Mapping[str, int]) -> Kernel:
        """The kernel to compile for one case, its constant arguments as -D defines."""
        family, k = int(case["family"]), int(case["k"])
        name = f"k{k}" if family == SWMMAC else "mfma_f64"
        evidence = Evidence(INSTRUCTION[(family, k)], forbidden=FORBIDDEN[family], count=1)
        defines = {key.upper(): int(case[key]) for key in
                   ("family", "k", "a1", "a3", "a7", "cbsz", "abid", "blgp")}
        return Kernel(name, "probe_modifiers", SOURCE, "amd", evidence, defines=defines,
                      targets=("gfx12*",) if family == SWMMAC else ("gfx90a", "gfx94*", "gfx950"))

    def decode(self, insn: Instruction) -> dict[str, int]:
        values = modifier_values(insn)
        return {f"mod_{name}": values.get(name, 0) for name in
                ("neg_lo", "neg_hi", "clamp", "index_key", "cbsz", "abid", "blgp", "neg")}


PROBE = BuiltinModifiers()
