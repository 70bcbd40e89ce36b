"""The vendors the lab knows, each one folder found by name: `probelab/vendors/<name>/`,
and any vendor folder under a folder named in PROBELAB_VENDORS (os.pathsep between
folders), as a third party adds one. A folder's `__init__.py` declares `VENDOR`, its row:
its targets, how its disassembly is read (parser, register and load tables), the toolchain
module that builds offline (`Toolchain`, probelab.toolchains), the drivers and backends
(its own `ops_<backend>.py`) that run its devices, and what `doctor` and the fleet ask of
the machine (its `machine` module), and what a kit renders into a kernel source for it
(uint32_t as its compilers take it, its name in prose). Everything the core and the kits know
of vendors is derived here: a target's vendor, the backends that measure, the fleet's
resources, the default device; a probe folder (probes/) names its vendor and targets.

Kept light: `probelab list` reads the table (its targets) without importing a toolchain.
"""

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TypeVar

from probelab.depends import files_digest
from probelab.errors import Unavailable, UsageError
from probelab.isa import Instruction, Isa
from probelab.text import closest, either

ENV = "PROBELAB_VENDORS"  # folders of third-party vendor folders, os.pathsep between
HERE = Path(__file__).resolve().parent
SIMULATED = "simulated devices; data are never evidence"  # the sim backend, every vendor's
SIM, STATIC, TOOLCHAIN = "sim", "static", "toolchain"  # the backends of no one vendor


@dataclass(frozen=True)
class Driver:
    """What a backend needs installed, checked without opening a device (`probelab list`)."""

    backend: str  # ops_<backend>.py, in the vendor's folder
    path: str  # exists where the vendor's driver is installed
    bindings: str  # the Python module the backend drives the device through
    what: str  # how `doctor` names the driver
    package: str  # the pip package of the bindings
    device: str = ""  # how `sweep --help` names the device it runs, e.g. "AMD GPU, ROCm"

    def found(self) -> bool:
        return Path(self.path).exists()

    def installed(self) -> bool:
        try:
            return importlib.util.find_spec(self.bindings) is not None
        except (ImportError, ValueError):  # a dotted name whose parent is not there
            return False


@dataclass(frozen=True)
class Vendor:
    name: str  # its folder's name
    targets: tuple[str, ...]  # every ISA target id it has
    pattern: str  # fnmatch pattern of its target names, e.g. "sm_*"
    isa: Isa | None  # registers, loads and writes as the evidence gate reads them
    parse: Callable[[str], dict[str, list[Instruction]]]  # disassembly text -> functions
    toolchain: str = ""  # the module that builds offline (a `Toolchain`); "": none
    drivers: tuple[Driver, ...] = ()  # the backends that run its devices
    sim_targets: tuple[str, ...] = ()  # what a simulated device is by default, in order
    features: tuple[str, ...] = ()  # what a target id may add to a target, gfx942:xnack-
    known: str = ""  # its targets, as a usage error names them
    examples: tuple[str, ...] = ()  # targets `--help` names
    padding: tuple[str, ...] = ()  # alignment filler mnemonics, not the kernel's work
    packages: tuple[tuple[str, str], ...] = ()  # (pip package, how to get it): `doctor`
    machine: str = ""  # module: rows() for `doctor`, resources(patterns) for the fleet
    rank: int = 100  # its place in every table (and in choosing the default device)
    compiler_name: Callable[[str, str], str | None] | None = None  # (version, origin) ->
    # the name of one of its toolchains, for datasets from before toolchains had names
    title: str = ""  # how prose names it, e.g. a rendered kernel source's opening comment
    # the line a kernel source declares uint32_t with: its compilers assume no standard headers
    uint32_typedef: str = ""

    def tools(self) -> ModuleType:
        """Its toolchain module, imported when first used (NVRTC and clang are slow)."""
        if not self.toolchain:
            raise Unavailable(f"no toolchain builds {self.name} code objects offline")
        return importlib.import_module(self.toolchain)

    def machine_module(self) -> ModuleType | None:
        return importlib.import_module(self.machine) if self.machine else None


def folders() -> list[Path]:
    """Where vendor folders are looked for: this package's, then PROBELAB_VENDORS's."""
    return [HERE, *(Path(p) for p in os.environ.get(ENV, "").split(os.pathsep) if p)]


def _load() -> dict[str, Vendor]:
    where = folders()
    __path__[:] = [str(p) for p in where]  # the package's own: vendor folders import by name
    found: dict[str, Vendor] = {}
    for folder in where:
        if not folder.is_dir():
            raise UsageError(f"{ENV}: {folder} is not a folder (of vendor folders)")
        for sub in sorted(folder.iterdir()):
            if not sub.name.isidentifier() or not (sub / "__init__.py").is_file():
                continue
            if sub.name in found:
                raise UsageError(f"vendor {sub.name!r} is found twice (the second in "
                                 f"{folder}): a vendor is one folder")
            vendor = getattr(importlib.import_module(f"{__name__}.{sub.name}"), "VENDOR", None)
            if not isinstance(vendor, Vendor) or vendor.name != sub.name:
                raise UsageError(f"vendor folder {sub}: its __init__.py must declare VENDOR, "
                                 f"a probelab.vendors.Vendor named {sub.name!r}")
            found[sub.name] = vendor
    owner: dict[str, str] = {}
    runs: dict[str, str] = {name: "no vendor's" for name in (SIM, STATIC, TOOLCHAIN)}
    for vendor in found.values():
        for target in vendor.targets:
            if owner.setdefault(target, vendor.name) != vendor.name:
                raise UsageError(f"target {target!r} is both {owner[target]}'s and "
                                 f"{vendor.name}'s: a target has one vendor")
        for driver in vendor.drivers:  # a name taken would make what it runs "measured"
            if runs.setdefault(driver.backend, vendor.name) != vendor.name:
                raise UsageError(f"vendor {vendor.name}: backend {driver.backend!r} is "
                                 f"{runs[driver.backend]}: a backend belongs to one vendor")
    return dict(sorted(found.items(), key=lambda item: (item[1].rank, item[0])))


