"""The ISA targets the lab knows, by vendor: a made-up target is a usage error, never a
dataset, a simulated device or a power count.

NVIDIA: the sm_ architectures of the CUDA releases the lab meets (NVRTC 13 builds sm_75 to
sm_121; whether a toolchain builds one is the toolchain's to say), with the
architecture-specific `a` and family `f` variants of sm_90 and later. AMD: the processors of
LLVM's AMDGPU backend (`llc -mcpu=help`, LLVM 19; gfx950, gfx1250 and gfx1251 from LLVM 22),
named alone or as a target id with features (gfx942:sramecc+:xnack-).
"""

from probelab.errors import UsageError
from probelab.text import closest, either

_SM = (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 107, 110,
       120, 121)
NVIDIA = tuple(f"sm_{n}{v}" for n in _SM for v in ("", *(("a", "f") if n >= 90 else ()))
               if not (n == 90 and v == "f"))
AMD = tuple(f"gfx{n}" for n in (
    "600", "601", "602", "700", "701", "702", "703", "704", "705", "801", "802", "803", "805",
    "810", "900", "902", "904", "906", "908", "909", "90a", "90c", "940", "941", "942", "950",
    "1010", "1011", "1012", "1013", "1030", "1031", "1032", "1033", "1034", "1035", "1036",
    "1100", "1101", "1102", "1103", "1150", "1151", "1152", "1153", "1200", "1201", "1250",
    "1251", "9-generic", "10-1-generic", "10-3-generic", "11-generic", "12-generic"))
VENDORS = {"nvidia": NVIDIA, "amd": AMD}
FEATURES = ("sramecc+", "sramecc-", "xnack+", "xnack-")  # of an AMD target id


def vendor(target: str) -> str:
    """"nvidia" or "amd" for a known target; UsageError, naming the known ones, otherwise."""
    base, *features = target.split(":")
    if bad := [f for f in features if f not in FEATURES]:
        raise UsageError(f"target {target!r}: unknown features {bad} (a target id takes "
                         f"{', '.join(FEATURES)})")
    for name, known in VENDORS.items():
        if base in known:
            return name
    near = closest(base.lower(), (*NVIDIA, *AMD))
    hint = f"; did you mean {either(near)}?" if near else ""
    raise UsageError(f"unknown target {target!r}{hint} (known: NVIDIA sm_NN[a|f] from "
                     f"{NVIDIA[0]} to {NVIDIA[-1]}, e.g. sm_90; AMD LLVM's gfx processors, e.g. "
                     "gfx90a, gfx942, gfx950, gfx1201)")
