"""The wgmma probes: their kernels' descriptors are the ones the grid declares (read from the
source and from the SASS's descriptor constants), the lane-id kit reads a shared-memory tile
with more slots than elements, and the gate holds the fence/arrive/wait discipline."""

import re

import numpy as np
import pytest
from quick import quick_first
from test_lane_id import hidden, run_unit

from probelab.formats import F16, F32
from probelab.kits.elements import Codec
from probelab.kits.lane_id.engine import Shape
from probelab.probe import get_probe

MODE = {0: 0, 128: 1, 64: 2, 32: 3}  # PTX's swizzle mode codes by swizzle bytes
# the 16-bit types under the 64- and 128-byte swizzles (issue 39 item 5)
SWIZZLED16 = [f"wgmma-{kind}-sw{w}" for kind in ("bf16-f32", "f16-f16") for w in (64, 128)]


def _declared(probe_id: str) -> dict[str, dict[str, int]]:
    return {s.name: dict(s.facts) for s in get_probe(probe_id).shapes}


def _descriptors(facts: dict[str, int]) -> list[tuple[int, int, int]]:
    """(mode code, LBO, SBO) of each tile operand the facts declare, A's first."""
    prefixes = [p for p in ("a_", "b_") if f"{p}swizzle" in facts] or [""]
    return [(MODE[facts[f"{p}swizzle"]], facts[f"{p}lbo"], facts[f"{p}sbo"]) for p in prefixes]


def _built(probe_id: str, macro: str) -> dict[str, tuple[int, ...]]:
    """kernel -> the numbers each `MACRO(probe_<kernel>, ...)` line of the probe's kernel
    source (as a build compiles it) gives."""
    text = get_probe(probe_id).kernels("nvidia")[0].source_text()
    return {name: tuple(int(x) for x in fields.split(",")) for name, fields in
            re.findall(rf"^{macro}\(probe_(\w+), ([\d, ]+)\)$", text, re.M)}


def test_each_kernel_builds_the_descriptors_its_grid_declares() -> None:
    assert _built("wgmma-f16-rs", "RS") == {
        name: (*_descriptors(f)[0], f["start"]) for name, f in _declared("wgmma-f16-rs").items()}
    assert _built("wgmma-f16-bo", "BO") == {
        name: (*_descriptors(f)[0], f["start"], f["base_offset"])
        for name, f in _declared("wgmma-f16-bo").items()}
    for macro, probe_id in (("N64", "wgmma-f16-n64"), ("MN", "wgmma-f16-mn"),
                            ("MN", "wgmma-bf16-mn")):
        assert _built(probe_id, macro) == {name: _descriptors(f)[0]
                                           for name, f in _declared(probe_id).items()}
    assert _built("wgmma-f16-ssa", "SSA") == {
        name: (*_descriptors(f)[0], f["a_trans"])
        for name, f in _declared("wgmma-f16-ssa").items()}
    assert _built("wgmma-f16-ss", "SS") == {
        name: (*sum(_descriptors(f), ()), f["b_start"])
        for name, f in _declared("wgmma-f16-ss").items()}


@pytest.mark.parametrize("probe_id", ["wgmma-f16-rs", "wgmma-f16-ss", "wgmma-f16-n64",
                                      "wgmma-f16-mn", "wgmma-f16-ssa", "wgmma-tf32-f32-sw128",
                                      "wgmma-e4m3-f32-sw128", "wgmma-s8-s32-sw128",
                                      "wgmma-bf16-mn", "wgmma-f16-bo", *SWIZZLED16])
