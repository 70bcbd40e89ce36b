"""What a probe is, and how the core finds probes without importing any by name.

A probe is a folder `probes/<name>/` whose `probe.py` defines `PROBE`, an object with the
attributes of `Probe` below (or `PROBES`, several that share the folder's kernels, e.g. one
per element type). The core only ever talks to those objects.
"""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

from probelab import vendors
from probelab.errors import UsageError
from probelab.paths import probes_dir, shown
from probelab.probe_index import Entry
from probelab.text import closest, either

if TYPE_CHECKING:  # numpy and xarray are imported where used: discovery needs neither
    import numpy as np
    import xarray as xr

    from probelab.isa import Instruction


@dataclass(frozen=True)
class Evidence:
    """What the code object must show for a kernel to count as exercising its instruction.

    `instruction` is a regex on the disassembled mnemonic, or None: no instruction is claimed
    (e.g. a library function such as HIP's __byte_perm), only the histogram is recorded;
    `forbidden` lists near relatives that must not appear (checked either way); `operands`
    says, per source operand of the instruction in disassembly order, how it must be fed:
    "unmodified" (straight from a memory load), "from_memory" (a load reaches it, possibly
    through other instructions, which are recorded) or "any".
    """

    instruction: str | None
    forbidden: tuple[str, ...] = ()
    operands: tuple[str, ...] = ()
    count: int | None = 1  # exact number of matches per kernel; None: at least one
    # per source operand, how many 32-bit registers it spans where the disassembly names only
    # the first (SASS: `DMMA.16x8x16 R8, R16, ...` reads R16..R31 for an 8-double A)
    spans: tuple[int, ...] = ()
    # when the target has no unit for the instruction: how the compiler realises it (the
    # `instruction` pattern and `count` then describe that realisation, and the gate proves
    # it from the disassembly); recorded with the evidence in every dataset
    lowered: str | None = None
    # what a lowering must also show, each (mnemonic regex, "before" or "after" the last
    # match, exact count or None for at least one): e.g. the unpacking before the MMA and
    # C's add after it, so that `lowered`'s sentence is proven, not just the MMA's count
    companions: tuple[tuple[str, str, int | None], ...] = ()
    # the exact modifiers each match must carry (AMD: e.g. ("neg_lo:[1,1,0]",) for signed
    # integer operands, () for none), or None: not checked. A sign flag or clamp the
    # builtin call got wrong changes what the instruction computes.
    modifiers: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        for pattern, place, count in self.companions:
            if place not in ("before", "after") or (count is not None and count < 1):
                raise ValueError(f"companion {pattern!r}: place must be 'before' or 'after' "
                                 f"and count None or positive, not {place!r}, {count!r}")


@dataclass(frozen=True)
class Kernel:
    name: str  # the variant's name in datasets (coordinate `kernel`)
    symbol: str  # entry point in the code object
    source: Path
    vendor: str  # "nvidia" or "amd"
    evidence: Evidence
    options: Mapping[str, object] = field(default_factory=dict)  # compiler options
    headers: str | None = None  # "hip": needs HIP's headers, so only ROCm's hiprtc builds it
    defines: Mapping[str, int] = field(default_factory=dict)  # -D NAME=value when compiling
    targets: tuple[str, ...] | None = None  # fnmatch patterns; None: every target of the probe
    # the source's text where the probe renders it from its declarations (`Rendered`): no
    # file is kept at `source`, the lab path it is shown and recorded under; None: the file
    text: str | None = None

    def for_target(self, target: str) -> bool:
        return self.targets is None or any(fnmatch.fnmatchcase(target, t) for t in self.targets)

    def source_text(self) -> str:
        return self.source.read_text() if self.text is None else self.text

    def source_bytes(self) -> bytes:
        """What is compiled, as a dataset's kernel record hashes it (`source_sha256`)."""
        return self.source.read_bytes() if self.text is None else self.text.encode()


@dataclass(frozen=True)
class Rendered:
    """A kernel source a kit renders from a probe's declarations each time it is built (one
    template per kit; the declarations give shapes, instruction and operand plumbing), so
    near-copies of one kernel are never kept as files. `path` names it where a file would
    stand: a dataset records that path with the sha256 of the rendered bytes, and
    `probelab source PROBE` prints or writes the exact text a build compiles."""

    path: Path
    render: Callable[[], str]


