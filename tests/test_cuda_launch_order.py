"""CUDA backend's launch path against a fake driver API: no GPU needed.

The backend's stream is non-blocking, so the legacy stream does not order work against it.
The fake models that: work is queued per stream, and a launch runs only what its own stream
holds. A copy or memset issued anywhere else would reach the kernel late, and the
kernel would read an unpoisoned or half-copied buffer; here it shows as a wrong result and a
call log naming the other stream.
"""

import ctypes
import threading
from enum import IntEnum
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from probelab.backends.guards import POISONS
from probelab.codeobject import CodeObject
from probelab.errors import IntegrityError
from probelab.probe import Evidence, Kernel, Launch
from probelab.vendors.nvidia import ops_cuda

N = 1000
A = np.random.default_rng(2).integers(0, 1 << 32, N, dtype=np.uint64).astype(np.uint32)


class CUresult(IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_NOT_READY = 600


OK = (CUresult.CUDA_SUCCESS,)
STREAM = 7  # the backend's own stream; 0 is the legacy stream


class FakeDriver:
    """The driver calls the backend makes, over fake device memory where work is queued per
    stream and runs when its stream does: a launch runs only what its own stream holds."""

    CUresult = CUresult
    CUstream_flags = SimpleNamespace(CU_STREAM_NON_BLOCKING=1)
    CUdevice_attribute = SimpleNamespace(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR=75,
                                         CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR=76)
    BASE = 0x7000_0000

    def __init__(self) -> None:
        self.heap = np.zeros(1 << 18, np.uint32)
        self.top = 0
        self.queues: dict[int, list] = {}
        self.log: list[tuple[str, int]] = []  # (call, stream it was issued on)
        self.freed: list[int] = []
        self.params: list[bytes] = []  # the last launch's argument values, as it read them

    def words(self, address: int, count: int) -> np.ndarray:
        start = (address - self.BASE) // 4
        return self.heap[start:start + count]

    def _enqueue(self, call: str, stream: int, work) -> None:
        self.log.append((call, stream))
        self.queues.setdefault(stream, []).append(work)

    def _drain(self, stream: int) -> None:
        for work in self.queues.pop(stream, []):
            work()

    # the context, the device and the stream
    def cuInit(self, flags: int):
        return OK

    def cuDeviceGet(self, ordinal: int):
        return (*OK, 0)

    def cuDevicePrimaryCtxRetain(self, device: int):
        return (*OK, "context")

    def cuCtxSetCurrent(self, context):
        return OK

    def cuStreamCreate(self, flags: int):
        assert flags == self.CUstream_flags.CU_STREAM_NON_BLOCKING
        return (*OK, STREAM)

    # memory
    def cuMemAlloc(self, size: int):
        address = self.BASE + 4 * self.top
        self.top += -(-size // 256) * 64
        return (*OK, address)

    def cuMemFree(self, address: int):
        self.freed.append(address)
        return OK

    def cuMemcpyHtoDAsync(self, dst: int, src: int, size: int, stream: int):
        data = np.frombuffer(ctypes.string_at(src, size), np.uint32).copy()  # staged now
        self._enqueue("HtoD", stream, lambda: self.words(dst, data.size).__setitem__(
            slice(None), data))
        return OK

    def cuMemsetD32Async(self, dst: int, value: int, count: int, stream: int):
        self._enqueue("memset", stream, lambda: self.words(dst, count).fill(value))
        return OK

    def cuMemcpyDtoH(self, dst: int, src: int, size: int):
        self.log.append(("DtoH", 0))
        ctypes.memmove(dst, self.words(src, size // 4).tobytes(), size)
        return OK

    # modules and launches
    def cuModuleLoadData(self, image: bytes):
        return (*OK, "module")

    def cuModuleGetFunction(self, module, name: bytes):
        return (*OK, self.xor)

    def xor(self, a: int, out: int) -> None:
        self.words(out, N)[:] = self.words(a, N) ^ np.uint32(0x1234)

    PARAMS = (8, 8)  # the kernel's parameters' sizes in bytes: two pointers

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params: int, extra):
        pointers = np.frombuffer(ctypes.string_at(params, 8 * len(self.PARAMS)), np.uint64)
        assert all(int(p) % min(n, 64) == 0 for p, n in zip(pointers, self.PARAMS, strict=True)
                   ), "every value at its alignment (a CUtensorMap's is 64 bytes)"
        self.params = [ctypes.string_at(int(p), n)
                       for p, n in zip(pointers, self.PARAMS, strict=True)]
        args = [int.from_bytes(v, "little") if len(v) == 8 else v for v in self.params]
        self._enqueue("launch", stream, lambda: f(*args))
        self._drain(stream)  # the kernel runs with what its own stream holds by now
        return OK

    def cuStreamQuery(self, stream: int):
        return OK

    def cuCtxSynchronize(self):
        for stream in list(self.queues):
            self._drain(stream)
        return OK


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> FakeDriver:
    driver = FakeDriver()
    monkeypatch.setattr(ops_cuda, "_driver", lambda: driver)
    return driver


def run() -> np.ndarray:
    kernel = Kernel("xor", "xor", Path("k.cu"), "nvidia", Evidence(None))
    code = CodeObject("sm_90", b"fake cubin", {}, {})
    launch = Launch({"a": A}, {"out": N}, threads=N)
    return ops_cuda.CudaBackend().run(code, kernel, launch, POISONS[0])["out"]


def test_every_copy_and_memset_is_ordered_before_the_launch_on_its_stream(gpu) -> None:
    out = run()
    assert np.array_equal(out, A ^ np.uint32(0x1234))
    before = gpu.log[:[call for call, _ in gpu.log].index("launch") + 1]
    assert [call for call, _ in before] == ["HtoD", "memset", "memset", "launch"]
    assert {stream for _, stream in before} == {STREAM}
    assert len(gpu.freed) == 2


@pytest.mark.parametrize("call", ["cuMemAlloc", "cuMemcpyHtoDAsync", "cuMemsetD32Async",
                                  "cuModuleLoadData", "cuModuleGetFunction", "cuLaunchKernel",
                                  "cuCtxSynchronize", "cuMemcpyDtoH", "cuMemFree"])
def test_every_call_is_checked_and_every_buffer_freed(gpu, monkeypatch, call: str) -> None:
    monkeypatch.setattr(gpu, call, lambda *args: (CUresult.CUDA_ERROR_INVALID_VALUE,))
    with pytest.raises(IntegrityError, match=call):
        run()
    if call not in ("cuMemAlloc", "cuMemFree"):
        assert len(gpu.freed) == 2


def test_the_early_device_setup_is_finished_before_the_device_opens(monkeypatch) -> None:
    started, release = threading.Event(), threading.Event()

    def slow_warm() -> None:
        started.set()
        release.wait(5)

    def opening(flags: int) -> None:
        assert not ops_cuda._warming.is_alive(), "the device opened before its setup finished"
        raise RuntimeError("no GPU here")

    monkeypatch.setattr(ops_cuda, "_warming", None)
    monkeypatch.setattr(ops_cuda, "_warm", slow_warm)
    monkeypatch.setattr(ops_cuda, "_driver", lambda: SimpleNamespace(cuInit=opening))
    ops_cuda.prewarm()
    assert started.wait(5) and ops_cuda._warming.is_alive()
    threading.Timer(0.2, release.set).start()
    with pytest.raises(ops_cuda.Unavailable, match="no GPU here"):
        ops_cuda.CudaBackend().device()