def test_the_sass_carries_each_descriptors_swizzle_and_stride_offset(probe_id: str) -> None:
    """A descriptor's upper word (SBO >> 4 in bits 0-13, the base offset in bits 17-19, the
    mode in bits 30-31) is a constant the compiler materialises: it must be the declared
    one, in every kernel."""
    from tests.toolchains import nvidia_tools

    nvidia = nvidia_tools()
    for kernel in get_probe(probe_id).kernels("nvidia"):
        code = nvidia.build(kernel, "sm_90")
        assert code.target == "sm_90a"
        texts = [i.text for i in code.functions[kernel.symbol]]
        base = _declared(probe_id)[kernel.name].get("base_offset", 0)
        for mode, _, sbo in _descriptors(_declared(probe_id)[kernel.name]):
            high = mode << 30 | base << 17 | sbo >> 4
            assert any(re.search(rf"\b{high:#x}\b", t) for t in texts), (kernel.name, hex(high))
        # B transposed (N-major) in the MN probes only: the MMA's descriptor operand says so
        mma = [t for t in texts if "GMMA" in t]
        assert len(mma) == 1 and ("gdesc[UR4].tnspB" in mma[0]) == probe_id.endswith("-mn")
        facts = _declared(probe_id)[kernel.name]  # A transposed (M-major) where declared
        assert ("gdesc[UR4].tnspA" in mma[0]) == bool(facts.get("a_trans"))


def test_a_tile_with_more_slots_than_elements_is_recovered_and_unread_slots_stay_empty(
        ) -> None:
    codec = Codec(F16, F32)
    shapes = (Shape("tile", 64, 8, 16, 128, 8, 4, 4, codec=codec, tiles=("b",)),)
    layouts = hidden(shapes, 5)
    ds = run_unit(shapes, layouts)
    assert ds["recovered"].values.tolist() == [1] and ds["gemm_exact"].values.all()
    held = ds["b_row"].sel(kernel="tile").values >= 0
    assert held.sum() == 16 * 8 and held.size == 512
    np.testing.assert_array_equal(held, layouts["tile"].b[..., 0] >= 0)


def test_only_a_tile_may_offer_more_slots_than_elements() -> None:
    codec = Codec(F16, F32)
    with pytest.raises(ValueError, match=r"not 128 lanes x 4 values$"):
        Shape("regs", 64, 8, 16, 128, 8, 4, 4, codec=codec)
    with pytest.raises(ValueError, match="or fewer"):
        Shape("small", 64, 8, 16, 128, 8, 0, 4, codec=codec, tiles=("b",))
    with pytest.raises(ValueError, match="only A and B"):
        Shape("d", 64, 8, 16, 128, 8, 1, 4, codec=codec, tiles=("d",))


WGMMA_PROBES = ["wgmma-f16-rs", "wgmma-f16-ss", "wgmma-f16-n64", "wgmma-f16-mn",
                "wgmma-f16-ssa", "wgmma-bf16-mn", "wgmma-f16-bo",
                "wgmma-bf16-f32", "wgmma-f16-f16",
                "wgmma-tf32-f32", "wgmma-e4m3-f32", "wgmma-e5m2-f32", "wgmma-s8-s32",
                "wgmma-tf32-f32-sw128", "wgmma-e4m3-f32-sw128", "wgmma-s8-s32-sw128",
                *SWIZZLED16]


@pytest.mark.parametrize("probe_id", WGMMA_PROBES)
def test_every_kernel_passes_the_gate_with_its_fences_offline(probe_id: str) -> None:
    from probelab.asm import inspect

    reports = inspect(probe_id, "sm_90")
    assert [r.status for r in reports] == ["ok"] * len(reports) and reports, \
        [r.detail for r in reports]
    for r in reports:
        found = {c["pattern"]: len(c["found"]) for c in r.evidence["companions"]}
        assert found[r"WARPGROUP\.ARRIVE"] == 1 and found[r"WARPGROUP\.DEPBAR\.LE"] == 1