_table: dict[str, Vendor] = {}


def table() -> dict[str, Vendor]:
    """Every vendor, in rank order (loaded once per process; `reload` looks again)."""
    if not _table:
        _table.update(_load())
    return _table


def reload() -> None:
    """Look for vendor folders again (PROBELAB_VENDORS changed): third-party vendor modules
    are forgotten, so a folder of the same name elsewhere is read afresh."""
    _table.clear()
    for name, module in list(sys.modules.items()):
        if name.startswith(f"{__name__}.") and not Path(
                getattr(module, "__file__", None) or HERE).resolve().is_relative_to(HERE):
            del sys.modules[name]


V = TypeVar("V")


class _View(Mapping[str, V]):
    """A live mapping over the table: what a vendor name maps to."""

    def __init__(self, value: Callable[[Vendor], V]) -> None:
        self._value = value

    def __getitem__(self, name: str) -> V:
        return self._value(table()[name])

    def __iter__(self) -> Iterator[str]:
        return iter(table())

    def __len__(self) -> int:
        return len(table())


VENDORS: Mapping[str, Vendor] = _View(lambda vendor: vendor)  # name -> its row
TARGETS: Mapping[str, tuple[str, ...]] = _View(lambda vendor: vendor.targets)


def folder(name: str) -> Path:
    """Vendor `name`'s folder (its backend files may live there too)."""
    table()
    return Path(sys.modules[f"{__name__}.{name}"].__file__ or HERE).parent


def unpinned() -> list[dict[str, str]]:
    """Every vendor folder this process loaded from outside the lab's own package (a
    PROBELAB_VENDORS folder: its `__init__.py` ran here, whichever backend measures): its
    folder and the sha256 of its files. A measurement records them, and with them it never
    counts (dataset.contradictions): no commit of the lab pins that code."""
    found = []
    for name in table():
        where = folder(name)
        if where.is_relative_to(HERE):
            continue
        found.append({"vendor": name, "folder": str(where),
                      "files_sha256": files_digest(where)})
    return found


def vendor(target: str) -> str:
    """The vendor of a known target id ("nvidia" for sm_90, gfx942:xnack- is "amd"'s);
    UsageError, naming the known ones, otherwise."""
    base, *features = target.split(":")
    allowed = tuple(dict.fromkeys(f for v in table().values() for f in v.features))
    if bad := [f for f in features if f not in allowed]:
        raise UsageError(f"target {target!r}: unknown features {bad} (a target id takes "
                         f"{', '.join(allowed)})")
    for name, row in table().items():
        if base in row.targets:
            return name
    near = closest(base.lower(), tuple(t for v in table().values() for t in v.targets))
    hint = f"; did you mean {either(near)}?" if near else ""
    known = "; ".join(v.known or f"{v.name}'s {', '.join(v.targets[:4])}"
                      for v in table().values())
    raise UsageError(f"unknown target {target!r}{hint} (known: {known})")


def of(target: str) -> Vendor:
    """The vendor of a known target id (UsageError, naming the known ones, otherwise)."""
    return table()[vendor(target)]


def device_backends() -> tuple[str, ...]:
    """The backends that run a device, in rank order."""
    return tuple(d.backend for v in table().values() for d in v.drivers)


def measuring_backends() -> frozenset[str]:
    """What can take a measurement: a device backend, or a toolchain (static probes)."""
    return frozenset({*device_backends(), TOOLCHAIN})


class _Measuring(AbstractSet[str]):
    """`measuring_backends()`, live: what the table says now (a folder may come later)."""

    def __contains__(self, name: object) -> bool:
        return name in measuring_backends()

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(measuring_backends()))

    def __len__(self) -> int:
        return len(measuring_backends())

    def __repr__(self) -> str:
        return f"MEASURING_BACKENDS{sorted(measuring_backends())}"


MEASURING_BACKENDS: AbstractSet[str] = _Measuring()


def fleet_backends() -> tuple[str, ...]:
    """What a fleet node may serve: each device backend, simulated devices and toolchains."""
    return (*device_backends(), SIM, STATIC)


def measuring(target: str) -> str | None:
    """The backend that measures a target: its vendor's first (None: it has no device)."""
    drivers = of(target).drivers
    return drivers[0].backend if drivers else None


def default_backend() -> str:
    """The backend a sweep runs without --backend: the first, in rank order, whose driver
    and bindings this machine has; where none has, the first of the table (its error then
    says what to install)."""
    drivers = [d for v in table().values() for d in v.drivers]
    for driver in drivers:
        if driver.found() and driver.installed():
            return driver.backend
    return drivers[0].backend if drivers else SIM


def examples() -> list[str]:
    """Targets the help names, by vendor name."""
    return [t for name in sorted(table()) for t in table()[name].examples]
