"""HIP backend: ROCm through hip-python, one launch per kernel variant, every call checked.

Kernels are built offline by clang where they can be, so the disassembled bytes are the bytes
that run; a kernel that needs HIP's headers is built on the device by hiprtc and then
disassembled the same way. hip-python returns every call as a tuple (error, *values), and
every error is checked here. Without ROCm, hip-python imports but each call raises
RuntimeError ("failed to dlopen libamdhip64.so"): that is reported as Unavailable
(probelab.vendors.amd.rocm). hiprtc is a toolchain (probelab.vendors.amd.hiprtc).
"""

import ctypes
from typing import Any

import numpy as np

from probelab.backends import DEFAULT_TIMEOUT_S, DeviceInfo, device_status, device_uuid
from probelab.backends.guards import guarded_run
from probelab.codeobject import CodeObject
from probelab.errors import IntegrityError, Unavailable, UsageError
from probelab.probe import Kernel, Launch, Probe
from probelab.vendors.amd import hiprtc, rocm
from probelab.vendors.amd import toolchain as amdgpu
from probelab.vendors.amd.isa import GCN

# The null stream: every copy, memset and launch of a run goes on it, in order.
STREAM = None


def _signed(word: int) -> int:
    """hipMemsetD32 takes a C int: a word with the top bit set must go in as negative."""
    word = int(word) & 0xFFFFFFFF
    return word - (1 << 32) if word >> 31 else word


def _properties(hip):
    """Device 0's properties: hip-python >= 10 returns them; older releases fill a struct."""
    try:
        (props,) = rocm.check(hip.hipGetDeviceProperties(0), "hipGetDeviceProperties")
    except TypeError:
        props = hip.hipDeviceProp_t()
        rocm.check(hip.hipGetDeviceProperties(props, 0), "hipGetDeviceProperties")
    return props


def _uuid(hip) -> str:
    """Device 0's UUID (which GPU ran it), or why none could be read: HIP marks the call
    beta, and a runtime without it must not stop a measurement."""
    try:
        (uuid,) = rocm.check(hip.hipDeviceGetUuid(0), "hipDeviceGetUuid")
        return device_uuid(bytes(uuid.bytes))
    except (RuntimeError, IntegrityError, AttributeError, TypeError, ValueError) as exc:
        return f"unavailable ({type(exc).__name__})"