# CUtensorMapDataType's element types a map may declare, and their sizes in bytes
TENSOR_MAP_TYPES = {"UINT8": 1, "UINT16": 2, "UINT32": 4, "INT32": 4, "UINT64": 8, "INT64": 8}
SWIZZLE_SPANS = (0, 32, 64, 128)  # CU_TENSOR_MAP_SWIZZLE_NONE, _32B, _64B, _128B


@dataclass(frozen=True)
class TensorMap:
    """A tiled tensor map (CUtensorMap, cuTensorMapEncodeTiled) over one input buffer, which
    a backend with a tensor memory accelerator encodes from the buffer's device address and
    passes by value (`const __grid_constant__ CUtensorMap`). Sizes as the driver takes them:
    `dims` and `box` in elements, innermost first; `strides` in bytes, of dims 1 on. Refused
    here, before any device, where the CUDA driver API's cuTensorMapEncodeTiled reference
    says the driver refuses (rank 1-5, strides multiples of 16, box 1-256 with a whole
    number of 16-byte units innermost, element strides 1-8, a swizzled box's inner bytes
    within the swizzle span)."""

    buffer: str  # the input buffer whose payload's first byte is the global address
    dtype: str  # a key of TENSOR_MAP_TYPES: CU_TENSOR_MAP_DATA_TYPE_<dtype>
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    element_strides: tuple[int, ...]
    swizzle: int = 0  # the span in bytes, one of SWIZZLE_SPANS
    interleave: str = "NONE"  # CU_TENSOR_MAP_INTERLEAVE_<...>: only NONE is declared here
    l2_promotion: str = "NONE"  # CU_TENSOR_MAP_L2_PROMOTION_<...>: NONE, L2_64B/128B/256B
    oob_fill: str = "NONE"  # CU_TENSOR_MAP_FLOAT_OOB_FILL_<...>: NONE for integer types

    def __post_init__(self) -> None:
        rank, size = len(self.dims), TENSOR_MAP_TYPES.get(self.dtype)
        problems = [why for bad, why in (
            (size is None, f"dtype one of {sorted(TENSOR_MAP_TYPES)}"),
            (not 1 <= rank <= 5, "rank 1 to 5"),
            (len(self.strides) != rank - 1 or any(s % 16 or not 0 < s < 2**40
                                                  for s in self.strides),
             "rank - 1 strides, each a positive multiple of 16 below 2**40"),
            (len(self.box) != rank or any(not 1 <= b <= 256 for b in self.box),
             "one box size per dim, 1 to 256"),
            (size is not None and self.box and self.box[0] * size % 16,
             "a box whose inner bytes are a multiple of 16"),
            (len(self.element_strides) != rank or any(not 1 <= e <= 8
                                                      for e in self.element_strides),
             "one element stride per dim, 1 to 8"),
            (self.swizzle not in SWIZZLE_SPANS, f"swizzle one of {SWIZZLE_SPANS} bytes"),
            (self.swizzle and size is not None and self.box and
             self.box[0] * size > self.swizzle, "a swizzled box's inner bytes within the span"),
            (self.interleave != "NONE", "interleave NONE"),
            (self.l2_promotion not in ("NONE", "L2_64B", "L2_128B", "L2_256B"),
             "L2 promotion NONE, L2_64B, L2_128B or L2_256B"),
            (self.oob_fill != "NONE", "OOB fill NONE (the types here are integers)"))
            if bad]
        if problems:
            raise ValueError(f"tensor map over {self.buffer!r} needs {'; '.join(problems)}")

    @property
    def element_bytes(self) -> int:
        return TENSOR_MAP_TYPES[self.dtype]

    @property
    def extent(self) -> int:
        """The bytes of its buffer the map spans from the global address: one past its last
        element's last byte, whatever the strides (a stride below the rows it steps over, or
        strides out of order, reach farther than the outermost stride times its dim)."""
        steps = (self.element_bytes, *self.strides)
        return self.element_bytes + sum((d - 1) * s for d, s in zip(self.dims, steps,
                                                                     strict=True))

    def record(self) -> dict[str, object]:
        """The encoding's arguments, as provenance records them."""
        return {"buffer": self.buffer, "dtype": self.dtype, "rank": len(self.dims),
                "dims": list(self.dims), "strides": list(self.strides), "box": list(self.box),
                "element_strides": list(self.element_strides), "interleave": self.interleave,
                "swizzle": self.swizzle, "l2_promotion": self.l2_promotion,
                "oob_fill": self.oob_fill}


