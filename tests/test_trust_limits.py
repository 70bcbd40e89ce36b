"""Trust under attack, part 4: hostile files that cost time or memory, or are valid only where
they happen to be evaluated, or talk to the terminal. Each is refused before the cost is
paid (exit 2), or becomes one item's problem while the rest is still judged."""

import json
import tracemalloc
from pathlib import Path

import h5py
import numpy as np
import pytest
import xarray as xr
from toylab import ToyLab, invoke

from probelab import dataset, ledger, prereg
from probelab.errors import UsageError
from probelab.expr import compile_program
from probelab.hypothesis import evaluate_claim, parse_hypothesis, retired_observables
from probelab.notary import words
from probelab.notary.problems import rules
from probelab.notary.rules import Rule
from probelab.verify import rel, verify_archive

ESC = "\x1b"


def big_grid() -> xr.Dataset:
    """A grid the size of byte-perm's (2**20 cells)."""
    return xr.Dataset(coords={"a": ("a", np.arange(1024, dtype=np.uint32)),
                              "b": ("b", np.arange(1024, dtype=np.uint32))})


def hypothesis(body: str):
    head = 'schema = 1\nid = "h"\nprobe = "toy"\nclaim = "c"\ncoordinates = "raw"\n'
    return parse_hypothesis(Path("h.toml"), (head + body).encode())


def refused_within(megabytes: int, run) -> str:
    """Run `run`, which must raise UsageError, and show that nothing big was allocated
    before it did (numpy's allocations are traced too)."""
    tracemalloc.start()
    try:
        with pytest.raises(UsageError) as caught:
            run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < megabytes * 2**20, f"{peak / 2**20:.0f} MB allocated before refusing"
    return str(caught.value)


# ---- 8. resource exhaustion -----------------------------------------------------------------


def test_511_chained_lets_are_refused_before_any_is_evaluated() -> None:
    lets = "\n".join(['l0 = "a + 1"', *(f'l{i} = "l{i - 1} + 1"' for i in range(1, 511))])
    h = hypothesis(f'[let]\n{lets}\n[predict]\nvalue = "l510"\n')
    why = refused_within(64, lambda: evaluate_claim(h, big_grid(), {"value": ("a", "b")}))
    assert "too large to evaluate" in why


@pytest.mark.slow
def test_comparison_chains_times_translations_are_refused_by_their_cost() -> None:
    chain = " < ".join(["a", "b"] * 300)  # 599 comparisons
    lets = "\n".join(f'l{i} = "{chain}"' for i in range(8))
    translations = "".join(f'[translations.t{i}]\na = "b"\n' for i in range(8))
    total = " + ".join(f"l{i}" for i in range(8))
    h = hypothesis(f'[let]\n{lets}\n[predict]\nvalue = "{total}"\n{translations}')
    why = refused_within(64, lambda: evaluate_claim(h, big_grid(), {"value": ("a", "b")}))
    assert "too costly to evaluate" in why and "node-cells" in why


@pytest.mark.slow  # every sealed file of the archive evaluated on its grid: 400 claims, 95 s
def test_the_bounds_leave_room_for_every_sealed_hypothesis(repo_lab) -> None:
    """The largest real claims (byte-perm over 2**20 cells) stay inside the bounds."""
    from probelab.hypothesis import Evaluations
    from probelab.paths import lab_root

    claims = Evaluations()  # each probe's grid made once, as a verify makes it
    for entry in ledger.read(lab_root() / "preregistrations" / "LEDGER.jsonl"):
        h = parse_hypothesis(Path(entry["path"]), (lab_root() / entry["path"]).read_bytes())
        if not retired_observables(h):
            prereg.evaluate(h, claims)  # raises if it is too costly


@pytest.mark.parametrize("text", [
    "x." * 43_000 + "y = 1",  # one dotted key: quadratic in tomllib (93 s, 7.9 GB)
    "x = " + "[" * 100_000 + "]" * 100_000,  # RecursionError inside tomllib
    "x = " + "{a = " * 5_000 + "1" + "}" * 5_000,
], ids=["dotted-key", "nested-arrays", "nested-inline-tables"])
def test_hostile_toml_structure_is_refused_before_parsing(toylab: ToyLab, text: str) -> None:
    path = toylab.root / "preregistrations" / "toy" / "evil.toml"
    path.write_text(text)
    result = invoke("check", path, toylab.sim_dataset())
    assert result.exit_code == 2 and "refused before parsing" in result.stderr, result.stderr
    assert refused_within(16, lambda: parse_hypothesis(path, path.read_bytes()))


