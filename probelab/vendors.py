"""The vendors the lab knows, in one table: what a vendor's targets are called, how its
disassembly is read (the parser and the register/load tables the evidence gate uses), which
toolchain builds its code objects offline, and which backends run its devices. A new vendor
is its target list (probelab.targets, kept light for `probelab list`), a row here, a
toolchain module and a backend file (`backends/ops_<name>.py`).
"""

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from probelab import targets
from probelab.disasm import Instruction, parse_gcn, parse_sass
from probelab.evidence import GCN, SASS, Isa

SIMULATED = "simulated devices; data are never evidence"  # the sim backend, every vendor's


@dataclass(frozen=True)
class Driver:
    """What a backend needs installed, checked without opening a device (`probelab list`)."""

    backend: str  # probelab/backends/ops_<backend>.py
    path: str  # exists where the vendor's driver is installed
    bindings: str  # the Python module the backend drives the device through
    what: str  # how `doctor` names the driver
    package: str  # the pip package of the bindings


@dataclass(frozen=True)
class Vendor:
    name: str
    targets: tuple[str, ...]  # every ISA target id it has (probelab.targets)
    pattern: str  # fnmatch pattern of its target names, e.g. "sm_*"
    isa: Isa  # registers, loads and writes as the evidence gate reads them
    parse: Callable[[str], dict[str, list[Instruction]]]  # disassembly text -> functions
    toolchain: str  # probelab.toolchains.<toolchain>: build(kernel, target), describe()
    drivers: tuple[Driver, ...]  # the backends that run its devices
    sim_targets: tuple[str, ...]  # what a simulated device is by default, in order

    def tools(self) -> ModuleType:
        """Its toolchain module, imported when first used (NVRTC and clang are slow)."""
        return importlib.import_module(f"probelab.toolchains.{self.toolchain}")


VENDORS = {
    "nvidia": Vendor("nvidia", targets.NVIDIA, "sm_*", SASS, parse_sass, "nvidia",
                     (Driver("cuda", "/proc/driver/nvidia/version", "cuda.bindings",
                             "the NVIDIA driver", "cuda-bindings"),), ("sm_90",)),
    "amd": Vendor("amd", targets.AMD, "gfx*", GCN, parse_gcn, "amdgpu",
                  (Driver("hip", "/dev/kfd", "hip", "ROCm's /dev/kfd", "hip-python"),),
                  ("gfx1201", "gfx942")),
}
assert set(VENDORS) == set(targets.VENDORS)  # the target lists and this table agree


def of(target: str) -> Vendor:
    """The vendor of a known target id (UsageError, naming the known ones, otherwise)."""
    return VENDORS[targets.vendor(target)]
