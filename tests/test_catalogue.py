"""docs/catalogue.md is read like a table of measurements: every dataset, figure and export
it links is in the repository, and every measured lane-id and matrix-move dataset of the
archive has a row."""

import re
from pathlib import Path

import pytest
from archive import needs_archive

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "catalogue.md"


@needs_archive
def test_every_link_of_the_catalogue_resolves() -> None:
    links = re.findall(r"\]\(([^)#]+)\)", PAGE.read_text())
    assert links
    missing = [link for link in links if not (PAGE.parent / link).resolve().exists()]
    assert missing == []


@needs_archive
def test_every_lane_map_dataset_of_the_archive_is_in_the_catalogue() -> None:
    text = PAGE.read_text()
    measured = [p for p in (ROOT / "data").glob("*/sm_90/*.nc")
                if p.parts[-3] == "dmma-f64" or p.parts[-3].endswith("matrix-b16")
                or (p.parts[-3].startswith(("mma-", "wgmma-"))
                    and not p.parts[-3].startswith("mma-sp-"))]
    assert measured
    shown = {p.parts[-3] for p in measured if f"../{p.relative_to(ROOT).as_posix()}" in text}
    assert sorted({p.parts[-3] for p in measured} - shown) == []


def test_every_amd_device_probe_is_in_the_awaiting_hardware_table() -> None:
    """An AMD probe that needs a device appears, with the command a hardware owner runs,
    in the section that says no AMD measurement exists (static compiler probes have theirs)."""
    from probelab.probe import catalog

    section = PAGE.read_text().split("## AMD, compile-ready, awaiting hardware", 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    device = [p for p in catalog().probes.values() if not getattr(p, "static", False)
              and any(t.startswith("gfx") for t in p.targets)]
    assert len(device) > 10
    for probe in device:
        row = next((r for r in rows if f"`{probe.id}`" in r), None)
        assert row is not None, probe.id
        assert "--backend hip --check" in row, probe.id


@needs_archive
def test_a_rows_datasets_are_of_the_versions_it_says_and_its_earlier_ones_are_earlier() -> None:
    """A row's dataset is of the probe version it states, and its earlier datasets (each of
    the version it states) are listed once: other datasets of its folder, measured before
    it, never the row's own dataset again."""
    from probelab import dataset

    text = PAGE.read_text()
    said = set(re.findall(r"\]\((\.\./data/[^)]+\.nc)\) \(version (\d+)", text))
    assert said
    wrong = {(link, version) for link, version in said if str(dataset.stored_provenance(
        (PAGE.parent / link).resolve()).get("probe_version")) != version}
    assert wrong == set()
    for cell in (c for line in text.splitlines() for c in line.split(" | ")
                 if "earlier:" in c):
        assert cell.count("earlier:") == 1, cell
        own, earlier = cell.split("earlier:")
        (mine,) = map(Path, re.findall(r"\]\((\.\./data/[^)]+\.nc)\)", own))
        before = list(map(Path, re.findall(r"\]\((\.\./data/[^)]+\.nc)\)", earlier)))
        assert before and len(set(before)) == len(before), cell
        assert all(p.parent == mine.parent and p.name < mine.name for p in before), cell


FIGURED = {"prmt-modes": "prmt_modes", "lop3": "lop3", "shf": "shf", "bfe-bfi": "bfe_bfi",
           "bit-scan": "bit_scan", "bmsk": "bmsk", "fns": "fns",
           **{f"tma-swizzle-b{n}": "tma_swizzle" for n in (8, 16, 32)}}


@needs_archive
def test_the_bit_op_and_tma_probes_figures_are_linked_and_drawn_from_their_datasets() -> None:
    """Issue 39's bit-op and TMA families: the catalogue and each probe's README link a
    figure of the probe (every link of the README resolving), drawn from a pinned dataset of
    that probe (its stamp and plot kind, as `probelab plot` names the file)."""
    from probelab import manifest
    from probelab.probe import get_probe

    pinned = {e["path"] for e in manifest.read()}
    text = PAGE.read_text()
    for probe, folder in FIGURED.items():
        readme = ROOT / "probes" / folder / "README.md"
        links = re.findall(r"\]\(([^)#]+)\)", readme.read_text())
        assert [link for link in links if not (readme.parent / link).resolve().exists()] == []
        pattern = rf"figures/[\w-]+/{probe}-sm_90/(\d{{8}}T\d{{6}}Z)\.([\w-]+)\.[\w.]+\.png"
        for where in (text, readme.read_text()):
            found = re.findall(pattern, where)
            assert found, (probe, where[:60])
            for stamp, kind in found:
                assert f"data/{probe}/sm_90/{stamp}.nc" in pinned, (probe, stamp)
                assert kind in get_probe(probe).plots, (probe, kind)


@needs_archive
@pytest.mark.slow  # ten figures drawn: 10 s
def test_the_bit_op_and_tma_figures_are_what_their_datasets_draw_now(tmp_path: Path) -> None:
    """Each committed figure of these families is, pixel for pixel, what its plot kind draws
    from its dataset today: a figure whose code or data moved on is redrawn, not left stale."""
    import xarray as xr

    from probelab.drawing import _same_pixels, save_figure
    from probelab.probe import get_probe

    figures = sorted((ROOT / "docs" / "figures").glob("*/*-sm_90/*.png"))
    figures = [f for f in figures if f.parent.name.removesuffix("-sm_90") in FIGURED]
    assert len(figures) == len(FIGURED)
    for png in figures:
        probe = png.parent.name.removesuffix("-sm_90")
        stamp, kind, name = png.name.removesuffix(".png").split(".", 2)
        with xr.open_dataset(ROOT / "data" / probe / "sm_90" / f"{stamp}.nc") as ds:
            drawn = get_probe(probe).plots[kind](ds.load())[name]
        (again, _) = save_figure(drawn, tmp_path / png.stem)
        assert _same_pixels(png.read_bytes(), again.read_bytes()), png.name
