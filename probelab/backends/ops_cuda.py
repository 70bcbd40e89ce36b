"""CUDA backend: NVRTC through cuda-core, one launch per kernel variant, every call checked.

Device memory comes from cuda-core; the plain synchronous copies go through the driver API
(cuda.bindings), whose every return code is checked here.
"""

import re
import subprocess
import threading
from pathlib import Path

import numpy as np

from probelab.backends import DEFAULT_TIMEOUT_S, DeviceInfo, KernelTimeout, wait_for
from probelab.backends.guards import GUARD, GUARD_WORDS, check_inputs_intact, framed, unframe
from probelab.codeobject import CodeObject
from probelab.errors import IntegrityError, Unavailable
from probelab.evidence import SASS
from probelab.probe import Kernel, Launch, Probe
from probelab.toolchains import nvidia


def _driver():
    from cuda.bindings import driver

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
    device exactly as it would have (the primary context is the one cuda-core uses)."""
    global _warming
    if _warming is None:
        _warming = threading.Thread(target=_warm, name="probelab-cuda-prewarm")
        _warming.start()


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
        self._dev = None
        self._stream = None
        self._modules: dict[str, object] = {}

    def _open(self):
        if self._dev is None:
            if _warming is not None:
                _warming.join()
            core = nvidia.cuda_core()
            try:
                dev = core.Device(0)
                dev.set_current()
                self._stream = dev.create_stream()
            except Exception as exc:  # no driver, no GPU: both surface here
                raise Unavailable(f"no usable CUDA device: {exc}") from exc
            self._dev = dev
        return self._dev

    def device(self) -> DeviceInfo:
        dev = self._open()
        cc = dev.compute_capability
        (version,) = _check(_driver().cuDriverGetVersion(), "cuDriverGetVersion")
        details = {"cuda_driver_api": f"{version // 1000}.{version % 1000 // 10}",
                   "cuda_core": nvidia.cuda_core().__version__}
        details["driver"] = _kernel_driver_version()
        return DeviceInfo(dev.name, f"sm_{cc[0]}{cc[1]}", details)

    def compile(self, kernel: Kernel, target: str) -> CodeObject:
        return nvidia.build(kernel, target)

    def _kernel(self, code: CodeObject, symbol: str):
        core = nvidia.cuda_core()
        if code.sha256 not in self._modules:
            self._modules[code.sha256] = core.ObjectCode.from_cubin(code.binary)
        return self._modules[code.sha256].get_kernel(symbol)

    def run(self, code: CodeObject, kernel: Kernel, launch: Launch,
            poison: int) -> dict[str, np.ndarray]:
        core, drv, dev = nvidia.cuda_core(), _driver(), self._open()
        host = {n: framed(a) for n, a in launch.inputs.items()}
        sizes = {n: h.size for n, h in host.items()}
        sizes |= {n: words + 2 * GUARD_WORDS for n, words in launch.outputs.items()}
        buffers = {n: dev.allocate(4 * size, stream=self._stream) for n, size in sizes.items()}
        ptr = {n: int(b.handle) for n, b in buffers.items()}
        failed = False
        stream = self._stream_handle(drv)
        try:
            # Every copy and memset goes on the launch's own stream (created non-blocking,
            # so the legacy stream would not order them): the kernel can only start once its
            # buffers are allocated, filled, guarded and poisoned.
            for n, h in host.items():
                _check(drv.cuMemcpyHtoDAsync(ptr[n], h.ctypes.data, h.nbytes, stream),
                       f"cuMemcpyHtoDAsync({n})")
            for n, words in launch.outputs.items():  # guards, then poison, set on the device
                _check(drv.cuMemsetD32Async(ptr[n], int(GUARD), sizes[n], stream),
                       f"cuMemsetD32Async({n})")
                _check(drv.cuMemsetD32Async(ptr[n] + 4 * GUARD_WORDS, poison, words, stream),
                       f"cuMemsetD32Async({n})")
            # Pointer-only arguments, each pointing past the leading guard.
            args = [np.uint64(ptr[n] + 4 * GUARD_WORDS) for n in sizes]
            blocks = (launch.threads + launch.block - 1) // launch.block
            config = core.LaunchConfig(grid=blocks, block=launch.block)
            core.launch(self._stream, config, self._kernel(code, kernel.symbol), *args)
            wait_for(lambda: self._finished(drv, kernel.symbol), self.timeout_s,
                     f"kernel {kernel.symbol}")
            _check(drv.cuCtxSynchronize(), "cuCtxSynchronize")
            back = {n: np.empty(size, np.uint32) for n, size in sizes.items()}
            for n, b in back.items():
                _check(drv.cuMemcpyDtoH(b.ctypes.data, ptr[n], b.nbytes), f"cuMemcpyDtoH({n})")
        except KernelTimeout:
            buffers = {}  # freeing memory a running kernel uses would wait for it: leak it
            raise
        except IntegrityError:
            failed = True
            raise
        except Exception as exc:  # a faulting kernel surfaces as a CUDA error here
            failed = True
            raise IntegrityError(f"kernel {kernel.symbol} failed on the device: {exc}") from exc
        finally:
            for b in buffers.values():
                try:
                    b.close()
                except Exception:
                    if not failed:  # after a fault the context refuses; keep the first error
                        raise
        for n in launch.inputs:
            check_inputs_intact(n, host[n], back[n])
            unframe(n, back[n])
        return {n: unframe(n, back[n]) for n in launch.outputs}

    def _stream_handle(self, drv):
        return drv.CUstream(int(self._stream.handle))

    def _finished(self, drv, symbol: str) -> bool:
        """True once the stream is idle; a fault in the kernel raises here."""
        (err,) = drv.cuStreamQuery(self._stream_handle(drv))
        if err == drv.CUresult.CUDA_ERROR_NOT_READY:
            return False
        if int(err) != 0:
            raise IntegrityError(f"kernel {symbol} failed on the device: {err!r}")
        return True

    def describe(self) -> dict[str, str]:
        return dict(nvidia.describe())


def make(probe: Probe, target: str | None) -> CudaBackend:
    return CudaBackend()
