"""HIP backend: ROCm through hip-python, one launch per kernel variant, every call checked.

Kernels are built offline by clang where they can be, so the disassembled bytes are the bytes
that run; a kernel that needs HIP's headers is built on the device by hiprtc and then
disassembled the same way. hip-python returns every call as a tuple (error, *values), and
every error is checked here. Without ROCm, hip-python imports but each call raises
RuntimeError ("failed to dlopen libamdhip64.so"): that is reported as Unavailable.
"""

import ctypes
import importlib.metadata
import re

import numpy as np

from probelab.backends import DEFAULT_TIMEOUT_S, DeviceInfo
from probelab.backends.guards import guarded_run
from probelab.codeobject import CodeObject
from probelab.disasm import parse_gcn
from probelab.errors import IntegrityError, Unavailable
from probelab.evidence import GCN
from probelab.probe import Kernel, Launch, Probe
from probelab.toolchains import amdgpu


def _hip_python_version() -> str:
    try:
        return importlib.metadata.version("hip-python")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _no_rocm(why: object) -> Unavailable:
    """One line: what is missing and how to get it. Up to 7.x, hip-python's version starts
    with the ROCm release it was built for (6.2.0.x -> ROCm 6.2.0); 10.x is a metapackage
    over rocm-bindings that loads whatever ROCm it finds."""
    version = _hip_python_version()
    reason = " ".join(str(why).split())
    if lib := re.search(r"dlopen '?b?'(lib[\w.]+)", reason):  # hip-python's wording is noisy
        reason = f"cannot load {lib.group(1)}"
    major = int(version.split(".")[0]) if version[:1].isdigit() else None
    if major is None:
        fix = "install ROCm, then pip install 'probelab[hip]' (hip-python, pinned to it)"
    elif major >= 10:
        fix = f"install ROCm (hip-python {version} loads the ROCm it finds)"
    else:
        rocm = ".".join(version.split(".")[:3])
        fix = (f"install ROCm {rocm} to match hip-python {version}, or pin hip-python to "
               "your ROCm (pip install 'hip-python==X.Y.Z.*' for ROCm X.Y.Z)")
    return Unavailable(f"ROCm or an AMD GPU not found ({reason}): on a machine with an AMD "
                       f"GPU {fix}")


def _hip():
    try:
        from hip import hip
    except ImportError as exc:
        raise _no_rocm(f"hip-python is not importable: {exc}") from exc
    return hip


def _hiprtc():
    try:
        from hip import hiprtc
    except ImportError as exc:
        raise _no_rocm(f"hip-python is not importable: {exc}") from exc
    return hiprtc


# The null stream: every copy, memset and launch of a run goes on it, in order.
STREAM = None


def _check(result: tuple, what: str) -> tuple:
    err, *rest = result
    if int(err) != 0:
        raise IntegrityError(f"HIP call {what} failed: {getattr(err, 'name', err)}")
    return tuple(rest)


def _signed(word: int) -> int:
    """hipMemsetD32 takes a C int: a word with the top bit set must go in as negative."""
    word = int(word) & 0xFFFFFFFF
    return word - (1 << 32) if word >> 31 else word


def _text(value: str | bytes) -> str:  # hip-python < 10 gives char fields as bytes
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _version(v: int) -> str:  # HIP encodes major * 10**7 + minor * 10**5 + patch
    return f"{v // 10_000_000}.{v // 100_000 % 100}.{v % 100_000}"


def _properties(hip):
    """Device 0's properties: hip-python >= 10 returns them; older releases fill a struct."""
    try:
        (props,) = _check(hip.hipGetDeviceProperties(0), "hipGetDeviceProperties")
    except TypeError:
        props = hip.hipDeviceProp_t()
        _check(hip.hipGetDeviceProperties(props, 0), "hipGetDeviceProperties")
    return props


def _hiprtc_version() -> str:
    major, minor = _check(_hiprtc().hiprtcVersion(), "hiprtcVersion")
    return f"hiprtc {major}.{minor}"


