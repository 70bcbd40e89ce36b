"""f8f6f4-operand-width: how wide the A and B register tuples of the runtime-format matrix
instructions come out of the compiler, against what the format says the hardware reads
(seeds/003). A static probe of the toolchain: no device.

gfx1250's v_wmma_{,scale_,scale16_}f32_16x16x128_f8f6f4 and gfx950's
v_mfma_scale_f32_{16x16x128,32x32x64}_f8f6f4 read A and B as FP8/BF8, FP6/BF6 or FP4 (format
0..4, per operand); the intrinsics take them through a vector that may be wider than the
format needs. Each case is driven through one route and one instruction selector:
- route 0: IR written here with the source vector exact or at the builtin's width, llc -O0;
- route 1: the HIP builtin (widest vector), clang -O0 -emit-llvm, then llc -O0;
- route 2: the HIP builtin through the full -O2 pipeline (clang -O2 -emit-llvm, llc -O2);
each with SelectionDAG (-global-isel=0) or GlobalISel with no fallback (-global-isel
-global-isel-abort=1). What is read per case, all from the compiler's own output: the
vector widths in the IR that reaches llc, the tuple widths llc prints, whether llvm-mc
re-assembles the text (and its message), and the tuple widths in the object's disassembly.

The cases of one route and selector are compiled as one module, one kernel per case; a
module a tool refuses is split in halves until each failing case stands alone, so a case
that fails records its own diagnostic.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from probelab.isa import Instruction
from probelab.probe import BuiltCase, Evidence, Kernel
from probelab.vendors.amd.disasm import gcn_instruction, parse_gcn
from probelab.vendors.amd.isa import GCN

if TYPE_CHECKING:
    import xarray as xr

HERE = Path(__file__).parent
SOURCE = HERE / "f8f6f4.hip"
WMMA, MFMA = 0, 1
FAMILY_TARGET = {WMMA: "gfx1250", MFMA: "gfx950"}
FORMATS = ("FP8", "BF8", "FP6", "BF6", "FP4")
# Registers per source for each format, as the instructions define them (seeds/003's table;
# LLVM AMDGPUBaseInfo wmmaScaleF8F6F4FormatToNumRegs / mfmaScaleF8F6F4FormatToNumRegs). Used
# only to write route 0's exact-width IR: every observable is read off the compiler.
EXACT = {WMMA: (16, 16, 12, 12, 8), MFMA: (8, 8, 6, 6, 4)}
ROUTES = ("ir-llc-O0", "clang-O0-llc", "clang-O2")
SELECTORS = ("SelectionDAG", "GlobalISel")
SELECTOR_FLAGS = (("-global-isel=0",), ("-global-isel", "-global-isel-abort=1"))
TRIPLE = "amdgcn-amd-amdhsa"
HIP_FLAGS = ("-x", "hip", "-nogpuinc", "-nogpulib", "--cuda-device-only", "-S", "-emit-llvm",
             "-fuse-cuid=none")
CALLS = (r"s_swappc_b64", r"s_call_b64")  # an unknown intrinsic lowered to a call
OBSERVABLES = ("builds", "count", "attempted", "a_ir", "b_ir", "a_text", "b_text",
               "reassembles", "a_obj", "b_obj")
TEXTS = ("instruction", "object_instruction", "assembler", "diagnostic")


@dataclass(frozen=True)
class Intrinsic:
    family: int
    name: str  # the LLVM intrinsic
    macro: str  # its kernel in f8f6f4.hip
    mnemonic: str
    result: str  # the IR type of C and D
    widest: int  # registers of the builtin's A/B vector type
    scale: str  # "" or the IR type of its scale operands

    def call(self, a: int, b: int, fa: int, fb: int) -> tuple[str, str]:
        """(declaration, call) of this intrinsic with A and B as <a x i32> and <b x i32>."""
        va, vb, c = f"<{a} x i32>", f"<{b} x i32>", self.result
        if self.family == MFMA:
            name = f"{self.name}.v{a}i32.v{b}i32"
            params = (f"{va}, {vb}, {c}, i32 immarg, i32 immarg, i32 immarg, i32, "
                      "i32 immarg, i32")
            args = (f"{va} %a, {vb} %b, {c} %c, i32 {fa}, i32 {fb}, i32 0, i32 %sa, i32 0, "
                    "i32 %sb")
        else:
            name = f"{self.name}.v8f32.v{a}i32.v{b}i32"
            params = f"i32 immarg, {va}, i32 immarg, {vb}, i16 immarg, {c}"
            args = f"i32 {fa}, {va} %a, i32 {fb}, {vb} %b, i16 0, {c} %c"
            if self.scale:
                s = self.scale
                params += (f", i32 immarg, i32 immarg, {s}, i32 immarg, i32 immarg, {s}, "
                           "i1 immarg, i1 immarg")
                args += f", i32 0, i32 0, {s} %sa, i32 0, i32 0, {s} %sb, i1 0, i1 0"
        return f"declare {c} @{name}({params})", f"call {c} @{name}({args})"


INTRINSICS = (
    Intrinsic(WMMA, "llvm.amdgcn.wmma.f32.16x16x128.f8f6f4", "WMMA",
              "v_wmma_f32_16x16x128_f8f6f4", "<8 x float>", 16, ""),
    Intrinsic(WMMA, "llvm.amdgcn.wmma.scale.f32.16x16x128.f8f6f4", "WMMA_SCALE",
              "v_wmma_scale_f32_16x16x128_f8f6f4", "<8 x float>", 16, "i32"),
    Intrinsic(WMMA, "llvm.amdgcn.wmma.scale16.f32.16x16x128.f8f6f4", "WMMA_SCALE16",
              "v_wmma_scale16_f32_16x16x128_f8f6f4", "<8 x float>", 16, "i64"),
    Intrinsic(MFMA, "llvm.amdgcn.mfma.scale.f32.16x16x128.f8f6f4", "MFMA_16",
              "v_mfma_scale_f32_16x16x128_f8f6f4", "<4 x float>", 8, "i32"),
    Intrinsic(MFMA, "llvm.amdgcn.mfma.scale.f32.32x32x64.f8f6f4", "MFMA_32",
              "v_mfma_scale_f32_32x32x64_f8f6f4", "<16 x float>", 8, "i32"),
)


def evidence(intrinsic: Intrinsic) -> Evidence:
    """Exactly one of the instruction, and no call where it should be."""
    return Evidence(intrinsic.mnemonic, forbidden=CALLS, count=1)


def _cases() -> list[dict[str, int]]:
    cases = []
    for index, intr in enumerate(INTRINSICS):
        exact = EXACT[intr.family]
        for fa in range(5):
            for fb in range(5):
                for selector in range(2):
                    widths = [(exact[fa], exact[fb])]  # route 0: exact, then the builtin's
                    if (exact[fa], exact[fb]) != (intr.widest, intr.widest):
                        widths.append((intr.widest, intr.widest))
                    routes = [(0, a, b) for a, b in widths] + \
                        [(r, intr.widest, intr.widest) for r in (1, 2)]
                    for route, a, b in routes:
                        cases.append(dict(family=intr.family, intrinsic=index, a_fmt=fa,
                                          b_fmt=fb, route=route, selector=selector,
                                          a_src=a, b_src=b,
                                          width=int((a, b) != (exact[fa], exact[fb]))))
    return cases


class BatchFailed(Exception):
    """A tool refused a module: its first error line."""


def _run(command: Sequence[object], what: str) -> subprocess.CompletedProcess:
    run = subprocess.run([str(c) for c in command], capture_output=True, text=True,
                         timeout=600)
    if run.returncode != 0:
        line = next((x for x in run.stderr.splitlines() if "error" in x.lower()),
                    run.stderr.strip().splitlines()[0] if run.stderr.strip() else "")
        line = re.sub(r"^/\S+?: ", "", line.strip())  # no temporary paths in the data
        raise BatchFailed(f"{what}: {line}"[:300])
    return run


def ir_module(cases: list[dict[str, int]], numbers: list[int]) -> str:
    """Route 0's module: one kernel per case, A and B at the case's source widths."""
    declared, bodies = {}, []
    for n, case in zip(numbers, cases, strict=True):
        intr = INTRINSICS[case["intrinsic"]]
        decl, call = intr.call(case["a_src"], case["b_src"], case["a_fmt"], case["b_fmt"])
        declared[decl] = None
        scale = intr.scale or "i32"
        bodies.append(
            f"define amdgpu_kernel void @case_{n}(ptr addrspace(1) %pa, ptr addrspace(1) %pb, "
            f"ptr addrspace(1) %pc, ptr addrspace(1) %ps) {{\n"
            f"  %a = load <{case['a_src']} x i32>, ptr addrspace(1) %pa\n"
            f"  %b = load <{case['b_src']} x i32>, ptr addrspace(1) %pb\n"
            f"  %c = load {intr.result}, ptr addrspace(1) %pc\n"
            f"  %sa = load {scale}, ptr addrspace(1) %ps\n"
            f"  %ps1 = getelementptr {scale}, ptr addrspace(1) %ps, i32 1\n"
            f"  %sb = load {scale}, ptr addrspace(1) %ps1\n"
            f"  %d = {call}\n"
            f"  store {intr.result} %d, ptr addrspace(1) %pc\n"
            f"  ret void\n}}\n")
    return (f'target triple = "{TRIPLE}"\n\n' + "\n".join(bodies) + "\n"
            + "\n".join(declared) + "\n")


def hip_module(cases: list[dict[str, int]], numbers: list[int]) -> str:
    """Routes 1 and 2's module: f8f6f4.hip with one kernel per case (its builtin's macro)."""
    return SOURCE.read_text() + "\n" + "\n".join(
        f"{INTRINSICS[cases[n]['intrinsic']].macro}({n}, {cases[n]['a_fmt']}, "
        f"{cases[n]['b_fmt']})" for n in numbers) + "\n"


def _ir_widths(ir: str) -> dict[int, tuple[int, int]]:
    """Per kernel, the widths of A and B in the call of the matrix intrinsic that reaches
    llc (A is the first i32 vector argument, B the second, in both families)."""
    widths = {}
    for m in re.finditer(r"^define [^\n]*@case_(\d+)\(.*?^}$", ir, re.S | re.M):
        call = re.search(r"call [^\n]*@llvm\.amdgcn\.(?:wmma|mfma)[\w.]*\(([^\n]*)\)",
                         m.group(0))
        vectors = re.findall(r"<(\d+) x i32>", call.group(1)) if call else []
        if len(vectors) >= 2:
            widths[int(m.group(1))] = (int(vectors[0]), int(vectors[1]))
    return widths


def _text_functions(asm: str) -> dict[int, tuple[int, int]]:
    """Per kernel, its line range (1-based, inclusive) in llc's assembly text."""
    lines, ranges, start, current = asm.splitlines(), {}, 0, None
    for number, line in enumerate(lines, 1):
        if m := re.match(r"^case_(\d+):", line):
            current, start = int(m.group(1)), number
        elif current is not None and re.match(r"^\.Lfunc_end\d+:", line):
            ranges[current] = (start, number)
            current = None
    return ranges