def test_a_kernel_may_ask_only_for_its_targets_own_arch_specific_variant(tmp_path) -> None:
    """sm_90a code runs on sm_90 only: a kernel asking for another GPU's code is refused
    before anything is compiled, and the code object says what it was built for."""
    from dataclasses import replace

    from probelab.errors import UsageError
    from probelab.vendors.nvidia import toolchain as nvidia

    (kernel,) = [k for k in get_probe("wgmma-f16-rs").kernels("nvidia") if k.name == "rs_none"]
    for arch in ("sm_100a", "sm_80", "sm_90b"):
        with pytest.raises(UsageError, match="does not run on sm_90"):
            nvidia.build(replace(kernel, options={"arch": arch}), "sm_90")


def test_the_tile_map_shows_what_each_16_byte_chunk_holds_and_only_for_tiles() -> None:
    """A simulated unit's hidden tile layout, read back chunk by chunk: every chunk the unit
    reads names exactly its elements' columns and k, unread chunks are blank; a register
    operand has no tile map."""
    from probelab.kits.lane_id.figures import tile_operands, tile_table
    from probelab.lanemaps import numbering_of

    codec = Codec(F16, F32)
    shapes = (Shape("tile", 64, 8, 16, 128, 8, 4, 4, codec=codec, tiles=("b",)),)
    layouts = hidden(shapes, 9)
    ds = run_unit(shapes, layouts)
    assert tile_operands(ds, "tile") == ["b"]
    lay = layouts["tile"]
    labels = {name: getattr(lay, op)[None, ..., axis] for op, names in
              (("a", ("a_m", "a_k")), ("b", ("b_k", "b_n")), ("d", ("d_m", "d_n")))
              for axis, name in enumerate(names)}
    text, colour = tile_table(ds, "tile", "b", numbering_of(ds, "tile", labels, "hidden"))
    assert text.shape == (8, 8)  # 1 KiB: eight 128-byte lines of eight 16-byte chunks
    b = lay.b.transpose(1, 0, 2).reshape(-1, 2)  # slot order
    for chunk in range(64):
        cells = b[chunk * 8:(chunk + 1) * 8]
        held = cells[cells[:, 0] >= 0]
        assert (text.reshape(-1)[chunk] == "") == (len(held) == 0)
        if len(held):
            assert colour.reshape(-1)[chunk] == held[:, 1].min()
            ns = sorted(set(held[:, 1].tolist()))
            assert text.reshape(-1)[chunk].startswith(f"n{ns[0]}")


def test_a_tile_read_whole_is_a_tile_where_the_grid_declares_its_descriptor() -> None:
    """wgmma-f16-ss reads all of A's 2 KiB tile, so no slot is left unread: its grid's
    a_swizzle coordinate is what says A came from a tile (and draws its tile map)."""
    from probelab.kits.lane_id.figures import tile_operands

    codec = Codec(F16, F32)
    shapes = (Shape("whole", 64, 8, 16, 128, 8, 4, 4, codec=codec, tiles=("a", "b")),)
    ds = run_unit(shapes, hidden(shapes, 11))
    assert tile_operands(ds, "whole") == ["b"]  # B's 512 slots hold 128 elements; A's all
    declared = ds.assign_coords(a_swizzle=("kernel", np.array([32], np.uint32)))
    assert tile_operands(declared, "whole") == ["a", "b"]
    unprefixed = ds.assign_coords(swizzle=("kernel", np.array([32], np.uint32)))  # B's, as RS
    assert tile_operands(unprefixed, "whole") == ["b"]


