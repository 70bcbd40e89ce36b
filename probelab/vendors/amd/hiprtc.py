"""hiprtc: ROCm's runtime compiler, for kernels that need HIP's headers (which the offline
clang route does not carry). It runs where ROCm is, on the device machine; the code object
it returns is disassembled by the offline toolchain like any other, so the evidence gate
sees the bytes that will run."""

import contextlib
from collections.abc import Callable

from probelab.codeobject import CodeObject
from probelab.errors import Unavailable
from probelab.probe import Kernel
from probelab.records import ToolRecord
from probelab.toolchains import identity
from probelab.vendors.amd import rocm
from probelab.vendors.amd import toolchain as amdgpu
from probelab.vendors.amd.disasm import parse_gcn


def version() -> str:
    major, minor = rocm.check(rocm.hiprtc().hiprtcVersion(), "hiprtcVersion")
    return f"hiprtc {major}.{minor}"


def tools() -> dict[str, ToolRecord]:
    """What hiprtc's library (the one loaded) and the llvm-objdump that disassembles what it
    builds are (identity.identify)."""
    found = {"hiprtc": identity.loaded("libhiprtc.so")}
    with contextlib.suppress(Unavailable):  # none: `build` records its objects unreadable
        found["llvm-objdump"] = amdgpu.find_clang().objdump
    return identity.record(found)


def build(kernel: Kernel, target_id: str, runtime: Callable[[], str], offline: Exception
          ) -> CodeObject:
    """Compile `kernel` for `target_id` (with its xnack/sramecc features) with hiprtc;
    `offline` is why the offline route refused it (recorded), `runtime` gives the HIP
    runtime's version (recorded; asked once hiprtc has loaded, so a machine without ROCm
    hears why neither route builds the kernel). Unavailable where hiprtc cannot be loaded
    or cannot compile it."""
    try:
        rtc, compiler = rocm.hiprtc(), version()
    except (RuntimeError, Unavailable) as exc:  # neither route can build this kernel
        raise rocm.no_rocm(f"{kernel.name} cannot be built offline ({offline}); hiprtc: "
                           f"{exc.__cause__ or exc}") from exc
    options = [f"--offload-arch={target_id}", "-O2",
               *(f"-D{k}={v}" for k, v in sorted(kernel.defines.items()))]
    (prog,) = rocm.check(rtc.hiprtcCreateProgram(kernel.source_text().encode(),
                                                 kernel.source.name.encode(), 0, [], []),
                         "hiprtcCreateProgram")
    try:
        (err,) = rtc.hiprtcCompileProgram(prog, len(options), [o.encode() for o in options])
        if int(err) != 0:  # like the offline route: no toolchain here can build it
            (size,) = rocm.check(rtc.hiprtcGetProgramLogSize(prog), "hiprtcGetProgramLogSize")
            log = bytearray(size)
            rocm.check(rtc.hiprtcGetProgramLog(prog, log), "hiprtcGetProgramLog")
            raise Unavailable(f"hiprtc cannot compile {kernel.name} for {target_id} "
                              f"({getattr(err, 'name', err)}):\n"
                              f"{log.decode(errors='replace').strip()}")
        (size,) = rocm.check(rtc.hiprtcGetCodeSize(prog), "hiprtcGetCodeSize")
        blob = bytearray(size)
        rocm.check(rtc.hiprtcGetCode(prog, blob), "hiprtcGetCode")
    finally:  # hiprtcDestroyProgram takes the program's address, hence createRef()
        destroyed = rtc.hiprtcDestroyProgram(prog.createRef())
    rocm.check(destroyed, "hiprtcDestroyProgram")
    toolchain = {"route": "hiprtc (on the device)", "compiler": compiler,
                 "hip_runtime": runtime(), "options": " ".join(options),
                 "offline_refused": " ".join(str(offline).split())}
    try:  # the bytes that will run, disassembled; without a disassembler, no evidence
        functions = parse_gcn(amdgpu.disassemble(bytes(blob), target_id))
        toolchain["disassembler"] = str(amdgpu.find_clang().objdump)
    except Unavailable as exc:
        functions, toolchain["disassembler"] = {}, f"unavailable: {exc}"
    return CodeObject(target_id, bytes(blob), functions, toolchain)
