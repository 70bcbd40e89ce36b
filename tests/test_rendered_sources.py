"""Kernel sources a kit renders from a probe's declarations (probelab.probe.Rendered) are kept
in no file, so the archive vouches for them: every archived dataset whose kernel record names
a rendered source's path recorded the sha256 of the bytes it compiled (`source_sha256`) and,
where it records its code_tree, the git blob of the file then committed. Rendering today
reproduces both byte for byte, for every such dataset, so the archive's sources are provably
the renderer's output; and every rendered path is one the archive names, so no rendered
source goes unchecked. `probelab source` prints what a build compiles."""

import hashlib
from collections import defaultdict
from pathlib import Path

import pytest
from archive import ROOT, needs_archive
from typer.testing import CliRunner

from probelab import manifest, vendors
from probelab.cli import app
from probelab.codetree import blob_id
from probelab.dataset import stored_provenance
from probelab.paths import shown
from probelab.probe import catalog, kernel_sources


def _rendered() -> tuple[dict[str, bytes], dict[str, set[str]]]:
    """{shown path: rendered bytes} of every rendered kernel source of every probe, and
    {shown path: the ids of the probes that render it}."""
    found: dict[str, bytes] = {}
    probes: dict[str, set[str]] = defaultdict(set)
    for probe in catalog().probes.values():
        texts = {k.source: k.text for v in vendors.TARGETS for k in probe.kernels(v)}
        for path, text in texts.items():
            if text is not None:
                found[shown(path)] = text.encode()
                probes[shown(path)].add(probe.id)
    return found, probes


def _archived() -> dict[str, set[tuple[str, str | None]]]:
    """{source path: {(source_sha256, code_tree blob or None)}} over the archive's datasets,
    each read bounded (its provenance attribute alone)."""
    named: dict[str, set[tuple[str, str | None]]] = defaultdict(set)
    for entry in manifest.read():
        prov = stored_provenance(ROOT / entry["path"])
        tree = prov.get("code_tree") or {}
        for record in prov["kernels"].values():
            named[record["source"]].add((record["source_sha256"], tree.get(record["source"])))
    return named


@needs_archive
def test_every_rendered_source_is_byte_for_byte_what_the_archive_compiled() -> None:
    (rendered, probes), archived = _rendered(), _archived()
    assert rendered, "no probe renders its kernel source: the test would check nothing"
    measured = {entry["path"].split("/")[1] for entry in manifest.read()}
    for path, data in rendered.items():
        assert not (ROOT / path).exists(), f"{path} is rendered: a file there is a stale copy"
        # a probe not yet measured has nothing to vouch for it: its first sweep records the
        # rendered bytes' sha256, and from then on this test holds it to them
        assert archived[path] or not probes[path] & measured, \
            f"{path}: no archived dataset names it, so nothing vouches for what it renders"
        want = (hashlib.sha256(data).hexdigest(), blob_id(data))
        for sha, blob in archived[path]:
            assert (sha, blob or want[1]) == want, f"{path}: rendering differs from the " \
                                                  f"source an archived dataset compiled ({sha})"


def test_a_sweep_compiles_and_records_the_rendered_text(tmp_path: Path) -> None:
    """Its dataset names the rendered path and hashes the rendered bytes, as for a file; the
    simulated device compiles (hashes) the same text."""
    from probelab.sweep import run_sweep

    kernel = catalog().get("lop3").kernels("nvidia")[0]
    assert kernel.text is not None and not kernel.source.exists()
    record = stored_provenance(run_sweep("lop3", "sim", target="sm_90",
                                         out_root=tmp_path).path)["kernels"]["lop3"]
    assert record["source"] == "probes/lop3/lop3.cu"
    assert record["source_sha256"] == hashlib.sha256(kernel.text.encode()).hexdigest()


def test_the_source_command_prints_and_writes_what_a_build_compiles(tmp_path: Path) -> None:
    path, data = next(iter(kernel_sources(catalog().get("lop3")).items()))
    printed = CliRunner().invoke(app, ["source", "lop3"])
    assert printed.exit_code == 0, printed.output
    assert hashlib.sha256(data).hexdigest() in printed.output and data.decode() in printed.output
    written = CliRunner().invoke(app, ["source", "lop3", "--write", str(tmp_path)])
    assert written.exit_code == 0, written.output
    assert (tmp_path / shown(path)).read_bytes() == data


@pytest.mark.parametrize("inside", ["probes", "probes/lop3"])
def test_the_source_command_never_writes_into_probes(inside: str) -> None:
    refused = CliRunner().invoke(app, ["source", "lop3", "--write", str(ROOT / inside)])
    assert refused.exit_code == 2 and "inside probes/" in refused.output


def test_the_source_command_never_writes_into_probes_from_a_folder_above_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sources land at DIR/<lab path>, and a lab path starts with probes/: so `--write` given
    the lab root (here a stand-in lab whose probes/ is tmp_path/probes) would put a stale
    copy inside probes/, where it counts as code that ran. Refused, nothing written."""
    import probelab.paths

    monkeypatch.setattr(probelab.paths, "probes_dir", lambda: tmp_path / "probes")
    refused = CliRunner().invoke(app, ["source", "lop3", "--write", str(tmp_path)])
    assert refused.exit_code == 2 and "inside probes/" in refused.output
    assert not (tmp_path / "probes").exists()
