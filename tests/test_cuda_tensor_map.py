"""A launch's declared tensor maps through the CUDA backend, against the fake driver of
test_cuda_launch_order (no GPU): the map is encoded over its input's payload after that is
allocated and copied in, every encoding is checked, the map reaches the kernel by value
after the pointers, and the sweep's record carries the encoded bytes."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from test_cuda_launch_order import OK, STREAM, CUresult, FakeDriver

from probelab.backends import ops_sim
from probelab.backends.guards import GUARD_WORDS, POISONS
from probelab.codeobject import CodeObject
from probelab.errors import IntegrityError, UsageError
from probelab.probe import Evidence, Kernel, Launch, TensorMap
from probelab.vendors.amd import ops_hip
from probelab.vendors.nvidia import ops_cuda

ROWS, PITCH = 8, 64  # the global tile: 8 rows of 64 bytes
TILE = np.arange(ROWS * PITCH // 4, dtype=np.uint32) * np.uint32(0x01010101)
MAP = TensorMap("tile", "UINT8", (PITCH, ROWS), (PITCH,), (32, 4), (1, 1), swizzle=32)


def _enums(kind: str, *names: str) -> SimpleNamespace:
    return SimpleNamespace(**{f"CU_TENSOR_MAP_{kind}_{n}": f"{kind}_{n}" for n in names})


class Word:  # cuuint64_t / cuuint32_t: the bindings refuse bare ints, so the fake does too
    def __init__(self, value: int) -> None:
        self.value = value

    def __int__(self) -> int:
        return self.value


class MapDriver(FakeDriver):
    """The fake driver with cuTensorMapEncodeTiled: its map holds the global address in its
    first word and the (swizzle, box) it was given in the next, as a real map holds them in
    some form; the kernel reads its box through the map it was passed, not a pointer."""

    cuuint64_t = cuuint32_t = Word
    CUtensorMapDataType = _enums("DATA_TYPE", "UINT8", "UINT16", "UINT32")
    CUtensorMapInterleave = _enums("INTERLEAVE", "NONE")
    CUtensorMapSwizzle = _enums("SWIZZLE", "NONE", "32B", "64B", "128B")
    CUtensorMapL2promotion = _enums("L2_PROMOTION", "NONE")
    CUtensorMapFloatOOBfill = _enums("FLOAT_OOB_FILL", "NONE")

    PARAMS = (8, 8, 128)  # two pointers, then the map by value

    def __init__(self) -> None:
        super().__init__()
        self.encoded: list[tuple] = []

    def cuTensorMapEncodeTiled(self, dtype, rank, address, dims, strides, box, element_strides,
                               interleave, swizzle, l2, oob):
        assert all(isinstance(w, Word) for w in (*dims, *strides, *box, *element_strides))
        self.log.append(("encode", None))
        self.encoded.append((dtype, rank, address, [int(d) for d in dims],
                             [int(s) for s in strides], [int(b) for b in box], swizzle))
        words = [address, int(box[0]) | int(box[1]) << 16, *range(14)]
        return (*OK, SimpleNamespace(opaque=[Word(w) for w in words]))

    def cuModuleGetFunction(self, module, name: bytes):
        return (*OK, self.box_copy)

    def box_copy(self, tile: int, out: int, tensor_map: bytes) -> None:
        """Copies the box the map describes to `out`: rows of box[0] bytes, PITCH apart."""
        address, box = (int.from_bytes(tensor_map[8 * i:8 * i + 8], "little") for i in (0, 1))
        width, rows = box & 0xFFFF, box >> 16
        got = b"".join(self.words(address, ROWS * PITCH // 4).tobytes()[r * PITCH:][:width]
                       for r in range(rows))
        self.words(out, len(got) // 4)[:] = np.frombuffer(got, np.uint32)

@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> MapDriver:
    driver = MapDriver()
    monkeypatch.setattr(ops_cuda, "_driver", lambda: driver)
    return driver


def launch() -> Launch:
    return Launch({"tile": TILE}, {"out": 32}, threads=32, block=32, tensor_maps={"map": MAP})


def kernel() -> Kernel:
    return Kernel("box", "box", Path("k.cu"), "nvidia", Evidence(None), text="// box")


def run(backend: ops_cuda.CudaBackend) -> np.ndarray:
    return backend.run(CodeObject("sm_90", b"fake cubin", {}, {}), kernel(), launch(),
                       POISONS[0])["out"]


def test_the_map_is_encoded_over_the_copied_payload_and_passed_after_the_pointers(gpu) -> None:
    backend = ops_cuda.CudaBackend()
    out = run(backend)
    calls = [call for call, _ in gpu.log]
    assert calls[:calls.index("launch") + 1] == ["HtoD", "memset", "memset", "encode", "launch"]
    assert {stream for call, stream in gpu.log if call != "encode"} - {0} == {STREAM}
    tile = FakeDriver.BASE + 4 * GUARD_WORDS  # the first buffer's payload, past its guard
    assert gpu.encoded == [("DATA_TYPE_UINT8", 2, tile, [PITCH, ROWS], [PITCH], [32, 4],
                            "SWIZZLE_32B")]
    assert int.from_bytes(gpu.params[0], "little") == tile
    assert int.from_bytes(gpu.params[2][:8], "little") == tile
    rows = TILE.view(np.uint8).reshape(ROWS, PITCH)[:4, :32]
    assert np.array_equal(out.view(np.uint8), rows.reshape(-1))
    (entry,) = backend.tensor_maps
    assert entry["param"] == "map" and entry["address"] == f"{tile:#x}"
    assert entry["bytes"] == gpu.params[2].hex() and entry["swizzle"] == 32
    assert entry["box"] == [32, 4] and entry["strides"] == [PITCH]


def test_a_refused_encoding_stops_the_run_and_frees_every_buffer(gpu, monkeypatch) -> None:
    monkeypatch.setattr(gpu, "cuTensorMapEncodeTiled",
                        lambda *args: (CUresult.CUDA_ERROR_INVALID_VALUE, None))
    with pytest.raises(IntegrityError, match=r"cuTensorMapEncodeTiled\(map\)"):
        run(ops_cuda.CudaBackend())
    assert "launch" not in [call for call, _ in gpu.log] and len(gpu.freed) == 2


def test_the_simulated_device_hands_the_declared_maps_to_the_probes_law() -> None:
    seen = {}

    def law(kernel, inputs, tensor_maps):
        seen.update(tensor_maps)
        return {"out": np.zeros(32, np.uint32)}

    sim = ops_sim.SimBackend(SimpleNamespace(id="toy", version="1", simulate=law), "sm_90")
    sim.run(sim.compile(kernel(), "sm_90"), kernel(), launch(), POISONS[0])
    assert seen == {"map": MAP}
    assert sim.tensor_maps == [{"param": "map", **MAP.record()}]


def test_hip_refuses_a_launch_with_tensor_maps_before_touching_a_device() -> None:
    with pytest.raises(UsageError, match="no tensor memory accelerator"):
        ops_hip.HipBackend().run(CodeObject("gfx942", b"", {}, {}), kernel(), launch(),
                                 POISONS[0])


@pytest.mark.parametrize(("change", "why"), [
    ({"box": (64, 4)}, "within the span"), ({"box": (8, 4)}, "multiple of 16"),
    ({"strides": (40,)}, "multiple of 16"), ({"swizzle": 16}, "swizzle one of"),
    ({"interleave": "32B"}, "interleave NONE"), ({"element_strides": (1, 9)}, "1 to 8")])
def test_a_map_the_driver_would_refuse_is_refused_before_any_device(change, why) -> None:
    fields = {**MAP.record(), **change}
    with pytest.raises(ValueError, match=why):
        TensorMap(fields["buffer"], fields["dtype"], tuple(fields["dims"]),
                  tuple(fields["strides"]), tuple(fields["box"]),
                  tuple(fields["element_strides"]), fields["swizzle"], fields["interleave"])


def test_a_map_past_its_buffer_is_refused() -> None:
    with pytest.raises(ValueError, match="must give in full"):
        Launch({"tile": TILE[:-1]}, {"out": 32}, threads=32, tensor_maps={"map": MAP})


@pytest.mark.parametrize(("dims", "strides", "reach"), [
    ((256, 2), (16,), 16 + 256),  # rows wider than their stride overlap past the last one
    ((16, 64, 2), (4096, 16), 63 * 4096 + 16 + 16)])  # strides out of order
def test_a_map_whose_strides_reach_past_its_buffer_is_refused(dims, strides, reach) -> None:
    """Its extent is its last byte, not the outermost stride times its dim: these maps read
    `reach` bytes over a 32-byte buffer, into its guard words and past them."""
    spec = TensorMap("tile", "UINT8", dims, strides, (16,) + (1,) * (len(dims) - 1),
                     (1,) * len(dims))
    assert spec.extent == reach
    with pytest.raises(ValueError, match="must give in full"):
        Launch({"tile": np.zeros(8, np.uint32)}, {"out": 32}, threads=32,
               tensor_maps={"map": spec})
