"""HIP backend: without ROCm it refuses clearly; its launch path runs against a fake `hip`.

The fake follows hip-python's conventions (rocm-bindings 10, as installed here): every call
returns a tuple (hipError_t, *values), hipMalloc gives an object whose int() is the device
address, pointers may be passed as ints, hipMemsetD32Async takes a C int, and a tuple passed as
`extra` to hipModuleLaunchKernel is packed into the kernel's argument buffer.
"""

import ctypes
import json
import shutil
import sys
from enum import IntEnum
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from toylab import ToyLab
from typer.testing import CliRunner

import probelab.vendors.amd.toolchain as amdgpu
from probelab.backends import load_backend
from probelab.backends.guards import GUARD, GUARD_WORDS, POISONS
from probelab.codeobject import CodeObject
from probelab.errors import IntegrityError, Unavailable
from probelab.probe import Evidence, Kernel, Launch, catalog
from probelab.vendors.amd import ops_hip as ops
from probelab.vendors.amd import rocm

REPO = Path(__file__).resolve().parents[1]
TARGET_ID = "gfx942:sramecc+:xnack-"
N = 1000  # deliberately not a multiple of the block size
XOR = 0x12345678


def _rocm_present() -> bool:
    try:
        ops.HipBackend().device()
    except Unavailable:
        return False
    return True


no_rocm = pytest.mark.skipif(_rocm_present(), reason="ROCm and an AMD GPU are present")


# ---- a fake hip-python `hip` module --------------------------------------------------------


class hipError_t(IntEnum):  # the values hip-python's enum has for these names
    hipSuccess = 0
    hipErrorInvalidValue = 1
    hipErrorNoDevice = 100
    hipErrorNotFound = 500
    hipErrorNotReady = 600
    hipErrorIllegalAddress = 700


class DeviceArray:
    def __init__(self, address: int) -> None:
        self.address = address

    def __int__(self) -> int:
        return self.address


class Fault(Exception):
    """A fake kernel touched memory outside the heap."""


