"""What this machine can do: packages, toolchains, devices, and how to get what is missing."""

import importlib.metadata
import platform
import shutil
from typing import Any

from probelab.errors import UsageError
from probelab.paths import lab_root, ledger_path

CORE = ("numpy", "xarray", "h5netcdf", "h5py", "typer", "rich", "matplotlib")


def packages() -> dict[str, str]:
    """Each package `doctor` looks for: "core", or how to get it (each vendor's own)."""
    from probelab.vendors import VENDORS

    return {**dict.fromkeys(CORE, "core"),
            **{name: hint for vendor in VENDORS.values() for name, hint in vendor.packages}}


def backend_presence() -> dict[str, dict[str, Any]]:
    """Whether each backend's driver and bindings are installed (the vendor table says
    what to look for), opening no device and importing no backend (`list` stays instant;
    `doctor` and `sweep` open the device and say what it is)."""
    from probelab.vendors import SIM, SIMULATED, VENDORS

    status = {}
    for driver in (d for vendor in VENDORS.values() for d in vendor.drivers):
        has_driver, has_bindings = driver.found(), driver.installed()
        parts = [f"{driver.what} {'found' if has_driver else 'not found'}",
                 f"{driver.package} {'installed' if has_bindings else 'not installed'}"]
        status[driver.backend] = {"found": has_driver and has_bindings, "detail":
                                  ", ".join(parts) + " (`probelab doctor` opens the device)"}
    status[SIM] = {"found": True, "detail": SIMULATED}
    return status


def _check(name: str, ok: bool, detail: str) -> dict[str, Any]:
    return {"name": name, "ok": ok, "detail": detail}


def backend_status() -> dict[str, dict[str, Any]]:
    """Each backend's own `status()`: the device it opens, or why it cannot (sim last)."""
    from probelab import backends
    from probelab.vendors import SIM

    order = sorted(backends.names(), key=lambda name: name == SIM)
    return {name: backends.module(name).status() for name in order}


def _toolchains() -> list[dict[str, Any]]:
    """Each vendor's rows: its toolchains and runtimes, and the files of their tools."""
    from probelab.vendors import VENDORS

    return [_check(*row) for vendor in VENDORS.values()
            if (machine := vendor.machine_module()) is not None for row in machine.rows()]


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
    for package, hint in packages().items():
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
