"""`probelab asm`: build a probe's kernels for a target offline and show what the code
object holds — disassembly, instruction histogram, and the evidence gate's findings."""

from dataclasses import dataclass, field
from typing import Any

from probelab.codeobject import CodeObject
from probelab.disasm import histogram, without_padding
from probelab.errors import Unavailable, UsageError
from probelab.evidence import Isa, gate
from probelab.probe import Kernel, get_probe, require_target
from probelab.vendors import of


@dataclass
class KernelReport:
    kernel: str
    symbol: str
    status: str  # "ok", "failed" (evidence), "skipped" (cannot be built offline)
    detail: str = ""
    code_object_sha256: str = ""
    histogram: dict[str, int] = field(default_factory=dict)
    evidence: dict[str, Any] = field(default_factory=dict)
    disassembly: list[str] = field(default_factory=list)


def toolchain(target: str) -> tuple[str, Isa, Any]:
    """(vendor, evidence ISA, build function) for a known target id."""
    vendor = of(target)
    return vendor.name, vendor.isa, vendor.tools().build


def inspect_kernel(kernel: Kernel, code: CodeObject, isa: Isa) -> KernelReport:
    code_fn = code.functions.get(kernel.symbol)
    if code_fn is None:
        return KernelReport(kernel.name, kernel.symbol, "failed",
                            f"{kernel.symbol} is not in the code object")
    report = gate(kernel.name, kernel.evidence, code_fn, isa)
    return KernelReport(kernel.name, kernel.symbol, "ok" if report.ok else "failed",
                        "; ".join(report.problems), code.sha256, histogram(code_fn),
                        report.to_dict(), [i.text for i in without_padding(code_fn)])


def inspect(probe_id: str, target: str) -> list[KernelReport]:
    probe = get_probe(probe_id)
    of(target)  # a made-up target is refused before the probe judges it
    require_target(probe, target)
    vendor, isa, build = toolchain(target)
    kernels = probe.kernels(vendor)
    if not kernels:
        raise UsageError(f"{probe.id} has no {vendor} kernels")
    reports = []
    for kernel in kernels:
        if not kernel.for_target(target):
            reports.append(KernelReport(kernel.name, kernel.symbol, "skipped",
                                        f"{kernel.name} is for {', '.join(kernel.targets or ())}"))
            continue
        try:
            code = build(kernel, target)
        except Unavailable as exc:
            if kernel.headers == "hip":
                reports.append(KernelReport(kernel.name, kernel.symbol, "skipped", str(exc)))
                continue
            raise
        reports.append(inspect_kernel(kernel, code, isa))
    return reports