class FakeHip:
    BASE, SIZE = 0x7F00_0000_0000, 1 << 20
    hipError_t = hipError_t

    def __init__(self, kernels: dict, devices: int = 1) -> None:
        self.kernels = kernels  # symbol -> fn(fake, threads, *addresses)
        self.devices = devices
        self.heap = bytearray(self.SIZE)  # fixed size: numpy views into it stay valid
        self.top = 0
        self.calls: list[str] = []
        self.streams: list[tuple[str, object]] = []  # (call, the stream it was issued on)
        self.allocated: list[int] = []
        self.freed: list[int] = []
        self.launches: list[dict] = []
        self.fail: str | None = None  # the next call of this name returns an error
        self.sticky = hipError_t.hipSuccess  # a kernel fault, reported at synchronize
        self.hung = False

    def _enter(self, name: str) -> hipError_t | None:
        self.calls.append(name)
        if name == self.fail:
            self.fail = None
            return hipError_t.hipErrorInvalidValue
        return None

    def words(self, address: int, count: int) -> np.ndarray:
        offset = int(address) - self.BASE
        if offset < 0 or offset + 4 * count > self.top:
            raise Fault(f"{int(address):#x}")
        return np.frombuffer(self.heap, np.uint32, count, offset)

    # device
    def hipGetDeviceCount(self):
        if err := self._enter("hipGetDeviceCount"):
            return (err, 0)
        return (hipError_t.hipSuccess, self.devices) if self.devices else \
            (hipError_t.hipErrorNoDevice, 0)

    def hipSetDevice(self, device: int):
        return (self._enter("hipSetDevice") or hipError_t.hipSuccess,)

    def hipGetDeviceProperties(self, device: int):
        if err := self._enter("hipGetDeviceProperties"):
            return (err, None)
        return (hipError_t.hipSuccess,
                SimpleNamespace(name="AMD Instinct MI300X", gcnArchName=TARGET_ID))

    def hipRuntimeGetVersion(self):
        return (self._enter("hipRuntimeGetVersion") or hipError_t.hipSuccess, 60443482)

    def hipDriverGetVersion(self):
        return (self._enter("hipDriverGetVersion") or hipError_t.hipSuccess, 60443482)

    # memory
    def hipMalloc(self, size: int):
        if err := self._enter("hipMalloc"):
            return (err, None)
        address = self.BASE + self.top
        self.top += -(-size // 256) * 256
        self.allocated.append(address)
        return (hipError_t.hipSuccess, DeviceArray(address))

    def hipMemcpyHtoDAsync(self, dst, src: int, size: int, stream):
        self.streams.append(("hipMemcpyHtoDAsync", stream))
        if err := self._enter("hipMemcpyHtoDAsync"):
            return (err,)
        self.words(int(dst), size // 4)[:] = np.frombuffer(ctypes.string_at(src, size), np.uint32)
        return (hipError_t.hipSuccess,)

    def hipMemcpyDtoH(self, dst: int, src, size: int):
        if err := self._enter("hipMemcpyDtoH"):
            return (err,)
        ctypes.memmove(dst, self.words(int(src), size // 4).tobytes(), size)
        return (hipError_t.hipSuccess,)

    def hipMemsetD32Async(self, dest, value: int, count: int, stream):
        if not -(1 << 31) <= value < 1 << 31:  # what Cython does with a C int argument
            raise OverflowError("value too large to convert to int")
        self.streams.append(("hipMemsetD32Async", stream))
        if err := self._enter("hipMemsetD32Async"):
            return (err,)
        self.words(int(dest), count)[:] = np.array(value, np.int32).view(np.uint32)
        return (hipError_t.hipSuccess,)

    def hipFree(self, ptr):
        self.freed.append(int(ptr))
        return (self._enter("hipFree") or hipError_t.hipSuccess,)

    # modules and launches
    def hipModuleLoadData(self, image):
        if err := self._enter("hipModuleLoadData"):
            return (err, None)
        return (hipError_t.hipSuccess, SimpleNamespace(image=bytes(image)))

    def hipModuleGetFunction(self, module, name: bytes):
        if err := self._enter("hipModuleGetFunction"):
            return (err, None)
        if name.decode() not in self.kernels:
            return (hipError_t.hipErrorNotFound, None)
        return (hipError_t.hipSuccess, self.kernels[name.decode()])

    def hipModuleLaunchKernel(self, f, gx, gy, gz, bx, by, bz, sharedMemBytes, stream,
                              kernelParams, extra):
        if err := self._enter("hipModuleLaunchKernel"):
            return (err,)
        self.streams.append(("hipModuleLaunchKernel", stream))
        self.launches.append(dict(grid=(gx, gy, gz), block=(bx, by, bz), shared=sharedMemBytes,
                                  stream=stream, kernelParams=kernelParams, extra=extra))
        try:
            f(self, gx * bx, *(arg.value for arg in extra))
        except Fault:
            self.sticky = hipError_t.hipErrorIllegalAddress
        return (hipError_t.hipSuccess,)

    def hipStreamQuery(self, stream):
        if self.hung:  # a kernel that never returns
            return (hipError_t.hipErrorNotReady,)
        return (self._enter("hipStreamQuery") or hipError_t.hipSuccess,)

    def hipDeviceSynchronize(self):
        return (self._enter("hipDeviceSynchronize") or self.sticky,)

    def hipModuleUnload(self, module):
        return (self._enter("hipModuleUnload") or hipError_t.hipSuccess,)


class LegacyFakeHip(FakeHip):
    """hip-python < 10: the caller passes the struct, and char fields come back as bytes."""

    def hipDeviceProp_t(self):
        return SimpleNamespace(name=b"", gcnArchName=b"")

    def hipGetDeviceProperties(self, props, device: int):
        self._enter("hipGetDeviceProperties")
        props.name, props.gcnArchName = b"AMD Instinct MI210", b"gfx90a:sramecc+:xnack-"
        return (hipError_t.hipSuccess,)


# Fake kernels, like test_cuda's: k(const u32* params, const u32* a, u32* out), n = params[0].
def xor(dev, threads, params, a, out):
    n = min(threads, int(dev.words(params, 1)[0]))
    dev.words(out, n)[:] = dev.words(a, n) ^ np.uint32(XOR)


def past_end(dev, threads, params, a, out):
    n = int(dev.words(params, 1)[0])
    dev.words(out, n + 1)[:] = 7


def evens(dev, threads, params, a, out):
    n = int(dev.words(params, 1)[0])
    dev.words(out, n)[0::2] = dev.words(a, n)[0::2]


def clobber(dev, threads, params, a, out):
    n = int(dev.words(params, 1)[0])
    dev.words(out, n)[:] = dev.words(a, n)
    dev.words(a, n)[:] = 0


def fault(dev, threads, params, a, out):
    dev.words(0, 1)[0] = 1  # a NULL store


KERNELS = {f.__name__: f for f in (xor, past_end, evens, clobber, fault)}
CODE = CodeObject(TARGET_ID, b"\x7fELF fake code object", {}, {"route": "test"})
A = np.random.default_rng(1).integers(0, 1 << 32, N, dtype=np.uint64).astype(np.uint32)


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeHip:
    hip = FakeHip(KERNELS)
    monkeypatch.setattr(rocm, "hip", lambda: hip)
    return hip


def kernel(symbol: str) -> Kernel:
    return Kernel(symbol, symbol, Path("k.hip"), "amd", Evidence("v_xor_b32"))


def run(symbol: str, poison: int = POISONS[0], backend: ops.HipBackend | None = None):
    launch = Launch({"params": np.array([N], np.uint32), "a": A}, {"out": N}, threads=N)
    return (backend or ops.HipBackend()).run(CODE, kernel(symbol), launch, poison)["out"]


# ---- the launch path, against the fake ------------------------------------------------------


def test_round_trip_and_call_sequence(fake: FakeHip) -> None:
    assert np.array_equal(run("xor"), A ^ np.uint32(XOR))
    start = fake.calls.index("hipMalloc")
    assert fake.calls[:start] == ["hipGetDeviceCount", "hipSetDevice", "hipGetDeviceProperties",
                                  "hipRuntimeGetVersion", "hipDriverGetVersion"]
    assert fake.calls[start:] == [
        *["hipMalloc"] * 3, *["hipMemcpyHtoDAsync"] * 2, *["hipMemsetD32Async"] * 2,
        "hipModuleLoadData", "hipModuleGetFunction", "hipModuleLaunchKernel",
        "hipStreamQuery", "hipDeviceSynchronize", *["hipMemcpyDtoH"] * 3, *["hipFree"] * 3]
    assert fake.freed == fake.allocated


def test_copies_and_memsets_are_ordered_before_the_launch_on_its_stream(fake: FakeHip) -> None:
    run("xor")
    calls = [call for call, _ in fake.streams]
    assert calls[-1] == "hipModuleLaunchKernel"
    assert calls.count("hipMemcpyHtoDAsync") == 2 and calls.count("hipMemsetD32Async") == 2
    assert {stream for _, stream in fake.streams} == {fake.launches[0]["stream"]}


def test_extra_holds_only_the_pointers_in_kernel_order_past_the_guard(fake: FakeHip) -> None:
    run("xor")
    (launch,) = fake.launches
    assert launch["grid"] == (4, 1, 1) and launch["block"] == (256, 1, 1)
    assert launch["shared"] == 0 and launch["kernelParams"] is None
    assert all(type(arg) is ctypes.c_void_p for arg in launch["extra"])
    # params, a, out: allocated in that order, each argument just past its leading guard
    assert [arg.value for arg in launch["extra"]] == \
        [address + 4 * GUARD_WORDS for address in fake.allocated]


def test_unwritten_cells_keep_the_poison_and_guards_are_set_on_the_device(fake) -> None:
    out = run("evens", poison=POISONS[0])  # 0xA5A5A5A5: only passes hipMemsetD32Async signed
    assert np.array_equal(out[0::2], A[0::2]) and np.all(out[1::2] == POISONS[0])
    trailing = fake.words(fake.allocated[2] + 4 * (GUARD_WORDS + N), GUARD_WORDS)
    assert np.all(trailing == GUARD)


def test_write_past_the_end_hits_the_guard(fake: FakeHip) -> None:
    with pytest.raises(IntegrityError, match="guard words overwritten in buffer 'out'"):
        run("past_end")
    assert fake.freed == fake.allocated


def test_a_kernel_that_writes_its_input_is_caught(fake: FakeHip) -> None:
    with pytest.raises(IntegrityError, match="input buffer 'a' changed"):
        run("clobber")


def test_a_faulting_kernel_is_an_integrity_error(fake: FakeHip) -> None:
    with pytest.raises(IntegrityError, match="hipDeviceSynchronize failed: hipErrorIllegalAddress"):
        run("fault")
    assert fake.freed == fake.allocated


def test_a_kernel_that_never_returns_times_out_and_frees_nothing(fake: FakeHip) -> None:
    """The launch is left running: freeing its buffers would wait for it forever."""
    from probelab.backends import KernelTimeout

    backend = ops.HipBackend()
    backend.timeout_s = 0.05
    fake.hung = True
    with pytest.raises(KernelTimeout, match=r"kernel xor did not return within 0\.05 s"):
        run("xor", backend=backend)
    assert fake.freed == [] and "hipDeviceSynchronize" not in fake.calls


CALLS = ["hipMalloc", "hipMemcpyHtoDAsync", "hipMemsetD32Async", "hipModuleLoadData",
         "hipModuleGetFunction", "hipModuleLaunchKernel", "hipDeviceSynchronize",
         "hipMemcpyDtoH", "hipFree"]


@pytest.mark.parametrize("call", CALLS)
def test_every_call_is_checked_and_buffers_are_freed(fake: FakeHip, call: str) -> None:
    backend = ops.HipBackend()
    backend.device()
    fake.fail = call
    with pytest.raises(IntegrityError, match=rf"HIP call {call}\b.*hipErrorInvalidValue"):
        run("xor", backend=backend)
    assert fake.fail is None  # the error came from that call
    assert sorted(fake.freed) == sorted(fake.allocated)  # every buffer, the failed free too
    assert len(fake.allocated) == (0 if call == "hipMalloc" else 3)


def test_modules_are_loaded_once_and_unloaded_on_close(fake: FakeHip) -> None:
    backend = ops.HipBackend()
    run("xor", backend=backend)
    run("evens", backend=backend)
    assert fake.calls.count("hipModuleLoadData") == 1
    backend.close()
    assert fake.calls.count("hipModuleUnload") == 1


# ---- the device, against the fake ----------------------------------------------------------


def test_device_reports_the_base_isa_and_keeps_the_target_id(fake: FakeHip) -> None:
    info = ops.HipBackend().device()
    assert (info.name, info.target) == ("AMD Instinct MI300X", "gfx942")
    assert info.details["target_id"] == TARGET_ID
    assert info.details["hip_runtime"] == info.details["hip_driver"] == "6.4.43482"
    assert info.details["hip_python"]


def test_device_with_older_hip_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rocm, "hip", lambda: LegacyFakeHip(KERNELS))
    info = ops.HipBackend().device()
    assert (info.name, info.target) == ("AMD Instinct MI210", "gfx90a")
    assert info.details["target_id"] == "gfx90a:sramecc+:xnack-"


@pytest.mark.parametrize("devices, fail", [(0, None), (1, "hipGetDeviceCount"),
                                           (1, "hipGetDeviceProperties")])
def test_no_device_is_unavailable(fake: FakeHip, devices: int, fail: str | None) -> None:
    fake.devices, fake.fail = devices, fail
    with pytest.raises(Unavailable, match="ROCm or an AMD GPU not found"):
        ops.HipBackend().device()


# ---- compiling: offline first, hiprtc for kernels that need HIP's headers -------------------


class FakeProgram:
    def createRef(self):
        return ("ref", self)


class FakeHiprtc:
    def __init__(self, log: bytes = b"") -> None:
        self.log = log  # non-empty: the compile fails with this log
        self.options: list[bytes] = []
        self.destroyed = 0

    def hiprtcVersion(self):
        return (0, 6, 4)

    def hiprtcCreateProgram(self, src, name, num_headers, headers, include_names):
        return (0, FakeProgram())

    def hiprtcCompileProgram(self, prog, num_options, options):
        self.options = list(options)
        return (IntEnum("hiprtcResult", {"HIPRTC_ERROR_COMPILATION": 6}).HIPRTC_ERROR_COMPILATION
                if self.log else 0,)

    def hiprtcGetProgramLogSize(self, prog):
        return (0, len(self.log))

    def hiprtcGetProgramLog(self, prog, log):
        log[:] = self.log
        return (0,)

    def hiprtcGetCodeSize(self, prog):
        return (0, 4)

    def hiprtcGetCode(self, prog, code):
        code[:] = b"\x7fELF"
        return (0,)

    def hiprtcDestroyProgram(self, ref):
        assert ref[0] == "ref"  # the program's address, not the program
        self.destroyed += 1
        return (0,)


def refuse_offline(*args, **kwargs):
    raise Unavailable("xor needs HIP's headers: it is built on the device with hiprtc")


def no_objdump(*args):
    raise Unavailable("no llvm-objdump")


def hip_kernel(tmp_path: Path, text: str) -> Kernel:
    source = tmp_path / "k.hip"
    source.write_text(text)
    return Kernel("xor", "xor_", source, "amd", Evidence("v_perm_b32"), headers="hip")


def test_offline_build_gets_the_full_target_id(fake: FakeHip, monkeypatch) -> None:
    seen = []
    monkeypatch.setattr(amdgpu, "build", lambda k, target: seen.append(target)
                        or CODE)
    monkeypatch.setattr(amdgpu, "describe", lambda: {"compiler": "fake clang"})
    backend = ops.HipBackend()
    backend.device()
    assert backend.compile(kernel("xor"), "gfx942") is CODE
    assert seen == [TARGET_ID]
    assert backend.describe()["routes"] == "xor: offline clang"


def test_hiprtc_builds_what_offline_cannot(fake: FakeHip, monkeypatch, tmp_path) -> None:
    rtc = FakeHiprtc()
    monkeypatch.setattr(amdgpu, "build", refuse_offline)
    monkeypatch.setattr(amdgpu, "disassemble", no_objdump)
    monkeypatch.setattr(rocm, "hiprtc", lambda: rtc)
    backend = ops.HipBackend()
    backend.device()
    code = backend.compile(hip_kernel(tmp_path, 'extern "C" __global__ void xor_() {}\n'),
                           "gfx942")
    assert rtc.options == [f"--offload-arch={TARGET_ID}".encode(), b"-O2"]
    assert code.binary == b"\x7fELF" and rtc.destroyed == 1
    assert code.functions == {}  # no disassembly, so the evidence gate will refuse it
    assert code.toolchain["compiler"] == "hiprtc 6.4"
    assert "HIP's headers" in code.toolchain["offline_refused"]
    assert backend.describe()["routes"] == "xor: hiprtc"


def test_hiprtc_compile_errors_carry_the_log(fake: FakeHip, monkeypatch, tmp_path) -> None:
    rtc = FakeHiprtc(log=b"k.hip:1:1: error: unknown type name 'u32'")
    monkeypatch.setattr(amdgpu, "build", refuse_offline)
    monkeypatch.setattr(rocm, "hiprtc", lambda: rtc)
    with pytest.raises(Unavailable, match="unknown type name 'u32'"):
        ops.HipBackend().compile(hip_kernel(tmp_path, "u32 x;\n"), "gfx942")
    assert rtc.destroyed == 1


# ---- without ROCm (this machine) ------------------------------------------------------------


@no_rocm
def test_without_rocm_device_is_unavailable_in_one_line() -> None:
    with pytest.raises(Unavailable) as caught:
        ops.HipBackend().device()
    message = str(caught.value)
    assert "\n" not in message
    assert "ROCm or an AMD GPU not found" in message and "install ROCm" in message


@pytest.mark.parametrize(("version", "says"), [
    ("not installed", "pip install 'probelab[hip]'"),
    ("7.2.2.562.43", "install ROCm 7.2.2 to match hip-python 7.2.2.562.43"),
    ("10.0.0.0.1.2", "hip-python 10.0.0.0.1.2 loads the ROCm it finds"),
], ids=["none", "per-rocm", "metapackage"])
def test_the_rocm_hint_fits_the_hip_python_release(monkeypatch, version: str, says: str) -> None:
    monkeypatch.setattr(rocm, "hip_python_version", lambda: version)
    assert says in str(rocm.no_rocm("failed to dlopen 'b'libamdhip64.so''"))


def test_without_hip_python_device_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hip", None)  # `from hip import hip` raises ImportError
    with pytest.raises(Unavailable, match="hip-python is not importable"):
        ops.HipBackend().device()


def test_hip_is_a_registered_backend() -> None:
    assert load_backend("hip", None).name == "hip"


@no_rocm
def test_sweep_on_hip_exits_4_and_writes_nothing(toylab: ToyLab) -> None:
    from probelab.cli import app

    shutil.copytree(REPO / "probes" / "byte_perm", toylab.root / "probes" / "byte_perm")
    sys.modules.pop("probelab_probe_byte_perm_probe", None)  # not the repository's copy
    catalog.cache_clear()
    try:
        result = CliRunner().invoke(app, ["sweep", "byte-perm", "--backend", "hip",
                                          "--repeats", "2"])
    finally:
        sys.modules.pop("probelab_probe_byte_perm_probe", None)
    assert result.exit_code == 4, result.output
    assert "ROCm" in result.stderr
    assert not any((toylab.root / "data").rglob("*"))
    assert not (toylab.root / "sim-data").exists()


@no_rocm
def test_doctor_says_rocm_is_missing(toylab: ToyLab) -> None:
    from probelab.cli import app

    result = CliRunner().invoke(app, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    row = checks["backend hip"]
    assert row["ok"] is False and "install ROCm" in row["detail"]
    assert checks["ROCm HIP runtime"]["ok"] is False


@no_rocm
def test_the_real_bindings_without_rocm_fail_cleanly() -> None:
    """hip-python itself (installed by [dev]) imports without ROCm and raises RuntimeError at
    the first call: the backend turns that into Unavailable (exit 4), naming the library."""
    pytest.importorskip("hip", reason="hip-python is not installed")
    from hip import hip, hiprtc  # noqa: F401 - the import itself is what is tested

    with pytest.raises(Unavailable, match="libamdhip64"):
        ops.HipBackend().device()