@dataclass(frozen=True)
class Launch:
    """One launch covering the whole stimulus grid.

    Kernels take the inputs in order, then the outputs, then one tensor map per entry of
    `tensor_maps`, in its order: `k(const u32* in..., u32* out..., const __grid_constant__
    CUtensorMap map...)`; a backend without tensor maps refuses a launch that declares any.
    """

    inputs: Mapping[str, np.ndarray]
    outputs: Mapping[str, int]  # name -> number of uint32 words
    threads: int
    block: int = 256
    tensor_maps: Mapping[str, TensorMap] = field(default_factory=dict)  # parameter -> map

    def __post_init__(self) -> None:
        for name, spec in self.tensor_maps.items():
            if spec.buffer not in self.inputs or spec.extent > self.inputs[spec.buffer].nbytes:
                raise ValueError(f"tensor map {name!r} spans {spec.extent} bytes of input "
                                 f"{spec.buffer!r}, which the launch must give in full")


class Probe(Protocol):
    """Optional attributes, read by `info` alone (the core reads a probe's declarations
    through its `ProbeInfo`): `excluded` ({target pattern: why the probe cannot run
    there}), `nondeterministic` (output buffer names whose values may legitimately differ
    between repeats; the sweep records how many cells did), `retired` ({observable an
    earlier version had: why it is gone}; hypotheses sealed for it are kept and marked,
    never scored), `problems_variable` (the dataset variable in which the decode lists what
    it could not read; the sweep says how many) and `declared_bytes` (f(stimulus) -> the
    bytes its dataset will declare decoded: the sweep refuses one too large to save before
    any kernel runs)."""

    id: str
    version: str
    summary: str
    targets: tuple[str, ...]  # fnmatch patterns of ISA targets, e.g. "sm_*", "gfx1201"
    # data variable -> the grid dims a prediction is evaluated over. Without "kernel" one
    # prediction serves every kernel; with "kernel" first, the stimulus carries kernel
    # coordinates (e.g. K) and the prediction may differ per kernel.
    observables: Mapping[str, tuple[str, ...]]
    # kind -> f(ds, tables=, scoring=, about=) -> {name: figure or table}; `tables` and
    # `about` (the hypothesis, its verdict) come with `plot --prereg`, None without
    plots: Mapping[str, Callable[..., object]]

    def kernels(self, vendor: str) -> list[Kernel]: ...
    def stimulus(self) -> xr.Dataset: ...
    def launch(self, stimulus: xr.Dataset) -> Launch: ...
    def assemble(
        self, stimulus: xr.Dataset, outputs: Mapping[str, Mapping[str, np.ndarray]]
    ) -> xr.Dataset: ...
    # a launch that declares tensor maps also gets them: simulate(kernel, inputs, tensor_maps=)
    def simulate(
        self, kernel: Kernel, inputs: Mapping[str, np.ndarray]
    ) -> dict[str, np.ndarray]: ...


class StaticBase(Protocol):
    """What every probe measured on the compiler's output rather than a device has
    (`static = True`): its grid has one dimension, `case`."""

    id: str
    version: str
    summary: str
    targets: tuple[str, ...]
    static: bool
    observables: Mapping[str, tuple[str, ...]]
    plots: Mapping[str, Callable[..., object]]

    def kernels(self, vendor: str) -> list[Kernel]: ...
    def stimulus(self) -> xr.Dataset: ...


class StaticProbe(StaticBase, Protocol):
    """A static probe whose cases are compiled on their own (`variant` gives the kernel with
    the case's -D defines); `decode` turns the instruction under test into the case's
    observables."""

    def variant(self, case: Mapping[str, int]) -> Kernel: ...
    def decode(self, instruction: Instruction) -> dict[str, int]: ...