def _huge_declared_dataset(path: Path) -> None:
    """A few KB of file that declares a 4 GiB variable (chunked, never written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with h5py.File(path, "w") as handle:
        handle.create_dataset("value", shape=(2**30,), dtype="u4", chunks=(2**16,))
        handle.attrs["probelab_schema"] = dataset.SCHEMA
        handle.attrs["provenance"] = json.dumps({"probe": "toy", "simulated": False})


def test_a_dataset_declaring_4_gib_is_refused_before_reading(toylab: ToyLab) -> None:
    path = toylab.data / "toy" / "sm_90" / "20261201T000000Z.nc"
    _huge_declared_dataset(path)
    assert path.stat().st_size < 64 * 1024
    why = refused_within(16, lambda: dataset.load(path))
    assert "declares 4,294,967,296 bytes" in why
    hyp = toylab.write_hyp("sum", "a + b")
    prereg.seal(hyp)
    assert invoke("check", hyp, path).exit_code == 2
    (refused,) = verify_archive()["problems"]
    assert refused.rules == {Rule.DATASET_REFUSED} and "declares" in refused.findings[0].detail


# ---- 11. hostile hypothesis files -----------------------------------------------------------


@pytest.mark.parametrize("let", [
    "unused = \"__import__('os').system('touch PWNED')\"",
    'unused = "a.__class__"',
    'True = "1"',
    'unused = "b[0]"',
    '"\N{CYRILLIC SMALL LETTER HA}" = "a"',  # reads as x
    'y = "\N{CYRILLIC SMALL LETTER HA} + a"',
], ids=["import", "dunder", "keyword-name", "subscript", "cyrillic-name", "cyrillic-use"])
def test_every_helper_must_be_valid_even_if_nothing_uses_it(toylab: ToyLab, let: str) -> None:
    path = toylab.root / "preregistrations" / "toy" / "sneaky.toml"
    path.write_text('schema = 1\nid = "sneaky"\nprobe = "toy"\nclaim = "c"\n'
                    f'coordinates = "raw"\n[let]\n{let}\n[predict]\nvalue = "a + b"\n')
    result = invoke("prereg", "seal", path)
    assert result.exit_code == 2, result.stdout
    assert not toylab.ledger.exists() and not (toylab.root / "PWNED").exists()


def test_a_translation_for_a_coordinate_nothing_has_is_still_checked(toylab: ToyLab) -> None:
    path = toylab.write_hyp("t", "a + b", translations={"t": {"a": "__import__('os')"}})
    assert invoke("prereg", "seal", path).exit_code == 2


def test_terminal_escapes_cannot_be_sealed(toylab: ToyLab) -> None:
    path = toylab.write_hyp("loud", "a + b", claim=f"{ESC}[1A{ESC}[2KCONFIRMED")
    result = invoke("prereg", "seal", path)
    assert result.exit_code == 2 and "U+001B" in result.stderr
    assert ESC not in result.stdout + result.stderr


def test_no_output_lets_a_control_character_through(toylab: ToyLab) -> None:
    """Text from a dataset or a recorded verdict reaches the terminal escaped."""
    hyp = toylab.write_hyp("sum", "a + b")
    prereg.seal(hyp)
    data = toylab.as_measured(toylab.sim_dataset(), device=f"NVIDIA {ESC}[2J{ESC}]0;pwned\a")
    results = [invoke("check", hyp, data), invoke("report", data), invoke("verify"),
               invoke("check", hyp, data, "--json")]
    assert [r.exit_code for r in results] == [0, 0, 0, 0]
    for r in results:
        assert ESC not in r.stdout + r.stderr and "\a" not in r.stdout + r.stderr
    assert "\\x1b[2J" in results[0].stdout


# ---- 12. malformed items are that item's problem ---------------------------------------------


def test_a_forged_ledger_line_with_a_naive_time_is_one_problem(toylab: ToyLab) -> None:
    hyp = toylab.write_hyp("sum", "a + b")
    prereg.seal(hyp)
    toylab.as_measured(toylab.sim_dataset())
    forged = toylab.write_hyp("forged", "a + b + 0")
    (entry,) = ledger.read(toylab.ledger)
    line = {k: v for k, v in entry.items() if k != "hash"} | {
        "seq": 2, "prev": entry["hash"], "hypothesis": "forged",
        "path": "preregistrations/toy/forged.toml",
        "file_sha256": parse_hypothesis(forged, forged.read_bytes()).sha256,
        "sealed_at": "2026-01-01T00:00:00"}
    line["hash"] = ledger.entry_hash(line)
    with open(toylab.ledger, "a") as handle:
        handle.write(ledger.canonical(line).decode() + "\n")
    result = verify_archive()
    verdicts = {r["hypothesis"]: r["verdict"] for r in result["checks"]}
    assert verdicts == {"sum": "CONFIRMED", "forged": "POST-HOC"}
    assert ("preregistrations/toy/forged.toml", True, {Rule.SEALED_AT_AMBIGUOUS}) in \
        [(p.at, p.seal, p.rules) for p in result["problems"]]
    assert invoke("verify").exit_code == 3


def test_a_dataset_without_a_kernel_coordinate_is_one_problem(toylab: ToyLab) -> None:
    hyp = toylab.write_hyp("sum", "a + b")
    prereg.seal(hyp)
    good = toylab.as_measured(toylab.sim_dataset())
    odd = good.with_name("20200101T000000Z.nc")
    ds = dataset.load(good).isel(kernel=0, drop=True)
    ds.to_netcdf(odd, engine=dataset.ENGINE)
    result = verify_archive()
    (refused,) = result["problems"]
    assert (refused.at, refused.rules) == (rel(odd), {Rule.DATASET_REFUSED})
    assert "no `kernel` coordinate" in words.said(refused)
    assert [r["verdict"] for r in result["checks"]] == ["CONFIRMED"]  # the rest is judged
    assert invoke("check", hyp, odd).exit_code == 2


# ---- second pass: what a red-team review of the fixes found -----------------------------


def test_a_sealed_file_replaced_by_a_link_to_a_device_is_tampered(toylab: ToyLab) -> None:
    hyp = toylab.write_hyp("sum", "a + b")
    prereg.seal(hyp)
    data = toylab.as_measured(toylab.sim_dataset())
    hyp.unlink()
    hyp.symlink_to("/dev/zero")
    assert invoke("prereg", "verify").exit_code == 3
    record = prereg.Record.read()
    (entry,) = record.entries
    assert [f.rule for f in prereg.seal_findings(entry, record)[0]] == [Rule.SEAL_REPLACED]
    result = invoke("check", hyp, data, "--json")
    assert result.exit_code == 3 and json.loads(result.stdout)["verdict"] == "TAMPERED"
    assert Rule.SEAL_REPLACED in rules(verify_archive()["problems"])


@pytest.mark.slow
def test_hashing_a_dataset_stays_in_bounded_memory(toylab: ToyLab) -> None:
    """100 MB of uint8 (widened to int64 for the hash) is hashed chunk by chunk."""
    path = toylab.root / "sim-data" / "wide.nc"
    path.parent.mkdir()
    values = np.zeros((1, 100 * 2**20), np.uint8)
    ds = xr.Dataset({"value": (("kernel", "i"), values)},
                    coords={"kernel": ("kernel", np.array(["k"]))})
    dataset.save(ds, path, {"probe": "toy", "simulated": True})
    loaded = dataset.load(path)
    tracemalloc.start()
    try:
        dataset.computed_content_sha256(loaded)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, f"{peak / 2**20:.0f} MB to hash 100 MB"


def test_a_dataset_of_millions_of_strings_is_refused_before_reading(toylab: ToyLab) -> None:
    path = toylab.root / "sim-data" / "texts.nc"
    path.parent.mkdir()
    with h5py.File(path, "w") as handle:
        handle.create_dataset("label", shape=(9 * 2**20,), dtype="S1", chunks=(2**16,))
        handle.attrs["probelab_schema"] = dataset.SCHEMA
    with pytest.raises(UsageError, match="text elements"):
        dataset.load(path)


@pytest.mark.parametrize("text", [
    'x = ["""a""""' + ", k" + ".k" * 40 + " = 1]",
    'x = {y = """a"""", z = ' + "[" * 40 + "]" * 40 + "}",
], ids=["dotted-key", "nesting"])
def test_extra_closing_quotes_do_not_blind_the_pre_scan(text: str) -> None:
    with pytest.raises(UsageError, match="refused before parsing"):
        parse_hypothesis(Path("h.toml"), text.encode())


def test_a_deeply_nested_provenance_is_one_problem(toylab: ToyLab) -> None:
    hyp = toylab.write_hyp("sum", "a + b")
    prereg.seal(hyp)
    toylab.as_measured(toylab.sim_dataset())
    odd = toylab.data / "toy" / "sm_90" / "20200101T000000Z.nc"
    ds = dataset.load(toylab.sim_dataset())
    ds.attrs["provenance"] = "[" * 50_000 + "]" * 50_000
    ds.attrs["probelab_schema"] = dataset.SCHEMA
    ds.to_netcdf(odd, engine=dataset.ENGINE)
    result = verify_archive()
    assert [(p.at, p.rules) for p in result["problems"]] == [(rel(odd),
                                                              {Rule.DATASET_REFUSED})]
    assert [r["verdict"] for r in result["checks"]] == ["CONFIRMED"]


def test_report_of_a_minimal_forged_verdict_is_marked_not_crashed_on(toylab: ToyLab) -> None:
    forged = toylab.data / "toy" / "sm_90" / "x.sum.verdict.json"
    forged.parent.mkdir(parents=True)
    forged.write_text(json.dumps({"verdict": "CONFIRMED", "hypothesis": {"path": "nope"},
                                  "dataset": {"path": "nope.nc"}}))
    result = invoke("report", forged)
    assert result.exit_code == 3 and "NOT RE-VERIFIED" in result.stdout
    assert "CONFIRMED" not in result.stdout


def test_a_large_grid_is_evaluated_in_blocks_that_give_the_one_go_tables_and_hash() -> None:
    """Memory stays bounded on a large grid (the N = 256 lane-id claims: 67 M cells): tables
    are computed a block at a time, in C order, each block with a bounded number of values
    alive; put together, blocks of any size give the one-go tables, and their streamed hash
    is the hash of the whole tables (what a seal records)."""
    from probelab.hypothesis import TableHash, stream_claim, table_sha256

    h = hypothesis('where = "a != b"\n[let]\nx = "a * 3 + b"\n[predict]\n'
                   'value = "x % 7 == 1"\nconst = "5"\n[translations.swap]\na = "b"\nb = "a"\n')
    observables = {"value": ("a", "b"), "const": ("a", "b")}
    small = big_grid().isel(a=slice(0, 40), b=slice(0, 24))
    # one cell per block, odd runs, rows, one block
    for grid, values in ((small, 1), (small, 7), (small, 100), (big_grid(), 40_000),
                         (big_grid(), 1 << 30)):
        whole, scopes = evaluate_claim(h, grid, observables)
        sealed = table_sha256(whole, scopes)
        hasher, pieces = TableHash(True), list(stream_claim(h, grid, observables, values))
        for piece in pieces:
            hasher.feed(piece)
            assert piece.values.size <= max(1, values)  # alive per cell: 1 at least
        assert hasher.hexdigest() == sealed, values
        for scoring in whole:
            for name in observables:
                got = np.zeros(whole[scoring][name].shape, np.uint32)
                claimed = np.zeros(got.shape, bool)
                for piece in (p for p in pieces if (p.scoring, p.observable) == (scoring, name)):
                    got[piece.index], claimed[piece.index] = piece.values, piece.scope
                assert np.array_equal(got, whole[scoring][name]), (values, scoring, name)
                assert np.array_equal(claimed, scopes[scoring][name])
        if values < 1 << 30:  # in blocks indeed
            assert len(pieces) > 2 * 2 * len(observables)


def test_work_is_counted_over_the_dims_each_definition_spans() -> None:
    """Helpers over one axis are computed over that axis (broadcast views are compact), so
    they cost their nodes x 1,024, not x 2**20: 20 helpers of ~450 nodes over `a` alone are
    evaluated (counted over the whole grid they came to 1.8e10 node-cells, past the bound)
    and give the table plain numpy gives, under a translation too (a translated coordinate
    stays over its own axes); the same helpers over both axes are refused, as before."""
    terms = " + ".join(["(" + " + ".join(["a"] * 15) + ")"] * 15)  # 225 a, ~30 deep
    lets = "\n".join(['x0 = "a + 1"', *(f'x{i} = "(x{i - 1} + {terms}) % 1000003"'
                                         for i in range(1, 20))])
    h = hypothesis(f'[let]\n{lets}\n[predict]\nvalue = "(x19 & 7) == b % 8"\n'
                   '[translations.t]\na = "1023 - a"\n')
    tables, _ = evaluate_claim(h, big_grid(), {"value": ("a", "b")})

    def expected(a: np.ndarray) -> np.ndarray:
        x = a + 1
        for _ in range(1, 20):
            x = (x + 225 * a) % 1000003
        return ((x & 7)[:, None] == (np.arange(1024) % 8)[None, :]).astype(np.uint32)

    a = np.arange(1024, dtype=np.int64)
    np.testing.assert_array_equal(tables["literal"]["value"], expected(a))
    np.testing.assert_array_equal(tables["t"]["value"], expected(1023 - a))
    both = hypothesis(f'[let]\n{lets.replace("+ 1", "+ b")}\n[predict]\n'
                      'value = "x19 + b"\n'.replace(f"{terms})", f"{terms} + b)"))
    why = refused_within(64, lambda: evaluate_claim(both, big_grid(), {"value": ("a", "b")}))
    assert "too costly to evaluate" in why


def test_a_compact_evaluation_broadcasts_to_the_full_one() -> None:
    program = compile_program([("h", "a * 2"), ("v", "h + b")], ["a", "b"])
    env = {"a": np.broadcast_to(np.arange(4)[:, None], (4, 5)),
           "b": np.broadcast_to(np.arange(5)[None, :], (4, 5))}
    full, small = program.evaluate(env), program.evaluate(env, compact=True)
    assert small["h"].shape == (4, 1) and full["h"].shape == (4, 5)
    for name in ("h", "v"):
        np.testing.assert_array_equal(np.broadcast_to(small[name], (4, 5)), full[name])


def test_claims_on_one_dataset_are_walked_side_by_side_as_each_alone(monkeypatch) -> None:
    """Several claims on one dataset whose observed values are read as a slab: walked side
    by side (verify's prescore), the slab is read once for all of them, not once per claim,
    and every claim gets the table hash and scores it gets alone; a claim whose evaluation
    is refused gives its error in its place, the others are unchanged."""
    from probelab import hypothesis as claims_module
    from probelab import scoring

    grid = big_grid().isel(a=slice(0, 64), b=slice(0, 48))
    observed = (grid.a * 3 + grid.b) % 7  # two kernels; kernel k1 differs where a == 5
    ds = xr.Dataset({"value": (("kernel", "a", "b"), np.stack(
        [observed.values, np.where(grid.a.values[:, None] == 5, 0, observed.values)]
    ).astype(np.uint32))}, coords={"kernel": ["k0", "k1"], **grid.coords})
    monkeypatch.setattr(claims_module, "PIECE_VALUES", 500)  # many blocks to take turns with
    monkeypatch.setattr(scoring, "MISMATCHES_SHOWN", 3)
    observables = {"value": ("a", "b")}
    claims = [hypothesis('[predict]\nvalue = "(a * 3 + b) % 7"\n'
                         '[translations.swap]\na = "b"\nb = "a"\n'),
              hypothesis('[predict]\nvalue = "(a * 3 + b) % 7 + (a == 6)"\n'),
              hypothesis('[predict]\nvalue = "a // (b - b)"\n'),  # refused when evaluated
              hypothesis('where = "b > 3"\n[predict]\nvalue = "(a * 3 + b) % 7"\n')]
    reads: list[tuple[int, ...]] = []
    real = scoring._Observed._read
    monkeypatch.setattr(scoring._Observed, "_read",
                        staticmethod(lambda var: reads.append(var.shape) or real(var)))
    alone = []
    for h in claims:
        try:
            alone.append(scoring.score_claim(h, grid, observables, [(ds, ["k0", "k1"])]))
        except UsageError as exc:
            alone.append(str(exc))
    assert len(reads) == 3  # once per claim that reached the data
    reads.clear()
    together = scoring.score_claims([(h, grid, observables, [(ds, ["k0", "k1"])])
                                     for h in claims])
    assert [str(t) if isinstance(t, Exception) else t for t in together] == alone
    assert reads == [ds.value.shape]  # once for all of them
    assert "modulo by zero" in alone[2]
    k1 = alone[0][1][0]["kernels"]["k1"]
    assert k1["literal"]["cells"] - k1["literal"]["matches"] == \
        int((observed.values[5] != 0).sum())
    assert len(k1["literal"]["first_mismatches"]) == 3 and k1["swap"]["matches"] < 64 * 48


def test_a_slab_walked_again_by_a_second_scoring_is_read_once(monkeypatch) -> None:
    """A claim with two scorings over two observables walks each observable's slabs once per
    scoring, the second walk after the other observable's: while the room holds them all
    each slab is read once (per kernel where a variable is too large whole), with the scores
    it gets block by block; with room for one slab only, each is read again (never more
    than the room at once)."""
    from probelab import hypothesis as claims_module
    from probelab import scoring

    grid = big_grid().isel(a=slice(0, 64), b=slice(0, 48)).assign_coords(kernel=["k0", "k1"])
    value = ((grid.a * 3 + grid.b) % 7).values.astype(np.uint32)
    ds = xr.Dataset({"v": (("kernel", "a", "b"), np.stack([value, value ^ 1])),
                     "w": (("kernel", "a"), np.stack([grid.a.values] * 2).astype(np.uint32))},
                    coords=grid.coords)
    monkeypatch.setattr(claims_module, "PIECE_VALUES", 500)  # many blocks a kernel
    h = hypothesis('[predict]\nv = "(a * 3 + b) % 7"\nw = "a"\n'
                   '[translations.flip]\na = "63 - a"\n')
    observables = {"v": ("kernel", "a", "b"), "w": ("kernel", "a")}  # as lane-id ones are
    reads: list[tuple[int, ...]] = []
    real = scoring._Observed._read
    monkeypatch.setattr(scoring._Observed, "_read",
                        staticmethod(lambda var: reads.append(var.shape) or real(var)))
    kernel = ds.v[0].nbytes
    monkeypatch.setattr(scoring, "SLAB_BYTES", ds.v.nbytes + ds.w.nbytes)  # room for both
    room = scoring.score_claim(h, grid, observables, [(ds, ["k0", "k1"])])
    assert sorted(reads) == sorted([ds.v.shape, ds.w.shape])
    reads.clear()
    monkeypatch.setattr(scoring, "SLAB_BYTES", kernel)  # v per kernel, one slab at a time
    tight = scoring.score_claim(h, grid, observables, [(ds, ["k0", "k1"])])
    assert tight == room and reads == [ds.v[0].shape, ds.v[1].shape, ds.w.shape] * 2
    monkeypatch.setattr(scoring, "SLAB_BYTES", 0)  # nothing kept: block by block
    assert scoring.score_claim(h, grid, observables, [(ds, ["k0", "k1"])]) == room
    k1 = room[1][0]["kernels"]["k1"]["literal"]
    assert k1["cells"] == 64 * 48 + 64 and k1["matches"] == 64  # v ^ 1 never, w always


def test_the_slabs_of_a_grids_datasets_are_bounded_together(monkeypatch) -> None:
    """A claim scored on many datasets of one grid (copies of one measurement) keeps at most
    SLAB_BYTES of their values at once: beyond it a dataset is read block by block, with
    the scores it has alone."""
    from probelab import scoring

    grid = big_grid().isel(a=slice(0, 32), b=slice(0, 16))
    copies = [xr.Dataset({"value": (("kernel", "a", "b"), np.stack(
        [((grid.a * 3 + grid.b + n) % 7).values]).astype(np.uint32))},
        coords={"kernel": ["k0"], **grid.coords}) for n in range(3)]
    monkeypatch.setattr(scoring, "SLAB_BYTES", copies[0].value.nbytes)  # room for one
    h = hypothesis('[predict]\nvalue = "(a * 3 + b) % 7"\n')
    observables = {"value": ("a", "b")}
    alone = [scoring.score_claim(h, grid, observables, [(ds, ["k0"])])[1][0] for ds in copies]
    slabs: list[tuple[int, ...]] = []
    real = scoring._Observed._read
    monkeypatch.setattr(scoring._Observed, "_read",
                        staticmethod(lambda var: slabs.append(var.shape) or real(var)))
    _, together = scoring.score_claim(h, grid, observables, [(ds, ["k0"]) for ds in copies])
    assert together == alone and slabs == [copies[0].value.shape]
    assert [s["kernels"]["k0"]["literal"]["matches"] for s in together] == \
        [32 * 16] + [int((((grid.a * 3 + grid.b + n) % 7) == ((grid.a * 3 + grid.b) % 7))
                          .sum()) for n in (1, 2)]
