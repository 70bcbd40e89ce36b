"""CUDA backend: NVRTC through cuda-core, one launch per kernel variant, every call checked.

Device memory comes from cuda-core; the plain synchronous copies go through the driver API
(cuda.bindings), whose every return code is checked here.
"""

import subprocess

import numpy as np

from probelab.backends import DeviceInfo
from probelab.backends.guards import GUARD_WORDS, check_inputs_intact, framed, poisoned, unframe
from probelab.codeobject import CodeObject
from probelab.errors import IntegrityError, Unavailable
from probelab.evidence import SASS
from probelab.probe import Kernel, Launch, Probe
from probelab.toolchains import nvidia


def _driver():
    from cuda.bindings import driver

    return driver


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
        self._dev = None
        self._stream = None
        self._modules: dict[str, object] = {}

    def _open(self):
        if self._dev is None:
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
        try:
            query = ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]
            smi = subprocess.run(query, capture_output=True, text=True, timeout=20)
            details["driver"] = smi.stdout.strip().splitlines()[0] if smi.returncode == 0 else "?"
        except (OSError, subprocess.TimeoutExpired, IndexError):
            details["driver"] = "?"
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
        host |= {n: poisoned(words, poison) for n, words in launch.outputs.items()}
        buffers = {n: dev.allocate(h.nbytes, stream=self._stream) for n, h in host.items()}
        try:
            self._stream.sync()
            for n, h in host.items():
                _check(drv.cuMemcpyHtoD(int(buffers[n].handle), h.ctypes.data, h.nbytes),
                       f"cuMemcpyHtoD({n})")
            # Pointer-only arguments, each pointing past the leading guard.
            args = [np.uint64(int(buffers[n].handle) + 4 * GUARD_WORDS) for n in host]
            blocks = (launch.threads + launch.block - 1) // launch.block
            config = core.LaunchConfig(grid=blocks, block=launch.block)
            core.launch(self._stream, config, self._kernel(code, kernel.symbol), *args)
            self._stream.sync()
            _check(drv.cuCtxSynchronize(), "cuCtxSynchronize")
            back = {n: np.empty_like(h) for n, h in host.items()}
            for n, b in back.items():
                _check(drv.cuMemcpyDtoH(b.ctypes.data, int(buffers[n].handle), b.nbytes),
                       f"cuMemcpyDtoH({n})")
        except IntegrityError:
            raise
        except Exception as exc:  # a faulting kernel surfaces as a CUDA error here
            raise IntegrityError(f"kernel {kernel.symbol} failed on the device: {exc}") from exc
        finally:
            for b in buffers.values():
                b.close()
        for n in launch.inputs:
            check_inputs_intact(n, host[n], back[n])
            unframe(n, back[n])
        return {n: unframe(n, back[n]) for n in launch.outputs}

    def describe(self) -> dict[str, str]:
        return dict(nvidia.describe())


def make(probe: Probe, target: str | None) -> CudaBackend:
    return CudaBackend()