def _ptx_swizzled_b(shape) -> np.ndarray:
    """B's slots (lanes, values, (k, n)) as the PTX ISA's swizzled K-major layout places
    them, transcribed element by element: element (k, n) at byte n * W + 2 k of the
    unswizzled rows, its 16-byte chunk bits [4, 4 + b) XORed with the 128-byte line bits
    [7, 7 + b); slot s = byte // 2 is value s // 128 of thread s % 128; -1 where unread."""
    (tile,) = shape.smem
    b = np.full((shape.lanes, shape.b_values, 2), -1)
    for k in range(shape.K):
        for n in range(shape.N):
            at = n * tile.swizzle + 2 * k
            at ^= ((at >> 7) & (tile.swizzle // 16 - 1)) << 4
            b[(at // 2) % shape.lanes, (at // 2) // shape.lanes] = (k, n)
    return b


@pytest.mark.parametrize("probe_id", quick_first(SWIZZLED16))
def test_the_16_bit_swizzle_readings_predict_a_ptx_unit_and_their_rivals_do_not(
        probe_id: str, tmp_path, monkeypatch) -> None:
    """A simulated unit whose B tile is read as PTX's swizzle places it, byte by byte (A and
    D as the unswizzled probes measured them, from ptx-layouts' helpers): ptx-layouts and
    cute-gmma match every claimed cell, each rival misses some."""
    from pathlib import Path

    from test_wgmma_n import _documented

    from probelab.hypothesis import load_hypothesis
    from probelab.scoring import score_claim
    from probelab.sweep import run_sweep

    monkeypatch.delenv("PROBELAB_GIT_HEAD", raising=False)
    probe = get_probe(probe_id)
    root = Path(__file__).resolve().parents[1] / "preregistrations" / probe_id
    files = {p.stem: load_hypothesis(p) for p in sorted(root.glob("*.toml"))}
    (shape,) = probe.shapes
    (layout,) = _documented(probe, files["ptx-layouts"]).values()
    b = _ptx_swizzled_b(shape)
    np.testing.assert_array_equal(layout.b, b)  # the formula is the transcription
    monkeypatch.setitem(probe.sim_layouts, shape.name, layout)
    ds = run_sweep(probe_id, "sim", target="sm_90", out_root=tmp_path, repeats=2,
                   allow_blind=True).dataset
    grid = probe.stimulus()
    for hid, h in files.items():
        _, (got,) = score_claim(h, grid, probe.observables, [(ds, [shape.name])])
        literal = got["kernels"][shape.name]["literal"]
        if hid.endswith("-rival"):
            assert literal["matches"] < literal["cells"], hid
        else:
            assert literal["matches"] == literal["cells"] > 0, hid


@pytest.mark.parametrize("probe_id", quick_first(["wgmma-f16-bo", "wgmma-bf16-mn"]))
def test_a_sealed_reading_predicts_its_unit_and_its_rivals_do_not(probe_id: str, tmp_path,
                                                                 monkeypatch) -> None:
    """A simulated unit laid out as the probe's ptx-layouts says (wgmma-bf16-mn: wgmma-f16-mn's
    reading, measured for f16; wgmma-f16-bo: PTX's base offset): ptx-layouts (and cute-gmma
    where sealed) match every claimed cell of every kernel, and each rival misses some
    kernel's cells."""
    from pathlib import Path

    from test_wgmma_n import _documented

    from probelab.hypothesis import load_hypothesis
    from probelab.scoring import score_claim
    from probelab.sweep import run_sweep

    monkeypatch.delenv("PROBELAB_GIT_HEAD", raising=False)
    probe = get_probe(probe_id)
    root = Path(__file__).resolve().parents[1] / "preregistrations" / probe.id
    files = {p.stem: load_hypothesis(p) for p in sorted(root.glob("*.toml"))}
    for name, layout in _documented(probe, files["ptx-layouts"]).items():
        monkeypatch.setitem(probe.sim_layouts, name, layout)
    ds = run_sweep(probe.id, "sim", target="sm_90", out_root=tmp_path, repeats=2,
                   allow_blind=True).dataset
    kernels, grid = [s.name for s in probe.shapes], probe.stimulus()
    for hid, h in files.items():
        _, (got,) = score_claim(h, grid, probe.observables, [(ds, kernels)])
        scores = [got["kernels"][k]["literal"] for k in kernels]
        if hid.endswith("-rival"):
            assert any(s["matches"] < s["cells"] for s in scores), hid
        else:
            assert all(s["matches"] == s["cells"] > 0 for s in scores), hid
