"""Backends: one small file each (ops_sim here; ops_cuda, ops_hip in their vendors' folders)
behind one protocol, found by name: `--backend NAME` is `probelab/backends/ops_NAME.py` or a
vendor folder's own `ops_NAME.py`, which exposes `make(probe, target)` (the constructor) and
`status()` (what `probelab doctor` says of it).

compile(kernel, target) -> CodeObject     (toolchain work; no device needed for cuda)
run(code, kernel, launch, poison) -> outputs   (poisoned, guarded, every call checked)
device() -> DeviceInfo, describe() -> provenance
"""

import importlib
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import numpy as np

from probelab import vendors
from probelab.codeobject import CodeObject
from probelab.errors import KernelTimeout, LabError, UsageError
from probelab.isa import Isa
from probelab.limits import DEFAULT_TIMEOUT_S
from probelab.probe import Kernel, Launch, Probe

__all__ = ["DEFAULT_TIMEOUT_S", "Backend", "DeviceInfo", "KernelTimeout", "load_backend",
           "module", "names", "prewarm", "settle", "wait_for"]


def _modules() -> dict[str, str]:
    """Each backend's module: its ops_<name>.py here, or in a vendor's folder (so that a
    third party's vendor, devices and all, is one folder)."""
    found = {p.stem[4:]: f"{__name__}.{p.stem}" for p in Path(__file__).parent.glob("ops_*.py")}
    for vendor in vendors.VENDORS:
        for p in vendors.folder(vendor).glob("ops_*.py"):
            found.setdefault(p.stem[4:], f"{vendors.__name__}.{vendor}.{p.stem}")
    return dict(sorted(found.items()))


def names() -> list[str]:
    """Every backend this lab has: its ops_<name>.py files."""
    return list(_modules())


def module(name: str) -> ModuleType:
    """Backend `name`'s module (UsageError, naming the known ones, for any other)."""
    if name not in (found := _modules()):
        raise UsageError(f"unknown backend {name!r} (known: {', '.join(found)})")
    return importlib.import_module(found[name])


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    target: str  # ISA id, e.g. sm_90, gfx1201
    details: Mapping[str, str] = field(default_factory=dict)


def wait_for(done: Callable[[], bool], timeout_s: float, what: str) -> None:
    """Poll `done()` until it is True; after `timeout_s` raise KernelTimeout naming `what`.
    Polling starts fast and backs off to 10 ms, so a quick kernel costs no sleep at all."""
    deadline, pause = time.monotonic() + timeout_s, 0.0
    while not done():
        if time.monotonic() > deadline:
            raise KernelTimeout(f"{what} did not return within {timeout_s:g} s: it hangs (or "
                                "needs --timeout raised); the device stays busy until this "
                                "process exits, and nothing was written")
        time.sleep(pause)
        pause = min(0.01, pause * 2 or 1e-5)


def device_uuid(raw: bytes) -> str:
    """A device's 16-byte UUID as the usual text (8-4-4-4-12 hex digits)."""
    return str(uuid.UUID(bytes=bytes(raw)[:16]))


def device_status(open_device: Callable[[], DeviceInfo], describe: Callable[[DeviceInfo], str]
                  ) -> dict[str, object]:
    """A GPU backend's `status()`: the device it opens, described, or why it cannot."""
    try:
        dev = open_device()
    except LabError as exc:
        return {"usable": False, "detail": str(exc)}
    return {"usable": True, "detail": f"{dev.name} ({dev.target}), {describe(dev)}"}


class Backend(Protocol):
    name: str
    vendor: str
    simulated: bool
    isa: Isa | None  # None: no instruction evidence (simulated)
    timeout_s: float  # per launch (wait_for); a launch past it raises KernelTimeout
    # every distinct tensor map its runs passed (Launch.tensor_maps): the encoding's
    # arguments, and where a driver encoded it the device address and its 128 bytes in hex
    # (a backend that runs no launch with maps, e.g. a third party's, may leave it out)
    tensor_maps: Sequence[Mapping[str, object]]

    def device(self) -> DeviceInfo: ...
    def compile(self, kernel: Kernel, target: str) -> CodeObject: ...
    def run(self, code: CodeObject, kernel: Kernel, launch: Launch,
            poison: int) -> dict[str, np.ndarray]: ...
    def describe(self) -> dict[str, Any]: ...


def prewarm(name: str) -> None:
    """Let backend `name` start slow device setup early, if its module offers `prewarm`
    (called before a sweep's imports, which it then overlaps)."""
    if name in names():
        getattr(module(name), "prewarm", lambda: None)()


def settle() -> None:
    """Wait for whatever early setup a loaded backend started (`settle` in its module), so
    that a process may leave without tearing anything down mid-way."""
    loaded = (sys.modules.get(found) for found in _modules().values())
    for found in filter(None, loaded):
        getattr(found, "settle", lambda: None)()


def load_backend(name: str, probe: Probe, target: str | None = None) -> Backend:
    """The backend `name`, set up to run `probe`; `target` is for simulated devices only."""
    return module(name).make(probe, target)
