"""What this machine has of AMD's: `doctor`'s rows (ROCm's HIP runtime and hiprtc, every
AMDGPU toolchain and the targets the lab's probes name that each builds) and the fleet's
resources (its toolchains, the targets static probes can run on). Imported when asked."""

import fnmatch

from probelab.errors import IntegrityError, LabError, Unavailable, UsageError
from probelab.vendors.amd.targets import TARGETS

PIPELINE = ("llc", "llvm-mc")  # the LLVM tools pipeline probes run, beside clang's own


def rocm_rows() -> list[tuple[str, bool, str]]:
    """Can the HIP runtime and hiprtc be loaded, at which version."""
    from probelab.vendors.amd import hiprtc, rocm

    def runtime() -> str:
        (runtime,) = rocm.check(rocm.hip().hipRuntimeGetVersion(), "hipRuntimeGetVersion")
        return "HIP " + rocm.version(runtime)

    rows = []
    for name, version in (("ROCm HIP runtime", runtime), ("ROCm hiprtc", hiprtc.version)):
        try:
            rows.append((name, True, version()))
        except Unavailable as exc:
            rows.append((name, False, str(exc)))
        except (RuntimeError, IntegrityError) as exc:
            rows.append((name, False, str(rocm.no_rocm(exc))))
    return rows


def rows() -> list[tuple[str, bool, str]]:
    from probelab.toolchains import identity
    from probelab.vendors.amd import toolchain as amdgpu

    out = rocm_rows()
    try:
        found = amdgpu.toolchains()
    except LabError as exc:
        return [*out, ("AMDGPU toolchain", False, str(exc))]
    wanted = named_targets()
    for n, tc in enumerate(found):
        known = amdgpu.supported_targets(tc)
        builds = [t for t in wanted or TARGETS if t in known]
        lacks = [t for t in wanted if t not in known]
        said = [f"{tc.version} ({tc.origin}) at {tc.path}{' (the default)' if n == 0 else ''}",
                *([f"builds {', '.join(builds)}"] if builds else []),
                *([f"cannot build {', '.join(lacks)}"] if lacks else []),
                ", ".join(f"{t} {'ok' if tc.has(t) else 'MISSING'}" for t in PIPELINE)]
        out.append((f"AMDGPU toolchain {tc.name}", True, "; ".join(said)))
        out += identity.rows(tc.name, tc.tools(t for t in PIPELINE if tc.has(t)))
    return out


def named_targets() -> list[str]:
    """The AMD targets this lab's probes name (their patterns without wildcards, features
    dropped), in LLVM's order; none outside a lab (doctor then lists every one a toolchain
    builds)."""
    from probelab.probe import catalog

    try:
        named = {t.split(":")[0] for e in catalog().entries() for t in e.targets}
    except UsageError:
        return []
    return [t for t in TARGETS if t in named]


def resources(static: set[str]) -> tuple[list[str], list[str]]:
    """(its toolchains here, the targets static probes matching `static` can run on: those
    the default toolchain builds)."""
    from probelab.vendors.amd import toolchain as amdgpu

    names: list[str] = []
    try:  # no AMDGPU toolchain: no static probe runs here
        names = [tc.name for tc in amdgpu.toolchains()]
        return names, [t for t in amdgpu.supported_targets(amdgpu.find_clang())
                       if any(fnmatch.fnmatchcase(t, pattern) for pattern in static)]
    except LabError:
        return names, []
