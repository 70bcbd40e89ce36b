"""`probelab asm`: build a probe's kernels for a target offline and show what the code
object holds — disassembly, instruction histogram, and the evidence gate's findings."""

from dataclasses import dataclass, field
from typing import Any

from probelab.codeobject import CodeObject
from probelab.disasm import histogram, without_padding
from probelab.errors import Unavailable, UsageError
from probelab.evidence import gate
from probelab.isa import Isa
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
    toolchain: str = ""  # the toolchain that built it (clang-22, nvrtc-13.5)


def inspect_kernel(kernel: Kernel, code: CodeObject, isa: Isa) -> KernelReport:
    code_fn = code.functions.get(kernel.symbol)
    name = code.toolchain.get("name", "")
    if code_fn is None:
        return KernelReport(kernel.name, kernel.symbol, "failed",
                            f"{kernel.symbol} is not in the code object", toolchain=name)
    report = gate(kernel.name, kernel.evidence, code_fn, isa)
    return KernelReport(kernel.name, kernel.symbol, "ok" if report.ok else "failed",
                        "; ".join(report.problems), code.sha256, histogram(code_fn),
                        report.to_dict(), [i.text for i in without_padding(code_fn)], name)


def inspect(probe_id: str, target: str, toolchain: str | None = None) -> list[KernelReport]:
    """Every kernel of the probe for `target`, built by each toolchain `toolchain` names
    (a name, "all", or None: the default)."""
    probe = get_probe(probe_id)
    vendor = of(target)  # a made-up target is refused before the probe judges it
    require_target(probe, target)
    kernels = probe.kernels(vendor.name)
    if not kernels:
        raise UsageError(f"{probe.id} has no {vendor.name} kernels")
    tools, reports = vendor.tools(), []
    for tc in tools.select(toolchain):
        if toolchain == tools.ALL:  # under all, a toolchain that lacks the target is said
            try:
                tools.check_target(target, tc)
            except Unavailable as exc:
                reports += [KernelReport(k.name, k.symbol, "skipped", str(exc),
                                         toolchain=tc.name)
                            for k in kernels if k.for_target(target)]
                continue
        for kernel in kernels:
            if not kernel.for_target(target):
                reports.append(KernelReport(kernel.name, kernel.symbol, "skipped",
                                            f"{kernel.name} is for "
                                            f"{', '.join(kernel.targets or ())}",
                                            toolchain=tc.name))
                continue
            try:
                code = tools.build(kernel, target, toolchain=tc)
            except Unavailable as exc:
                if kernel.headers is not None:  # a header set only a device compiler has
                    reports.append(KernelReport(kernel.name, kernel.symbol, "skipped",
                                                str(exc), toolchain=tc.name))
                    continue
                raise
            reports.append(inspect_kernel(kernel, code, vendor.isa))
    return reports
