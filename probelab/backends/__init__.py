"""Backends: one small file each (ops_cuda, ops_sim, ...) behind one protocol.

compile(kernel, target) -> CodeObject     (toolchain work; no device needed for cuda)
run(code, kernel, launch, poison) -> outputs   (poisoned, guarded, every call checked)
device() -> DeviceInfo, describe() -> provenance
"""

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from probelab.codeobject import CodeObject
from probelab.errors import UsageError
from probelab.evidence import Isa
from probelab.probe import Kernel, Launch, Probe

BACKENDS = {"cuda": "probelab.backends.ops_cuda", "hip": "probelab.backends.ops_hip",
            "sim": "probelab.backends.ops_sim"}


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    target: str  # ISA id, e.g. sm_90, gfx1201
    details: Mapping[str, str] = field(default_factory=dict)


class Backend(Protocol):
    name: str
    vendor: str
    simulated: bool
    isa: Isa | None  # None: no instruction evidence (simulated)

    def device(self) -> DeviceInfo: ...
    def compile(self, kernel: Kernel, target: str) -> CodeObject: ...
    def run(self, code: CodeObject, kernel: Kernel, launch: Launch,
            poison: int) -> dict[str, np.ndarray]: ...
    def describe(self) -> dict[str, str]: ...


def load_backend(name: str, probe: Probe, target: str | None = None) -> Backend:
    """The backend `name`, set up to run `probe`; `target` is for simulated devices only."""
    if name not in BACKENDS:
        raise UsageError(f"unknown backend {name!r} (known: {', '.join(BACKENDS)})")
    return importlib.import_module(BACKENDS[name]).make(probe, target)
