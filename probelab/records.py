"""The lab's JSON records, typed: what a dataset's provenance holds and what a check's
verdict says. Both stay JSON objects on disk (a dataset's one `provenance` attribute, a
verdict file beside it) and plain dicts in memory, so what is hashed and compared is the
document itself; these declarations say which keys exist and what each holds, for every
module that writes or reads one. A reader of a stored record still checks a value's type
before trusting it (a record can be old, or edited: the content hash says which)."""

import re
from pathlib import Path
from typing import Any, TypedDict


class KernelRecord(TypedDict, total=False):
    """One kernel of a sweep: what was built from which source, and what the gate saw."""

    symbol: str
    source: str  # lab-relative path of the kernel source
    source_sha256: str
    code_object_sha256: str | list[str]  # a static sweep: one per case ("" where none)
    cache_hit: bool
    built_for: str  # the code object's target: the device's, or its arch-specific variant
    histogram: dict[str, int]  # mnemonic -> count in the kernel's disassembly
    evidence: dict[str, Any] | str  # the gate's report, or why none applies (simulated)


class ToolRecord(TypedDict):
    """One tool a dataset was made with, as its file is (probelab.toolchains.identity)."""

    path: str  # the real file, links resolved
    sha256: str  # of its bytes
    package: str | None  # "clang-22 1:22.1.8-1~deb12u1", "nvidia-cuda-nvrtc 13.5.37"
    package_ok: bool | None  # its package's own bytes; False: edited, or from no package
    # where dpkg could say; None: nothing here could say


class Provenance(TypedDict, total=False):
    """A dataset's provenance, as `probelab.measurement.save_sweep` writes it."""

    probe: str
    probe_version: str
    probelab_version: str
    git_head: str | None  # the commit measured from
    git_dirty: bool | None
    utc: str  # ISO 8601 with its offset
    grid_sha256: str
    content_sha256: str  # over the values and every other key (probelab.dataset)
    code_tree: dict[str, str]  # lab-relative path -> git blob id of the code that ran
    observables: dict[str, list[str]]  # observable -> the grid dims a prediction spans
    retired: dict[str, str]  # observable an earlier version had -> why it is gone
    probe_info: dict[str, Any]  # the probe's facts (probelab.probe.ProbeInfo.record)
    plots: list[str]  # the plot kinds the probe offered
    command: list[str]
    host: dict[str, str]
    backend: str  # cuda, hip, sim, or toolchain (a static probe)
    device: str
    target: str
    device_details: dict[str, str]
    toolchain: dict[str, Any]  # names and paths; "tools": {tool: ToolRecord} (older: none)
    kernels: dict[str, KernelRecord]
    static: bool
    repeats: int
    repeats_identical: bool
    nondeterministic: dict[str, dict[str, int]]  # kernel -> declared output -> cells varied
    poisons: list[str]
    simulated: bool
    blind_pairs: list[list[str]]  # sealed rivals the stimulus could not separate
    thin_pairs: list[list[str | int]]  # [a, b, cells, floor]: separated on too few cells
    tensor_maps: list[dict[str, Any]]  # each tensor map passed: arguments (and address, bytes)
    run: dict[str, Any]  # what sets this run apart: nonce, pid, started_utc, seconds


class Score(TypedDict):
    matches: int
    cells: int
    first_mismatches: list[dict[str, Any]]


class KernelVerdict(TypedDict):
    in_claim: bool
    status: str  # CONFIRMED or REFUTED, on this kernel's cells
    via: str | None  # the scoring that matched every cell
    scores: dict[str, Score]  # scoring (literal, a translation) -> its score


class Verdict(TypedDict, total=False):
    """What `probelab.check.check` returns and a verdict file records
    (probelab.notary.verdicts.judgement writes its verdict and reasons)."""

    verdict: str  # CONFIRMED, REFUTED, TAMPERED, POST-HOC or NOT-EVIDENCE
    reasons: list[str]
    hypothesis: dict[str, Any]  # id, probe, path, claim, kernels, hashes, seal commit, ...
    dataset: dict[str, Any]  # path, device, target, git_head, utc, simulated, hashes
    kernels: dict[str, KernelVerdict]
    separation: dict[str, int]  # a refutation: refuting cells of all claimed cells
    blind_to: list[str]  # sealed rivals the sweep recorded this stimulus unable to separate
    thin_to: list[str]  # sealed rivals it separates on fewer cells than their floor


def toolchain_name(prov: Provenance) -> str | None:
    """The toolchain a static dataset was built by ("clang-19"): as recorded, or, in a
    dataset from before toolchains had names, read off its compiler's version line the
    way a toolchain is named."""
    described = prov.get("toolchain")
    if not prov.get("static") or not isinstance(described, dict):
        return None
    if isinstance(described.get("name"), str):
        return described["name"]
    from probelab.vendors import VENDORS  # each vendor reads its own compilers' version lines

    version, origin = str(described.get("compiler", "")), str(described.get("origin"))
    return next((name for vendor in VENDORS.values() if vendor.compiler_name
                 and (name := vendor.compiler_name(version, origin))), None)


def toolchain_label(path: Path) -> str | None:
    """The toolchain a dataset's file name names (TIME.TOOLCHAIN.nc, TIME-2.TOOLCHAIN.nc),
    or None for a name without one."""
    found = re.fullmatch(r"\d{8}T\d{6}Z(?:-\d+)?\.(.+)\.nc", path.name)
    return found.group(1) if found else None