def _assembler_errors(run: subprocess.CompletedProcess, ranges: dict[int, tuple[int, int]]
                      ) -> tuple[list[tuple[int, str]], str]:
    """llvm-mc's errors as (line, message) inside some kernel's lines, and the first error
    no kernel's line names ("" if none): an error without a line, one outside every kernel,
    a crash, or a failure that printed no error."""
    errors, unclear = [], ""
    for line in run.stderr.splitlines():
        if m := re.match(r"^.*?:(\d+):\d+: error: (.*)$", line):
            at = int(m.group(1))
            if any(a <= at <= b for a, b in ranges.values()):
                errors.append((at, m.group(2).strip()))
                continue
            unclear = unclear or f"line {at}, outside every kernel: {m.group(2).strip()}"
        elif "error" in line.lower():
            unclear = unclear or line.strip()
    if run.returncode != 0 and not errors and not unclear:
        unclear = f"exit {run.returncode} with no error named"
    if run.returncode < 0:
        unclear = unclear or f"killed by signal {-run.returncode}"
    return errors, unclear[:300]


def _widths(insn: Instruction) -> tuple[int, int]:
    return len(GCN.registers(insn.operands[1])), len(GCN.registers(insn.operands[2]))


class F8F6F4OperandWidth:
    id = "f8f6f4-operand-width"
    version = "1"
    summary = ("A/B register tuple widths of the f8f6f4 WMMA/MFMA as llc prints them, as "
               "llvm-mc accepts them and as the object holds them (gfx950, gfx1250)")
    targets = ("gfx950", "gfx1250")
    static = True
    observables = MappingProxyType({name: ("case",) for name in OBSERVABLES})
    plots = MappingProxyType({})
    texts = TEXTS
    tools = ("llc", "llvm-mc")
    source = SOURCE

    def kernels(self, vendor: str) -> list[Kernel]:
        """`probelab asm`: each builtin once, FP4 A and FP6 B (both narrower than the
        builtin's vector), through the ordinary -O2 build."""
        if vendor != "amd":
            return []
        return [Kernel(f"{intr.macro.lower()}_fp4_fp6", "case_0", SOURCE, "amd",
                       evidence(intr), defines={"INTRINSIC": i, "FA": 4, "FB": 2},
                       targets=(FAMILY_TARGET[intr.family],))
                for i, intr in enumerate(INTRINSICS)]

    def stimulus(self) -> xr.Dataset:
        import xarray as xr

        cases = _cases()
        coords = {"case": ("case", np.arange(len(cases), dtype=np.uint32))}
        for key in cases[0]:
            coords[key] = ("case", np.array([c[key] for c in cases], np.uint32))
        coords["builtin"] = ("case", np.array([INTRINSICS[c["intrinsic"]].mnemonic
                                               for c in cases]))
        ds = xr.Dataset(coords=coords)
        ds["route"].attrs = {"flag_values": np.arange(3, dtype=np.uint32),
                             "flag_meanings": " ".join(r.replace("-", "_") for r in ROUTES)}
        ds["selector"].attrs = {"flag_values": np.arange(2, dtype=np.uint32),
                                "flag_meanings": " ".join(SELECTORS)}
        ds["a_fmt"].attrs = ds["b_fmt"].attrs = {
            "flag_values": np.arange(5, dtype=np.uint32), "flag_meanings": " ".join(FORMATS)}
        return ds

    def measure(self, grid: xr.Dataset, target: str, toolchain,
                step: Callable[[str], None]) -> list[BuiltCase]:
        """Every case of the target's family through its route and selector; the other
        family's cases are recorded as not attempted (attempted = 0)."""
        family = next(f for f, t in FAMILY_TARGET.items() if t == target)
        columns = {k: grid[k].values.tolist() for k in _cases()[0]}  # the grid, as read
        cases = [{k: int(v[i]) for k, v in columns.items()} for i in range(grid.sizes["case"])]
        built: dict[int, BuiltCase] = {}
        for i, case in enumerate(cases):
            if case["family"] != family:
                intr = INTRINSICS[case["intrinsic"]]
                built[i] = BuiltCase({"attempted": 0}, {"diagnostic": (
                    f"not attempted: {intr.mnemonic} is a {FAMILY_TARGET[intr.family]} "
                    "instruction")}, evidence(intr))
        for route in range(len(ROUTES)):
            for selector in range(len(SELECTORS)):
                numbers = [i for i, c in enumerate(cases) if c["family"] == family
                           and c["route"] == route and c["selector"] == selector]
                step(f"{toolchain.name}, {target}: {ROUTES[route]} with {SELECTORS[selector]}, "
                     f"{len(numbers)} cases")
                built |= self._split(cases, numbers, target, toolchain)
        return [built[i] for i in range(len(cases))]

    def _split(self, cases, numbers: list[int], target: str, toolchain
               ) -> dict[int, BuiltCase]:
        """The cases built as one module; a module a tool refuses, in halves."""
        if not numbers:
            return {}
        try:
            return self._module(cases, numbers, target, toolchain)
        except BatchFailed as exc:
            if len(numbers) == 1:
                intr = INTRINSICS[cases[numbers[0]]["intrinsic"]]
                return {numbers[0]: BuiltCase({"attempted": 1}, {"diagnostic": str(exc)},
                                              evidence(intr))}
            half = len(numbers) // 2
            return (self._split(cases, numbers[:half], target, toolchain)
                    | self._split(cases, numbers[half:], target, toolchain))

    def _module(self, cases, numbers: list[int], target: str, toolchain
                ) -> dict[int, BuiltCase]:
        route, selector = cases[numbers[0]]["route"], cases[numbers[0]]["selector"]
        llc_opt = "-O2" if route == 2 else "-O0"
        with tempfile.TemporaryDirectory() as tmp:
            ll, asm, obj = Path(tmp) / "m.ll", Path(tmp) / "m.s", Path(tmp) / "m.o"
            if route == 0:
                ll.write_text(ir_module([cases[n] for n in numbers], numbers))
            else:
                hip = Path(tmp) / "m.hip"
                hip.write_text(hip_module(cases, numbers))
                _run([toolchain.path, *HIP_FLAGS, llc_opt, f"--offload-arch={target}", hip,
                      "-o", ll], "clang")
            llc = [toolchain.tool("llc"), llc_opt, f"-mtriple={TRIPLE}", f"-mcpu={target}",
                   *SELECTOR_FLAGS[selector], ll]
            _run([*llc, "-o", asm], "llc")
            _run([*llc, "-filetype=obj", "-o", obj], "llc -filetype=obj")
            assembled = subprocess.run(
                [str(toolchain.tool("llvm-mc")), f"-triple={TRIPLE}", f"-mcpu={target}",
                 "-filetype=obj", str(asm), "-o", str(Path(tmp) / "mc.o")],
                capture_output=True, text=True, timeout=600)
            dump = _run([toolchain.objdump, "-d", f"--mcpu={target}", obj], "llvm-objdump")
            ir, text, blob = ll.read_text(), asm.read_text(), obj.read_bytes()
        ranges, widths = _text_functions(text), _ir_widths(ir)
        objects, lines = parse_gcn(dump.stdout), text.splitlines()
        for n in numbers:  # each case must be found in every output, or none is read
            for what, found in (("IR call", widths), ("text", ranges)):
                if n not in found:
                    raise BatchFailed(f"no {what} of case_{n} in the compiler's output")
            if not objects.get(f"case_{n}"):
                raise BatchFailed(f"no case_{n} in the object's disassembly")
        errors, unclear = _assembler_errors(assembled, ranges)
        if unclear and len(numbers) > 1:  # an error no case's line names: split to find it
            raise BatchFailed(f"llvm-mc: {unclear}")
        sha = hashlib.sha256(blob).hexdigest()
        out = {}
        for n in numbers:
            intr = INTRINSICS[cases[n]["intrinsic"]]
            first, last = ranges[n]
            printed = [gcn_instruction(0, line.strip().split("//")[0].strip())
                       for line in lines[first:last] if line.strip().startswith(intr.mnemonic)]
            found = [x for x in objects.get(f"case_{n}", []) if x.mnemonic == intr.mnemonic]
            said = [message for at, message in errors if first <= at <= last]
            said += [unclear] if unclear else []  # one case alone: the message is its own
            values = {"attempted": 1, "a_ir": widths.get(n, (0, 0))[0],
                      "b_ir": widths.get(n, (0, 0))[1], "reassembles": int(not said)}
            texts = {"assembler": "; ".join(said)}
            if printed:
                values["a_text"], values["b_text"] = _widths(printed[0])
                texts["instruction"] = printed[0].text
            if found:
                values["a_obj"], values["b_obj"] = _widths(found[0])
                texts["object_instruction"] = found[0].text
            out[n] = BuiltCase(values, texts, evidence(intr), objects.get(f"case_{n}", []),
                               sha)
        return out


PROBE = F8F6F4OperandWidth()
