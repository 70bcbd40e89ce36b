"""CUDA backend: kernels built by NVRTC (probelab.vendors.nvidia.toolchain), run through the CUDA
driver API (cuda.bindings), one launch per kernel variant, every call's result checked.

The driver API alone is imported to run: cuda-core, whose import costs a sweep more than
a tenth of a second, is only needed to compile, and the cubin cache spares that.
"""

import importlib.metadata
import re
import subprocess
import threading
from pathlib import Path
from typing import Any

import numpy as np

from probelab.backends import DEFAULT_TIMEOUT_S, DeviceInfo, device_status, device_uuid
from probelab.backends.guards import guarded_run
from probelab.codeobject import CodeObject
from probelab.errors import IntegrityError, Unavailable
from probelab.probe import Kernel, Launch, Probe, TensorMap
from probelab.vendors.nvidia import toolchain as nvidia
from probelab.vendors.nvidia.isa import SASS


def _driver():
    try:
        from cuda.bindings import driver
    except ImportError as exc:
        raise Unavailable(f"cuda-bindings is not installed: {nvidia.INSTALL_HINT}") from exc
    return driver


def _kernel_driver_version() -> str:
    """The display driver's version, read where the driver publishes it (no subprocess)."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
    except OSError:
        text = ""
    if match := re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+\.\d+(?:\.\d+)?)", text):
        return match.group(1)
    try:  # sandboxes may hide /proc/driver; nvidia-smi is slower but still knows
        query = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
        smi = subprocess.run(query, capture_output=True, text=True, timeout=20, check=True)
        return smi.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "?"


_warming: threading.Thread | None = None


def prewarm() -> None:
    """Start the driver and device 0's primary context on a thread of their own. They take
    a few tenths of a second inside the driver, outside the GIL, and so overlap the imports
    a sweep does before it opens the device; `_open` waits for them and then opens the
    device exactly as it would have (retaining the same primary context)."""
    global _warming
    if _warming is None:
        _warming = threading.Thread(target=_warm, name="probelab-cuda-prewarm")
        _warming.start()


def settle() -> None:
    """Wait for `prewarm`'s thread, if one was started."""
    if _warming is not None:
        _warming.join()


def _warm() -> None:
    try:
        from cuda.bindings import driver

        (err,) = driver.cuInit(0)
        if int(err) == 0:
            err, device = driver.cuDeviceGet(0)
            if int(err) == 0:
                driver.cuDevicePrimaryCtxRetain(device)  # released at exit, reused before
    except Exception:  # no bindings, driver or GPU: `_open` says which, properly
        pass


def _check(result: tuple, what: str) -> tuple:
    err, *rest = result
    if int(err) != 0:
        raise IntegrityError(f"CUDA call {what} failed: {err!r}")
    return tuple(rest)