@dataclass(frozen=True)
class BuiltCase:
    """One case of a static pipeline probe, as its own pipeline built it: the observables it
    read off the compiler's output, its text outputs, and the object's disassembly of the
    case's function, which the core gates like any kernel's (None: no object was built)."""

    values: Mapping[str, int]
    texts: Mapping[str, str]
    evidence: Evidence
    function: list[Instruction] | None = None
    object_sha256: str = ""


class StaticPipeline(StaticBase, Protocol):
    """A static probe that drives the compiler's tools itself (`measure` instead of
    `variant`/`decode`): e.g. llc at -O0 with either instruction selector, then llvm-mc on
    its text. `texts` names its text outputs, `tools` the LLVM tools it runs (recorded with
    their paths), `source` the file its kernels come from. The core measures the grid twice
    and refuses a difference."""

    texts: tuple[str, ...]
    tools: tuple[str, ...]
    source: Path

    def measure(self, grid: xr.Dataset, target: str, toolchain: object,
                step: Callable[[str], None]) -> list[BuiltCase]: ...


DEVICE, STATIC_KERNEL, STATIC_PIPELINE = "device", "static kernel", "static pipeline"
INSTRUMENTS = (DEVICE, STATIC_KERNEL, STATIC_PIPELINE)
INFO_KEY = "probe_info"  # the provenance key a dataset records its probe's facts under
# the fewest cells every pair of a lane-id, sparse or numerics probe's sealed rivals must part
# on before it is measured (issue 38), and the fewest new cells a law read from data is
# confirmed on (notary.freshness): one flipped cell must never swap two verdicts
SEPARATION_FLOOR = 32


@dataclass(frozen=True)
class ProbeInfo:
    """What the core knows of a probe besides its code: what measures it (`instrument`: a
    device, or the compiler, one build per case or the probe's own pipeline), its
    observables (name -> the grid dims a prediction spans; `per_kernel`: those with
    `kernel` first, whose prediction may differ per kernel), those an earlier version had
    (`retired`: name -> why gone), the targets it cannot run on (`excluded`: pattern ->
    why), the outputs that may vary between repeats (`nondeterministic`) and the variable
    its decode lists what it could not read in (`problems`), and what its stimulus is made
    of beyond the grid's coordinates (`stimulus`: seeds, conventions, descriptors, the JSON
    object its kit declares as `stimulus_facts`), so that its inputs can be rebuilt from a
    dataset alone. `info(probe)` derives it; every sweep records it in its dataset
    (`record()`, provenance key `probe_info`), so a check reads it from the dataset
    (`recorded_info`) and never imports the probe."""

    id: str
    version: str
    instrument: str
    observables: Mapping[str, tuple[str, ...]]
    retired: Mapping[str, str] = field(default_factory=dict)
    excluded: Mapping[str, str] = field(default_factory=dict)
    nondeterministic: frozenset[str] = frozenset()
    problems: str | None = None
    stimulus: Mapping[str, object] = field(default_factory=dict)
    # the fewest cells every pair of its sealed rivals must part on before a measurement
    # (`separation_floor`; 1: blindness alone); a gate on the probe's stimulus, judged with
    # the probe present, so no dataset records it
    floor: int = 1

    def __post_init__(self) -> None:
        from types import MappingProxyType

        if self.instrument not in INSTRUMENTS:
            raise UsageError(f"{self.id}: instrument {self.instrument!r} is not one of "
                             f"{', '.join(INSTRUMENTS)}")
        for name, value in (("observables", {k: tuple(map(str, v)) for k, v in
                                             self.observables.items()}),
                            ("retired", dict(self.retired)), ("excluded", dict(self.excluded)),
                            ("stimulus", json.loads(json.dumps(self.stimulus)))):
            object.__setattr__(self, name, MappingProxyType(value))
        object.__setattr__(self, "nondeterministic", frozenset(self.nondeterministic))
        if live := sorted(set(self.retired) & set(self.observables)):
            raise UsageError(f"{self.id} declares {live} retired but still observes them: an "
                             "observable is retired only by a new probe version that drops it")

    @property
    def static(self) -> bool:
        return self.instrument != DEVICE

    @property
    def per_kernel(self) -> frozenset[str]:
        return frozenset(n for n, dims in self.observables.items() if dims[:1] == ("kernel",))

    def excluded_why(self, target: str) -> str | None:
        return next((why for pattern, why in self.excluded.items()
                     if fnmatch.fnmatchcase(target, pattern)), None)

    def record(self) -> dict[str, object]:
        """The facts as a dataset records them (JSON; id and version are the provenance's
        own `probe` and `probe_version`)."""
        return {"instrument": self.instrument,
                "observables": {n: list(d) for n, d in self.observables.items()},
                "per_kernel": sorted(self.per_kernel), "retired": dict(self.retired),
                "excluded": dict(self.excluded),
                "nondeterministic": sorted(self.nondeterministic), "problems": self.problems,
                "stimulus": dict(self.stimulus)}