class HipBackend:
    name = "hip"
    vendor = "amd"
    simulated = False
    isa = GCN
    tensor_maps = ()  # AMD GPUs have no tensor memory accelerator: `run` refuses a map

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
                hip = rocm.hip()
                (count,) = rocm.check(hip.hipGetDeviceCount(), "hipGetDeviceCount")
                if count < 1:
                    raise rocm.no_rocm("hipGetDeviceCount found no device")
                rocm.check(hip.hipSetDevice(0), "hipSetDevice")
                props = _properties(hip)
                (runtime,) = rocm.check(hip.hipRuntimeGetVersion(), "hipRuntimeGetVersion")
                (driver,) = rocm.check(hip.hipDriverGetVersion(), "hipDriverGetVersion")
            except (RuntimeError, IntegrityError) as exc:  # no libamdhip64, no driver, no GPU
                raise rocm.no_rocm(exc) from exc
            target_id = rocm.text(props.gcnArchName)  # e.g. gfx942:sramecc+:xnack-
            details = {"target_id": target_id, "hip_runtime": rocm.version(runtime),
                       "hip_driver": rocm.version(driver), "hip_python": rocm.hip_python_version(),
                       "uuid": _uuid(hip)}
            self._info = DeviceInfo(rocm.text(props.name), target_id.split(":")[0], details)
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
            code = hiprtc.build(kernel, self._target_id(target),
                                lambda: self.device().details["hip_runtime"], offline)
            self._routes[kernel.name] = "hiprtc"
        return code

    def _function(self, hip, code: CodeObject, symbol: str):
        if code.sha256 not in self._modules:
            (module,) = rocm.check(hip.hipModuleLoadData(code.binary), "hipModuleLoadData")
            self._modules[code.sha256] = (module, code.binary)
        module = self._modules[code.sha256][0]
        return rocm.check(hip.hipModuleGetFunction(module, symbol.encode()),
                      f"hipModuleGetFunction({symbol})")[0]

    def run(self, code: CodeObject, kernel: Kernel, launch: Launch,
            poison: int) -> dict[str, np.ndarray]:
        if launch.tensor_maps:
            raise UsageError(f"{kernel.name} declares tensor maps ({', '.join(launch.tensor_maps)}"
                             "): HIP has no tensor memory accelerator (TMA is NVIDIA sm_90+)")
        self.device()
        self._hip = rocm.hip()
        return guarded_run(self, code, kernel, launch, poison, self.timeout_s)

    # The device primitives of the guarded run (probelab.backends.guards.Device): every
    # copy, memset and the launch name one stream, so they run in the order called.
    def alloc(self, name: str, nbytes: int) -> int:
        (buffer,) = rocm.check(self._hip.hipMalloc(nbytes), f"hipMalloc({name})")
        self._buffers[int(buffer)] = buffer  # freed as hip-python gave it
        return int(buffer)

    def copy_in(self, name: str, address: int, host: np.ndarray) -> None:
        rocm.check(self._hip.hipMemcpyHtoDAsync(address, host.ctypes.data, host.nbytes, STREAM),
               f"hipMemcpyHtoDAsync({name})")

    def fill(self, name: str, address: int, word: int, count: int) -> None:
        rocm.check(self._hip.hipMemsetD32Async(address, _signed(word), count, STREAM),
               f"hipMemsetD32Async({name})")

    def launch(self, code: CodeObject, symbol: str, blocks: int, block: int,
               args: list[int], maps: list[bytes]) -> None:
        # `run` refused any tensor map, so `maps` is empty; hip-python copies a tuple given
        # as `extra` into HIP_LAUNCH_PARAM_BUFFER_POINTER; c_void_p go by value
        function = self._function(self._hip, code, symbol)
        rocm.check(self._hip.hipModuleLaunchKernel(
            function, blocks, 1, 1, block, 1, 1, 0, STREAM, None,
            extra=tuple(ctypes.c_void_p(a) for a in args)), f"hipModuleLaunchKernel({symbol})")

    def finished(self, symbol: str) -> bool:
        """True once the stream is idle (a fault is reported by the synchronize after)."""
        (err,) = self._hip.hipStreamQuery(STREAM)
        return int(err) != int(self._hip.hipError_t.hipErrorNotReady)

    def synchronize(self) -> None:
        rocm.check(self._hip.hipDeviceSynchronize(), "hipDeviceSynchronize")  # faults land here

    def copy_out(self, name: str, host: np.ndarray, address: int) -> None:
        rocm.check(self._hip.hipMemcpyDtoH(host.ctypes.data, address, host.nbytes),
               f"hipMemcpyDtoH({name})")

    def free(self, name: str, address: int):
        result = self._hip.hipFree(self._buffers.pop(address))
        return lambda: rocm.check(result, f"hipFree({name})")

    def close(self) -> None:
        hip = rocm.hip()
        while self._modules:
            _, (module, _) = self._modules.popitem()
            rocm.check(hip.hipModuleUnload(module), "hipModuleUnload")

    def describe(self) -> dict[str, Any]:
        details = self.device().details
        out: dict[str, Any] = {
            "hip_runtime": details["hip_runtime"], "hip_driver": details["hip_driver"],
            "hip_python": details["hip_python"], "target_id": details["target_id"],
            "routes": "; ".join(f"{k}: {r}" for k, r in self._routes.items())}
        tools = {}  # of both routes, under the one key every dataset keeps them in
        if "offline clang" in self._routes.values():
            offline = amdgpu.describe()
            tools |= offline.pop("tools", {})
            out |= {f"offline_{k}": v for k, v in offline.items()}
        if "hiprtc" in self._routes.values():
            out["hiprtc"] = hiprtc.version()
            tools |= hiprtc.tools()
        return out | ({"tools": tools} if tools else {})


def make(probe: Probe, target: str | None) -> HipBackend:
    return HipBackend()


def status() -> dict[str, object]:
    return device_status(lambda: HipBackend().device(),
                         lambda d: f"{d.details['target_id']}, HIP runtime "
                                   f"{d.details['hip_runtime']}")