class HipBackend:
    name = "hip"
    vendor = "amd"
    simulated = False
    isa = GCN

    def __init__(self) -> None:
        self.timeout_s = DEFAULT_TIMEOUT_S
        self._info: DeviceInfo | None = None
        self._modules: dict[str, tuple[object, bytes]] = {}  # the image stays referenced
        self._routes: dict[str, str] = {}  # kernel -> how its code object was built
        self._hip = None  # hip-python's `hip`, once a run starts
        self._buffers: dict[int, object] = {}  # address -> hip-python's buffer object

    def device(self) -> DeviceInfo:
        if self._info is None:
            try:
                hip = _hip()
                (count,) = _check(hip.hipGetDeviceCount(), "hipGetDeviceCount")
                if count < 1:
                    raise _no_rocm("hipGetDeviceCount found no device")
                _check(hip.hipSetDevice(0), "hipSetDevice")
                props = _properties(hip)
                (runtime,) = _check(hip.hipRuntimeGetVersion(), "hipRuntimeGetVersion")
                (driver,) = _check(hip.hipDriverGetVersion(), "hipDriverGetVersion")
            except (RuntimeError, IntegrityError) as exc:  # no libamdhip64, no driver, no GPU
                raise _no_rocm(exc) from exc
            target_id = _text(props.gcnArchName)  # e.g. gfx942:sramecc+:xnack-
            details = {"target_id": target_id, "hip_runtime": _version(runtime),
                       "hip_driver": _version(driver), "hip_python": _hip_python_version()}
            self._info = DeviceInfo(_text(props.name), target_id.split(":")[0], details)
        return self._info

    def _target_id(self, target: str) -> str:
        """The open device's full target id (with its xnack/sramecc features) for its ISA."""
        if self._info is not None and self._info.target == target:
            return self._info.details["target_id"]
        return target

    def compile(self, kernel: Kernel, target: str) -> CodeObject:
        try:
            code = amdgpu.build(kernel, self._target_id(target))
            self._routes[kernel.name] = "offline clang"
        except Unavailable as offline:  # no clang, or the kernel needs HIP's headers
            code = self._hiprtc(kernel, target, dict(kernel.defines), offline)
            self._routes[kernel.name] = "hiprtc"
        return code

    def _hiprtc(self, kernel: Kernel, target: str, defines: dict, offline: Exception
                ) -> CodeObject:
        try:
            rtc, version = _hiprtc(), _hiprtc_version()
        except (RuntimeError, Unavailable) as exc:  # neither route can build this kernel
            raise _no_rocm(f"{kernel.name} cannot be built offline ({offline}); hiprtc: "
                           f"{exc.__cause__ or exc}") from exc
        runtime = self.device().details["hip_runtime"]
        target_id = self._target_id(target)
        options = [f"--offload-arch={target_id}", "-O2",
                   *(f"-D{k}={v}" for k, v in sorted(defines.items()))]
        (prog,) = _check(rtc.hiprtcCreateProgram(kernel.source_text().encode(),
                                                 kernel.source.name.encode(), 0, [], []),
                         "hiprtcCreateProgram")
        try:
            (err,) = rtc.hiprtcCompileProgram(prog, len(options), [o.encode() for o in options])
            if int(err) != 0:  # like the offline route: no toolchain here can build it
                (size,) = _check(rtc.hiprtcGetProgramLogSize(prog), "hiprtcGetProgramLogSize")
                log = bytearray(size)
                _check(rtc.hiprtcGetProgramLog(prog, log), "hiprtcGetProgramLog")
                raise Unavailable(f"hiprtc cannot compile {kernel.name} for {target_id} "
                                     f"({getattr(err, 'name', err)}):\n"
                                     f"{log.decode(errors='replace').strip()}")
            (size,) = _check(rtc.hiprtcGetCodeSize(prog), "hiprtcGetCodeSize")
            blob = bytearray(size)
            _check(rtc.hiprtcGetCode(prog, blob), "hiprtcGetCode")
        finally:  # hiprtcDestroyProgram takes the program's address, hence createRef()
            destroyed = rtc.hiprtcDestroyProgram(prog.createRef())
        _check(destroyed, "hiprtcDestroyProgram")
        toolchain = {"route": "hiprtc (on the device)", "compiler": version,
                     "hip_runtime": runtime, "options": " ".join(options),
                     "offline_refused": " ".join(str(offline).split())}
        try:  # the bytes that will run, disassembled; without a disassembler, no evidence
            functions = parse_gcn(amdgpu.disassemble(bytes(blob), target_id))
            toolchain["disassembler"] = str(amdgpu.find_clang().objdump)
        except Unavailable as exc:
            functions, toolchain["disassembler"] = {}, f"unavailable: {exc}"
        return CodeObject(target_id, bytes(blob), functions, toolchain)

    def _function(self, hip, code: CodeObject, symbol: str):
        if code.sha256 not in self._modules:
            (module,) = _check(hip.hipModuleLoadData(code.binary), "hipModuleLoadData")
            self._modules[code.sha256] = (module, code.binary)
        module = self._modules[code.sha256][0]
        return _check(hip.hipModuleGetFunction(module, symbol.encode()),
                      f"hipModuleGetFunction({symbol})")[0]

    def run(self, code: CodeObject, kernel: Kernel, launch: Launch,
            poison: int) -> dict[str, np.ndarray]:
        self.device()
        self._hip = _hip()
        return guarded_run(self, code, kernel, launch, poison, self.timeout_s)

    # The device primitives of the guarded run (probelab.backends.guards.Device): every
    # copy, memset and the launch name one stream, so they run in the order called.
    def alloc(self, name: str, nbytes: int) -> int:
        (buffer,) = _check(self._hip.hipMalloc(nbytes), f"hipMalloc({name})")
        self._buffers[int(buffer)] = buffer  # freed as hip-python gave it
        return int(buffer)

    def copy_in(self, name: str, address: int, host: np.ndarray) -> None:
        _check(self._hip.hipMemcpyHtoDAsync(address, host.ctypes.data, host.nbytes, STREAM),
               f"hipMemcpyHtoDAsync({name})")

    def fill(self, name: str, address: int, word: int, count: int) -> None:
        _check(self._hip.hipMemsetD32Async(address, _signed(word), count, STREAM),
               f"hipMemsetD32Async({name})")

    def launch(self, code: CodeObject, symbol: str, blocks: int, block: int,
               args: list[int]) -> None:
        # hip-python copies a tuple given as `extra` into HIP_LAUNCH_PARAM_BUFFER_POINTER;
        # c_void_p go by value
        function = self._function(self._hip, code, symbol)
        _check(self._hip.hipModuleLaunchKernel(
            function, blocks, 1, 1, block, 1, 1, 0, STREAM, None,
            extra=tuple(ctypes.c_void_p(a) for a in args)), f"hipModuleLaunchKernel({symbol})")

    def finished(self, symbol: str) -> bool:
        """True once the stream is idle (a fault is reported by the synchronize after)."""
        (err,) = self._hip.hipStreamQuery(STREAM)
        return int(err) != int(self._hip.hipError_t.hipErrorNotReady)

    def synchronize(self) -> None:
        _check(self._hip.hipDeviceSynchronize(), "hipDeviceSynchronize")  # faults land here

    def copy_out(self, name: str, host: np.ndarray, address: int) -> None:
        _check(self._hip.hipMemcpyDtoH(host.ctypes.data, address, host.nbytes),
               f"hipMemcpyDtoH({name})")

    def free(self, name: str, address: int):
        result = self._hip.hipFree(self._buffers.pop(address))
        return lambda: _check(result, f"hipFree({name})")

    def close(self) -> None:
        hip = _hip()
        while self._modules:
            _, (module, _) = self._modules.popitem()
            _check(hip.hipModuleUnload(module), "hipModuleUnload")

    def describe(self) -> dict[str, str]:
        details = self.device().details
        out = {"hip_runtime": details["hip_runtime"], "hip_driver": details["hip_driver"],
               "hip_python": details["hip_python"], "target_id": details["target_id"],
               "routes": "; ".join(f"{k}: {r}" for k, r in self._routes.items())}
        if "offline clang" in self._routes.values():
            out |= {f"offline_{k}": v for k, v in amdgpu.describe().items()}
        if "hiprtc" in self._routes.values():
            out["hiprtc"] = _hiprtc_version()
        return out


def rocm_rows() -> list[tuple[str, bool, str]]:
    """`probelab doctor`'s rows: can the HIP runtime and hiprtc be loaded, at which version."""
    def runtime() -> str:
        return "HIP " + _version(_check(_hip().hipRuntimeGetVersion(), "hipRuntimeGetVersion")[0])

    rows = []
    for name, version in (("ROCm HIP runtime", runtime), ("ROCm hiprtc", _hiprtc_version)):
        try:
            rows.append((name, True, version()))
        except Unavailable as exc:
            rows.append((name, False, str(exc)))
        except (RuntimeError, IntegrityError) as exc:
            rows.append((name, False, str(_no_rocm(exc))))
    return rows


def make(probe: Probe, target: str | None) -> HipBackend:
    return HipBackend()
