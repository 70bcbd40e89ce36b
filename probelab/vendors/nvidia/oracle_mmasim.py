"""MMA-Sim as an oracle of NVIDIA numerics datasets (probelab.oracle): its bit-accurate models
of mma and wgmma per architecture (Xie et al., arXiv 2511.10909; github.com/microsoft/MMA-Sim,
pip `mmasim`, which needs torch >= 2.9 and builds a C++ extension with ninja when first
imported: `pip install 'probelab[oracles]'`).

A numerics dataset says what it measured: its kernel names the instruction,
`[wgmma_]<a>[_<d>]_m<M>n<N>k<K>`, its `a_format`/`b_format`/`d_format` the types and its
provenance the target. MMA-Sim is asked for that instruction on that target's architecture,
one dot product per case (`dpa` over the case's K inputs and its C)."""

import re
from typing import Any

import numpy as np
import xarray as xr

from probelab import dataset
from probelab.errors import Unavailable
from probelab.formats import FORMATS
from probelab.oracle import Model, NoModel

INSTALL = "pip install 'probelab[oracles]' (MMA-Sim: mmasim, torch >= 2.9, ninja, a C++ compiler)"
# MMA-Sim's architecture names (mmasim.nv_ptx), by the base target of a dataset
ARCHITECTURES = {"sm_70": "Volta", "sm_75": "Turing", "sm_80": "Ampere", "sm_86": "Ampere",
                 "sm_87": "Ampere", "sm_89": "Ada Lovelace", "sm_90": "Hopper",
                 "sm_100": "Blackwell", "sm_120": "RTX Blackwell"}
KERNEL = re.compile(r"(?P<wgmma>wgmma_)?[a-z0-9_]*?_?m(?P<m>\d+)n(?P<n>\d+)k(?P<k>\d+)")
SIGNED = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def _architecture(ds: xr.Dataset) -> str:
    target = str(dataset.provenance(ds).get("target", ""))
    base = re.sub(r"[af]$", "", target.split(":")[0])
    if base not in ARCHITECTURES:
        raise NoModel(f"MMA-Sim models no architecture of target {target!r} "
                      f"(it knows {', '.join(ARCHITECTURES)})")
    return ARCHITECTURES[base]


def instruction(ds: xr.Dataset, kernel: str) -> tuple[bool, str]:
    """(is wgmma, MMA-Sim's shape_and_type) for a kernel of a numerics dataset."""
    found = KERNEL.fullmatch(kernel)
    if not found:
        raise NoModel(f"kernel {kernel!r} does not name an instruction shape (mMnNkK)")
    a, b, d = (str(ds[f"{x}_format"].values) for x in "abd")
    k = int(found["k"])
    if ds.sizes["k"] != k:
        raise NoModel(f"its cases are {ds.sizes['k']} k long, the instruction's k is {k}")
    shape = f"m{found['m']}n{found['n']}k{k}.{d}.{a}.{b}"
    return bool(found["wgmma"]), shape if found["wgmma"] else f"{shape}.{d}"


def _tensor(torch: Any, bits: np.ndarray, fmt: str, dtype: Any) -> Any:
    width = FORMATS[fmt].bits
    signed = bits.astype(np.uint64).astype(f"uint{width}").view(SIGNED[width])
    return torch.from_numpy(np.ascontiguousarray(signed)).view(dtype)


def model(ds: xr.Dataset, kernel: str) -> Model:
    arch = _architecture(ds)
    wgmma, shape = instruction(ds, kernel)
    try:
        import torch
        from mmasim.nv_ptx import MMA, WGMMA
        from mmasim.nv_ptx.isa_common import nv_torch_dtype
    except ImportError as exc:
        raise Unavailable(f"MMA-Sim cannot be imported ({exc}): {INSTALL}") from None
    try:
        op = (WGMMA if wgmma else MMA)(arch, shape)
    except AssertionError as exc:  # MMA-Sim's way of saying it has no such model
        raise NoModel(str(exc).splitlines()[0]) from None
    a, b, d = (str(ds[f"{x}_format"].values) for x in "abd")

    def predict() -> np.ndarray:
        result = op.dpa(_tensor(torch, ds["a_bits"].values, a, nv_torch_dtype[a]),
                        _tensor(torch, ds["b_bits"].values, b, nv_torch_dtype[b]),
                        _tensor(torch, ds["c_bits"].values, d, nv_torch_dtype[d]))
        width = FORMATS[d].bits
        return result.view(getattr(torch, f"int{width}")).numpy() \
            .view(f"uint{width}").astype(np.uint64)

    return Model(f"{'wgmma' if wgmma else 'mma'} {shape} on {arch}", predict)