def info(probe: Probe | StaticBase) -> ProbeInfo:
    """A probe's facts, read off its declarations: the one place the core asks a probe
    for its optional attributes."""
    instrument = DEVICE if not getattr(probe, "static", False) else \
        STATIC_PIPELINE if hasattr(probe, "measure") else STATIC_KERNEL
    return ProbeInfo(probe.id, probe.version, instrument, dict(probe.observables),
                     dict(getattr(probe, "retired", {})), dict(getattr(probe, "excluded", {})),
                     frozenset(getattr(probe, "nondeterministic", ())),
                     getattr(probe, "problems_variable", None),
                     getattr(probe, "stimulus_facts", {}),
                     int(getattr(probe, "separation_floor", 1)))


def recorded_info(prov: Mapping[str, object]) -> ProbeInfo | None:
    """The facts a dataset recorded of its probe (`ProbeInfo.record`), or None where it
    records none (datasets made before they did: their checks ask today's probe). Facts
    recorded in a form this code does not write raise UsageError: a dataset is judged
    from its own record or not at all (one recorded before `stimulus` was records none)."""
    doc = prov.get(INFO_KEY)
    if doc is None:
        return None
    try:
        if not (isinstance(doc, dict) and set(doc) - {"stimulus"} == {
                "instrument", "observables", "per_kernel", "retired", "excluded",
                "nondeterministic", "problems"} and isinstance(doc.get("stimulus", {}), dict)):
            raise TypeError("not the form a sweep writes")
        observables = {str(k): tuple(map(str, v)) for k, v in doc["observables"].items()
                       if isinstance(v, list)}
        found = ProbeInfo(str(prov.get("probe")), str(prov.get("probe_version")),
                          doc["instrument"], observables,
                          {str(k): str(v) for k, v in doc["retired"].items()},
                          {str(k): str(v) for k, v in doc["excluded"].items()},
                          frozenset(map(str, doc["nondeterministic"])), doc["problems"],
                          doc.get("stimulus", {}))
        if len(observables) != len(doc["observables"]) or \
                sorted(found.per_kernel) != doc["per_kernel"] or \
                not isinstance(found.problems, str | None):
            raise TypeError("its parts do not agree")
    except (TypeError, AttributeError, ValueError) as exc:
        raise UsageError(f"the dataset's recorded probe facts ({INFO_KEY}) cannot be read: "
                         f"{exc}") from None
    return found


def stack_kernels(stimulus: xr.Dataset, outputs: Mapping[str, Mapping[str, np.ndarray]],
                  output: str, dims: tuple[str, ...]) -> tuple[xr.Dataset, np.ndarray]:
    """The grid with a `kernel` axis, and one output of every kernel shaped (kernel, *dims)."""
    import numpy as np

    names = list(outputs)
    shape = tuple(stimulus.sizes[d] for d in dims)
    values = np.stack([np.asarray(outputs[k][output], np.uint32).reshape(shape) for k in names])
    return stimulus.assign_coords(kernel=("kernel", np.array(names))), values


def supports(probe: Probe, target: str) -> bool:
    return any(fnmatch.fnmatchcase(target, pattern) for pattern in probe.targets)


def require_target(probe: Probe, target: str) -> None:
    """Refuse a target the probe does not cover, saying why when the probe knows (its
    optional `excluded`: {pattern: reason}, e.g. a GPU without the instruction)."""
    if supports(probe, target):
        return
    why = info(probe).excluded_why(target)
    raise UsageError(f"{probe.id} does not target {target}"
                     + (f": {why}" if why else f" (targets: {', '.join(probe.targets)})"))


