"""CUDA backend's launch path against a fake cuda-core and driver: no GPU needed.

The stream cuda-core creates is non-blocking, so the legacy stream does not order work
against it. The fake models that: work is queued per stream, and a launch runs only what its
own stream holds. A copy or memset issued anywhere else would reach the kernel late, and the
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

from probelab.backends import ops_cuda
from probelab.backends.guards import POISONS
from probelab.codeobject import CodeObject
from probelab.probe import Evidence, Kernel, Launch

N = 1000
A = np.random.default_rng(2).integers(0, 1 << 32, N, dtype=np.uint64).astype(np.uint32)


class CUresult(IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_NOT_READY = 600


class FakeGpu:
    """Device memory, and per-stream queues of work that run when the stream does."""

    BASE = 0x7000_0000

    def __init__(self) -> None:
        self.heap = np.zeros(1 << 18, np.uint32)
        self.top = 0
        self.queues: dict[int, list] = {}
        self.log: list[tuple[str, int]] = []  # (call, stream handle; 0 is the legacy stream)

    def words(self, address: int, count: int) -> np.ndarray:
        start = (address - self.BASE) // 4
        return self.heap[start:start + count]

    def enqueue(self, call: str, stream: int, work) -> None:
        self.log.append((call, stream))
        self.queues.setdefault(stream, []).append(work)

    def drain(self, stream: int) -> None:
        for work in self.queues.pop(stream, []):
            work()


class FakeDriver:
    CUresult = CUresult

    def __init__(self, gpu: FakeGpu) -> None:
        self.gpu = gpu

    @staticmethod
    def CUstream(handle: int) -> int:
        return int(handle)

    def cuMemcpyHtoDAsync(self, dst: int, src: int, size: int, stream: int):
        data = np.frombuffer(ctypes.string_at(src, size), np.uint32).copy()  # staged now
        self.gpu.enqueue("HtoD", stream, lambda: self.gpu.words(dst, data.size).__setitem__(
            slice(None), data))
        return (CUresult.CUDA_SUCCESS,)

    def cuMemsetD32Async(self, dst: int, value: int, count: int, stream: int):
        self.gpu.enqueue("memset", stream, lambda: self.gpu.words(dst, count).fill(value))
        return (CUresult.CUDA_SUCCESS,)

    def cuStreamQuery(self, stream: int):
        return (CUresult.CUDA_SUCCESS,)

    def cuCtxSynchronize(self):
        for stream in list(self.gpu.queues):
            self.gpu.drain(stream)
        return (CUresult.CUDA_SUCCESS,)

    def cuMemcpyDtoH(self, dst: int, src: int, size: int):
        self.gpu.log.append(("DtoH", 0))
        ctypes.memmove(dst, self.gpu.words(src, size // 4).tobytes(), size)
        return (CUresult.CUDA_SUCCESS,)


class FakeCore:
    """The cuda-core surface the backend uses: Device, streams, buffers, launch."""

    def __init__(self, gpu: FakeGpu) -> None:
        self.gpu = gpu
        self.Device = lambda ordinal: self._device()
        self.LaunchConfig = lambda grid, block: SimpleNamespace(grid=grid, block=block)
        self.ObjectCode = SimpleNamespace(from_cubin=lambda binary: SimpleNamespace(
            get_kernel=lambda symbol: self.xor))

    def _device(self):
        gpu = self.gpu

        def allocate(size: int, stream) -> SimpleNamespace:
            address = gpu.BASE + 4 * gpu.top
            gpu.top += -(-size // 256) * 64
            return SimpleNamespace(handle=address, close=lambda: None)

        return SimpleNamespace(set_current=lambda: None, allocate=allocate,
                               create_stream=lambda: SimpleNamespace(handle=7))

    def xor(self, threads: int, a: int, out: int) -> None:
        self.gpu.words(out, N)[:] = self.gpu.words(a, N) ^ np.uint32(0x1234)

    def launch(self, stream, config, kernel, *args) -> None:
        handle = int(stream.handle)
        threads = config.grid * config.block
        self.gpu.enqueue("launch", handle, lambda: kernel(threads, *(int(a) for a in args)))
        self.gpu.drain(handle)  # the kernel runs with what its own stream holds by now


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> FakeGpu:
    gpu = FakeGpu()
    core, driver = FakeCore(gpu), FakeDriver(gpu)
    monkeypatch.setattr(ops_cuda.nvidia, "cuda_core", lambda: core)
    monkeypatch.setattr(ops_cuda, "_driver", lambda: driver)
    return gpu


def test_every_copy_and_memset_is_ordered_before_the_launch_on_its_stream(gpu) -> None:
    kernel = Kernel("xor", "xor", Path("k.cu"), "nvidia", Evidence(None))
    code = CodeObject("sm_90", b"fake cubin", {}, {})
    launch = Launch({"a": A}, {"out": N}, threads=N)
    out = ops_cuda.CudaBackend().run(code, kernel, launch, POISONS[0])["out"]
    assert np.array_equal(out, A ^ np.uint32(0x1234))
    before = gpu.log[:[call for call, _ in gpu.log].index("launch") + 1]
    assert [call for call, _ in before] == ["HtoD", "memset", "memset", "launch"]
    assert {stream for _, stream in before} == {7}


def test_the_early_device_setup_is_finished_before_the_device_opens(monkeypatch) -> None:
    started, release = threading.Event(), threading.Event()

    def slow_warm() -> None:
        started.set()
        release.wait(5)

    def opening(ordinal: int) -> None:
        assert not ops_cuda._warming.is_alive(), "the device opened before its setup finished"
        raise RuntimeError("no GPU here")

    monkeypatch.setattr(ops_cuda, "_warming", None)
    monkeypatch.setattr(ops_cuda, "_warm", slow_warm)
    monkeypatch.setattr(ops_cuda.nvidia, "cuda_core", lambda: SimpleNamespace(Device=opening))
    ops_cuda.prewarm()
    assert started.wait(5) and ops_cuda._warming.is_alive()
    threading.Timer(0.2, release.set).start()
    with pytest.raises(ops_cuda.Unavailable, match="no GPU here"):
        ops_cuda.CudaBackend().device()
