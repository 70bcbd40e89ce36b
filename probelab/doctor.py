"""What this machine can do: packages, toolchains, devices, and how to get what is missing."""

import importlib.metadata
import importlib.util
import platform
import shutil
from pathlib import Path
from typing import Any

from probelab import targets
from probelab.errors import LabError, UsageError
from probelab.paths import lab_root, ledger_path
from probelab.records import ToolRecord
from probelab.toolchains import identity

PACKAGES = {
    "numpy": "core", "xarray": "core", "h5netcdf": "core", "h5py": "core", "typer": "core",
    "rich": "core", "matplotlib": "core",
    "cuda-core": "pip install 'probelab[cuda]'", "cuda-bindings": "pip install 'probelab[cuda]'",
    "nvidia-cuda-nvrtc": "pip install 'probelab[cuda]'",
    "nvidia-cuda-nvdisasm": "pip install 'probelab[cuda]' (or a CUDA toolkit's nvdisasm)",
    "hip-python": "pip install 'probelab[hip]' (needs ROCm on an AMD GPU machine)",
}
PIPELINE = ("llc", "llvm-mc")  # the LLVM tools pipeline probes run, beside clang's own


def backend_presence() -> dict[str, dict[str, Any]]:
    """Whether each backend's driver and bindings are installed (the vendor table says
    what to look for), opening no device and importing no backend (`list` stays instant;
    `doctor` and `sweep` open the device and say what it is)."""
    from probelab.vendors import SIMULATED, VENDORS

    status = {}
    for driver in (d for vendor in VENDORS.values() for d in vendor.drivers):
        has_driver = Path(driver.path).exists()
        has_bindings = importlib.util.find_spec(driver.bindings) is not None
        parts = [f"{driver.what} {'found' if has_driver else 'not found'}",
                 f"{driver.package} {'installed' if has_bindings else 'not installed'}"]
        status[driver.backend] = {"found": has_driver and has_bindings, "detail":
                                  ", ".join(parts) + " (`probelab doctor` opens the device)"}
    status["sim"] = {"found": True, "detail": SIMULATED}
    return status


def _check(name: str, ok: bool, detail: str) -> dict[str, Any]:
    return {"name": name, "ok": ok, "detail": detail}


def backend_status() -> dict[str, dict[str, Any]]:
    """Each backend's own `status()`: the device it opens, or why it cannot (sim last)."""
    from probelab import backends

    order = sorted(backends.names(), key=lambda name: name == "sim")
    return {name: backends.module(name).status() for name in order}


def _toolchains() -> list[dict[str, Any]]:
    from probelab.toolchains import nvidia

    rows = []
    try:
        rows.append(_check("NVRTC", True, nvidia.nvrtc_version()))
    except LabError as exc:
        rows.append(_check("NVRTC", False, str(exc)))
    tool = nvidia.find_nvdisasm()
    if tool is None:
        rows.append(_check("nvdisasm", False, nvidia.INSTALL_HINT))
    else:
        try:
            described = nvidia.describe()
        except LabError:  # no NVRTC to compare with (said in its own row), nor its tools
            described = {"disassembler_matches_compiler": "no", "name": "", "tools": {}}
        same = described["disassembler_matches_compiler"] == "yes"
        rows.append(_check("nvdisasm", True, f"{tool} ({nvidia.nvdisasm_version()}; "
                           f"{'NVRTC' if same else 'NOT NVRTC'}'s release)"))
        rows += _tool_rows(described["name"], described["tools"])
    from probelab.backends.ops_hip import rocm_rows

    rows += [_check(name, ok, detail) for name, ok, detail in rocm_rows()]
    from probelab.toolchains import amdgpu

    try:
        found = amdgpu.toolchains()
    except LabError as exc:
        return [*rows, _check("AMDGPU toolchain", False, str(exc))]
    wanted = _amd_targets()
    for n, tc in enumerate(found):
        known = amdgpu.supported_targets(tc)
        builds = [t for t in wanted or targets.AMD if t in known]
        lacks = [t for t in wanted if t not in known]
        said = [f"{tc.version} ({tc.origin}) at {tc.path}{' (the default)' if n == 0 else ''}",
                *([f"builds {', '.join(builds)}"] if builds else []),
                *([f"cannot build {', '.join(lacks)}"] if lacks else []),
                ", ".join(f"{t} {'ok' if tc.has(t) else 'MISSING'}" for t in PIPELINE)]
        rows.append(_check(f"AMDGPU toolchain {tc.name}", True, "; ".join(said)))
        rows += _tool_rows(tc.name, tc.tools(t for t in PIPELINE if tc.has(t)))
    return rows


def _amd_targets() -> list[str]:
    """The AMD targets this lab's probes name (their patterns without wildcards, features
    dropped), in LLVM's order; none outside a lab (doctor then lists every one a toolchain
    builds)."""
    from probelab.probe import catalog

    try:
        named = {t.split(":")[0] for e in catalog().entries() for t in e.targets}
    except UsageError:
        return []
    return [t for t in targets.AMD if t in named]


def _tool_rows(toolchain: str, tools: dict[str, ToolRecord]) -> list[dict[str, Any]]:
    """One row per tool: what its file is, in full (a tool outside its package: not ok)."""
    return [_check(f"{toolchain} {name}", tool["package_ok"] is not False,
                   identity.shown(tool)) for name, tool in tools.items()]


def _history_check() -> dict[str, Any]:
    """Whether this checkout's history can order seals and measurements."""
    from probelab import gitinfo

    try:
        why = gitinfo.history_problem() or (None if gitinfo.has_history() else
                                            gitinfo.NO_HISTORY)
    except UsageError as exc:  # outside a lab
        why = str(exc)
    return _check("git history", why is None, why or "full history: seals and measurements "
                  "can be ordered")


def diagnose() -> dict[str, Any]:
    checks = [_check("python", True, platform.python_version())]
    try:
        checks += [_check("lab root", True, str(lab_root())),
                   _check("ledger", ledger_path().exists(), str(ledger_path()))]
    except UsageError as exc:  # doctor also helps outside a lab
        checks.append(_check("lab root", False, str(exc)))
    for package, hint in PACKAGES.items():
        try:
            checks.append(_check(package, True, importlib.metadata.version(package)))
        except importlib.metadata.PackageNotFoundError:
            fix = "pip install -e ." if hint == "core" else hint
            checks.append(_check(package, False, f"not installed: {fix}"))
    checks += _toolchains()
    checks.append(_check("git", shutil.which("git") is not None,
                         "needed to seal and check preregistrations"))
    checks.append(_history_check())
    for name, status in backend_status().items():
        checks.append(_check(f"backend {name}", status["usable"], status["detail"]))
    return {"checks": checks}