class CudaBackend:
    name = "cuda"
    vendor = "nvidia"
    simulated = False
    isa = SASS

    def __init__(self) -> None:
        self.timeout_s = DEFAULT_TIMEOUT_S
        self._drv = None  # the driver module, once the device is open
        self._device = None  # CUdevice 0, once its primary context is current here
        self._stream = None  # non-blocking: every copy, memset and launch of a run is on it
        self._modules: dict[str, object] = {}  # code object sha256 -> CUmodule
        # every distinct tensor map a run passed: its arguments, address and encoded bytes
        self.tensor_maps: list[dict[str, object]] = []

    def _open(self):
        """The driver, with device 0's primary context current on this thread."""
        drv = self._drv = _driver()
        if self._device is None:
            settle()
            try:
                _check(drv.cuInit(0), "cuInit")
                (device,) = _check(drv.cuDeviceGet(0), "cuDeviceGet")
                (context,) = _check(drv.cuDevicePrimaryCtxRetain(device),
                                    "cuDevicePrimaryCtxRetain")
                _check(drv.cuCtxSetCurrent(context), "cuCtxSetCurrent")
                flags = drv.CUstream_flags.CU_STREAM_NON_BLOCKING
                (self._stream,) = _check(drv.cuStreamCreate(flags), "cuStreamCreate")
            except Exception as exc:  # no driver, no GPU: both surface here
                raise Unavailable(f"no usable CUDA device: {exc}") from exc
            self._device = device
        return drv

    def device(self) -> DeviceInfo:
        drv = self._open()
        attribute = drv.CUdevice_attribute
        cc = [_check(drv.cuDeviceGetAttribute(getattr(attribute, f"CU_DEVICE_ATTRIBUTE_"
                                                       f"COMPUTE_CAPABILITY_{part}"),
                                              self._device), "cuDeviceGetAttribute")[0]
              for part in ("MAJOR", "MINOR")]
        (name,) = _check(drv.cuDeviceGetName(256, self._device), "cuDeviceGetName")
        (version,) = _check(drv.cuDriverGetVersion(), "cuDriverGetVersion")
        (uuid,) = _check(drv.cuDeviceGetUuid(self._device), "cuDeviceGetUuid")
        details = {"cuda_driver_api": f"{version // 1000}.{version % 1000 // 10}",
                   "cuda_bindings": importlib.metadata.version("cuda-bindings"),
                   "driver": _kernel_driver_version(),
                   "uuid": device_uuid(uuid.bytes)}  # which GPU: a copy names the same one
        return DeviceInfo(name.split(b"\0")[0].decode(), f"sm_{cc[0]}{cc[1]}", details)

    def compile(self, kernel: Kernel, target: str) -> CodeObject:
        return nvidia.build(kernel, target)

    def _function(self, drv, code: CodeObject, symbol: str):
        if code.sha256 not in self._modules:
            (self._modules[code.sha256],) = _check(drv.cuModuleLoadData(code.binary),
                                                   "cuModuleLoadData")
        return _check(drv.cuModuleGetFunction(self._modules[code.sha256], symbol.encode()),
                      f"cuModuleGetFunction({symbol})")[0]

    def run(self, code: CodeObject, kernel: Kernel, launch: Launch,
            poison: int) -> dict[str, np.ndarray]:
        self._open()
        return guarded_run(self, code, kernel, launch, poison, self.timeout_s)

    # The device primitives of the guarded run (probelab.backends.guards.Device), all on the
    # backend's own stream: it is non-blocking, so the legacy stream would not order them.
    def alloc(self, name: str, nbytes: int) -> int:
        (address,) = _check(self._drv.cuMemAlloc(nbytes), f"cuMemAlloc({name})")
        return int(address)

    def copy_in(self, name: str, address: int, host: np.ndarray) -> None:
        _check(self._drv.cuMemcpyHtoDAsync(address, host.ctypes.data, host.nbytes,
                                           self._stream), f"cuMemcpyHtoDAsync({name})")

    def fill(self, name: str, address: int, word: int, count: int) -> None:
        _check(self._drv.cuMemsetD32Async(address, word, count, self._stream),
               f"cuMemsetD32Async({name})")

    def tensor_map(self, name: str, address: int, spec: TensorMap) -> bytes:
        drv = self._drv
        u64, u32 = drv.cuuint64_t, drv.cuuint32_t  # the bindings take no bare ints here
        swizzle = f"{spec.swizzle}B" if spec.swizzle else "NONE"
        (encoded,) = _check(drv.cuTensorMapEncodeTiled(
            getattr(drv.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{spec.dtype}"),
            len(spec.dims), address, [u64(d) for d in spec.dims],
            [u64(s) for s in spec.strides], [u32(b) for b in spec.box],
            [u32(e) for e in spec.element_strides],
            getattr(drv.CUtensorMapInterleave, f"CU_TENSOR_MAP_INTERLEAVE_{spec.interleave}"),
            getattr(drv.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{swizzle}"),
            getattr(drv.CUtensorMapL2promotion,
                    f"CU_TENSOR_MAP_L2_PROMOTION_{spec.l2_promotion}"),
            getattr(drv.CUtensorMapFloatOOBfill,
                    f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{spec.oob_fill}")),
            f"cuTensorMapEncodeTiled({name})")
        raw = b"".join(int(word).to_bytes(8, "little") for word in encoded.opaque)
        if len(raw) != 128:
            raise IntegrityError(f"cuTensorMapEncodeTiled({name}) gave {len(raw)} bytes, not 128")
        entry = {"param": name, "address": f"{address:#x}", **spec.record(), "bytes": raw.hex()}
        if entry not in self.tensor_maps:
            self.tensor_maps.append(entry)
        return raw

    def launch(self, code: CodeObject, symbol: str, blocks: int, block: int,
               args: list[int], maps: list[bytes]) -> None:
        # kernelParams: the address of an array of pointers, one to each argument's value:
        # the pointers' 8 bytes each, then each map's 128 at a 64-byte boundary (CUtensorMap's
        # alignment); the driver copies them at the launch
        values = [a.to_bytes(8, "little") for a in args] + list(maps)
        offsets, end = [], 0
        for value in values:
            align = 8 if len(value) == 8 else 64
            offsets.append(-(-end // align) * align)
            end = offsets[-1] + len(value)
        host = np.zeros(end + 64, np.uint8)
        base = -host.ctypes.data % 64  # the host copy's own 64-byte boundary
        for at, value in zip(offsets, values, strict=True):
            host[base + at:base + at + len(value)] = np.frombuffer(value, np.uint8)
        params = np.array([host.ctypes.data + base + at for at in offsets], np.uint64)
        _check(self._drv.cuLaunchKernel(self._function(self._drv, code, symbol), blocks, 1, 1,
                                        block, 1, 1, 0, self._stream, params.ctypes.data, 0),
               f"cuLaunchKernel({symbol})")

    def finished(self, symbol: str) -> bool:
        """True once the stream is idle; a fault in the kernel raises here."""
        drv = self._drv
        (err,) = drv.cuStreamQuery(self._stream)
        if err == drv.CUresult.CUDA_ERROR_NOT_READY:
            return False
        if int(err) != 0:
            raise IntegrityError(f"kernel {symbol} failed on the device: {err!r}")
        return True

    def synchronize(self) -> None:
        _check(self._drv.cuCtxSynchronize(), "cuCtxSynchronize")

    def copy_out(self, name: str, host: np.ndarray, address: int) -> None:
        _check(self._drv.cuMemcpyDtoH(host.ctypes.data, address, host.nbytes),
               f"cuMemcpyDtoH({name})")

    def free(self, name: str, address: int):
        result = self._drv.cuMemFree(address)
        return lambda: _check(result, f"cuMemFree({name})")

    def describe(self) -> dict[str, Any]:
        return dict(nvidia.describe())


def make(probe: Probe, target: str | None) -> CudaBackend:
    return CudaBackend()


def status() -> dict[str, object]:
    return device_status(lambda: CudaBackend().device(),
                         lambda d: f"driver {d.details.get('driver', '?')}")