def load_sibling(path: Path) -> ModuleType:
    """Import a probe's own module by path (probes are folders, not installed packages)."""
    name = f"probelab_probe_{path.parent.name}_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    # run from the source bytes, never from __pycache__: the code a dataset records
    # (probelab.codetree) is then the code that ran, even beside stale bytecode
    exec(compile(path.read_bytes(), str(path), "exec"), module.__dict__)
    return module


def _load(folder: Path) -> tuple[Probe, ...]:
    module = load_sibling(folder / "probe.py")
    return tuple(module.PROBES) if hasattr(module, "PROBES") else (module.PROBE,)


def kernel_sources(probe: Probe | StaticBase) -> dict[Path, bytes]:
    """Every kernel source a build of `probe` compiles, under the lab path a dataset records
    it by: a file's bytes, or the text the probe renders from its declarations."""
    return {k.source: k.source_bytes() for v in vendors.TARGETS for k in probe.kernels(v)}


def _entries(folder: Path, probes: tuple[Probe, ...]) -> list[Entry]:
    return [Entry(p.id, p.version, p.summary, tuple(p.targets),
                  {v: [k.name for k in ks] for v in vendors.TARGETS if (ks := p.kernels(v))},
                  folder.name) for p in probes]


@dataclass
class Catalog:
    """The probes under one folder. `entries` come from the on-disk index where a folder's
    code is unchanged (probelab.probe_index), so `list` imports no probe; `get` imports only
    the folder that defines the id; `probes` imports them all."""

    base: Path
    broken: dict[str, str] = field(default_factory=dict)  # folder -> why it failed to load
    _loaded: dict[str, tuple[Probe, ...]] = field(default_factory=dict)
    _entries: list[Entry] | None = None
    _found: dict[str, Probe] = field(default_factory=dict)  # ids `get` found: asked often

    def folders(self) -> list[Path]:
        return sorted(p for p in self.base.glob("*") if (p / "probe.py").is_file())

    def _load(self, folder: Path) -> tuple[Probe, ...]:
        if folder.name not in self._loaded:
            try:
                self._loaded[folder.name] = _load(folder)
            except Exception as exc:  # a broken probe must not take the others down
                self.broken[folder.name] = f"{type(exc).__name__}: {exc}"
                self._loaded[folder.name] = ()
        return self._loaded[folder.name]

    def entries(self) -> list[Entry]:
        from probelab import probe_index

        if self._entries is None:
            self._entries = []
            for folder in self.folders():
                key = probe_index.key(folder)
                found = probe_index.read(key)
                if found is None:
                    probes = self._load(folder)
                    found = _entries(folder, probes)
                    if folder.name not in self.broken:
                        probe_index.write(key, found)
                self._entries += found
        return self._entries

    @property
    def probes(self) -> dict[str, Probe]:
        return {p.id: p for folder in self.folders() for p in self._load(folder)}

    def get(self, probe_id: str) -> Probe | None:
        """The probe `probe_id`, importing only its folder where the index names it (the
        import itself decides: a stale or edited index only costs a full scan)."""
        if probe_id in self._found:
            return self._found[probe_id]
        folders = [f.name for f in self.folders()]
        named = [e.folder for e in self.entries() if e.id == probe_id and e.folder in folders]
        for folder in dict.fromkeys([*named, *folders]):
            for probe in self._load(self.base / folder):
                if probe.id == probe_id:
                    self._found[probe_id] = probe
                    return probe
        return None


@cache
def catalog(root: Path | None = None) -> Catalog:
    return Catalog(root or probes_dir())


def get_probe(probe_id: str) -> Probe:
    found = catalog()
    if (probe := found.get(probe_id)) is not None:
        return probe
    known = sorted({e.id for e in found.entries()})
    near = [repr(k) for k in closest(probe_id.replace("_", "-"), known)] if known else []
    hint = f"; did you mean {either(near)}?" if near else ""
    raise UsageError(f"unknown probe {probe_id!r}{hint} (`probelab list` shows all "
                     f"{len(known)})" if known else f"unknown probe {probe_id!r}: this lab "
                     f"has no probes (none under {shown(found.base)})")
