"""Simulated device: runs a probe's own model of the instruction instead of hardware.

It exists to test probe designs (can sweep + decode recover a hidden law?). Everything it
produces is marked simulated and is never counted as evidence.
"""

import numpy as np

from probelab import vendors
from probelab.backends import DeviceInfo
from probelab.backends.guards import framed, unframe
from probelab.codeobject import CodeObject
from probelab.errors import IntegrityError, UsageError
from probelab.limits import DEFAULT_TIMEOUT_S
from probelab.probe import Kernel, Launch, Probe, supports
from probelab.vendors import SIMULATED, VENDORS


class SimBackend:
    name = "sim"
    simulated = True
    isa = None

    def __init__(self, probe: Probe, target: str) -> None:
        self.probe, self.target = probe, target
        self.timeout_s = DEFAULT_TIMEOUT_S  # the model returns or raises; nothing to wait for
        self.vendor = vendors.vendor(target)
        self.tensor_maps: list[dict[str, object]] = []  # as declared: nothing encodes them

    def device(self) -> DeviceInfo:
        return DeviceInfo(f"simulated {self.target}", self.target, {"simulated": "true"})

    def compile(self, kernel: Kernel, target: str) -> CodeObject:
        source = kernel.source_text().encode()
        return CodeObject(target, source, {}, {"compiler": "none (simulated device)"})

    def run(self, code: CodeObject, kernel: Kernel, launch: Launch,
            poison: int) -> dict[str, np.ndarray]:
        # The model writes every cell, so poison cannot survive; guards are framed for parity.
        # Tensor maps go to the model as declared (its law places their boxes): no driver
        # encodes them, so their record has no address and no bytes.
        maps = {"tensor_maps": launch.tensor_maps} if launch.tensor_maps else {}
        for name, spec in launch.tensor_maps.items():
            if (entry := {"param": name, **spec.record()}) not in self.tensor_maps:
                self.tensor_maps.append(entry)
        results = self.probe.simulate(kernel, launch.inputs, **maps)
        outputs = {}
        for name, words in launch.outputs.items():
            produced = np.asarray(results[name], np.uint32).reshape(-1)
            if produced.size != words:
                raise IntegrityError(f"model of {kernel.name} gave {produced.size} words for "
                                     f"{name!r}, the launch expects {words}")
            outputs[name] = unframe(name, framed(produced))
        return outputs

    def describe(self) -> dict[str, str]:
        return {"compiler": "none (simulated device)",
                "model": f"{self.probe.id} v{self.probe.version} simulate()"}


def make(probe: Probe, target: str | None) -> SimBackend:
    if target is None:
        defaults = (t for vendor in VENDORS.values() for t in vendor.sim_targets)
        target = next((t for t in defaults if supports(probe, t)), None)
        if target is None:
            raise UsageError(f"--target is needed to simulate {probe.id}")
    return SimBackend(probe, target)


def status() -> dict[str, object]:
    return {"usable": True, "detail": SIMULATED}
