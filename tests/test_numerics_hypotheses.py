"""A hypothesis names a numeric model as data (`[model]`: a family and its parameters); the
lab evaluates its own implementation over the grid's cases and expressions read the result
as the coordinate `model`. A model the lab does not have, a parameter it does not take and
a grid without numeric cases are refused with one clear line."""

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from probelab.errors import UsageError
from probelab.formats import FORMATS
from probelab.hypothesis import load_hypothesis, predict
from probelab.kits.numerics.stimulus import Frame, alignment, ties
from probelab.numerics.exact import encode

F16, F32 = FORMATS["f16"], FORMATS["f32"]
OBSERVABLES = {"d_bits": ("kernel", "case")}


def grid(cases) -> xr.Dataset:
    """A calibration grid: per case A's and B's 16 f16 patterns and C's f32 pattern."""
    cases = list(cases)
    a = np.array([[encode(F16, v) for v in c[1]] for c in cases], np.uint32)
    b = np.array([[encode(F16, v) for v in c[2]] for c in cases], np.uint32)
    c = np.array([encode(F32, x[3]) for x in cases], np.uint32)
    return xr.Dataset(coords={
        "kernel": ("kernel", np.array(["m16n8k16"])), "case": ("case", np.arange(len(cases))),
        "a_bits": (("case", "k"), a), "b_bits": (("case", "k"), b), "c_bits": ("case", c),
        "a_format": ((), "f16"), "b_format": ((), "f16"), "d_format": ((), "f32")})


def write(tmp_path: Path, model: str, predict_line: str = 'd_bits = "model"',
          name: str = "m") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'schema = 1\nid = "{name}"\nprobe = "numerics-toy"\nclaim = "x"\n'
                    f'coordinates = "raw"\n\n[model]\n{model}\n\n[predict]\n{predict_line}\n')
    return path


def test_a_model_hypothesis_predicts_the_labs_own_evaluation(tmp_path: Path) -> None:
    g = grid(alignment(Frame(16)))
    rz25 = predict(load_hypothesis(write(tmp_path, 'family = "fused-dot"\nfraction_bits = 25\n'
                                                   'rounding = "toward-zero"')), g, OBSERVABLES)
    rz24 = predict(load_hypothesis(write(tmp_path, 'family = "fused-dot"\nfraction_bits = 24\n'
                                                   'rounding = "toward-zero"', name="n")),
                   g, OBSERVABLES)
    got, other = rz25["literal"]["d_bits"][0], rz24["literal"]["d_bits"][0]
    assert got.shape == (g.sizes["case"],) and (got != other).any()
    one = int(np.float32(1.0).view(np.uint32))
    small = {s: int(np.float32(1.0 + 15 * 2.0**-s).view(np.uint32)) for s in range(18, 23)}
    for i, (name, *_) in enumerate(alignment(Frame(16))):
        s, sign = int(name.split("s=")[1].split()[0]), name.endswith("+")
        if sign and s in small:  # 1 + 15 * 2**-s is exact in f32 there: kept
            assert got[i] == small[s]
        if s >= 27:  # every small term below a 25-bit window: dropped, whatever its sign
            assert got[i] == one


def test_expressions_read_the_model_like_a_coordinate(tmp_path: Path) -> None:
    g = grid(ties(Frame(16)))
    model = 'family = "fused-dot"\nrounding = "nearest-even"'
    plain = predict(load_hypothesis(write(tmp_path, model)), g, OBSERVABLES)
    masked = predict(load_hypothesis(write(tmp_path, model, 'd_bits = "model & 0xFFFF"',
                                           name="n")), g, OBSERVABLES)
    np.testing.assert_array_equal(masked["literal"]["d_bits"],
                                  plain["literal"]["d_bits"] & 0xFFFF)


@pytest.mark.parametrize("model, why", [
    ('family = "magic"', "family must be one of"),
    ('family = "fused-dot"\nfraction_bits = "25"', "is not a value fused-dot takes"),
    ('family = "fused-dot"\nwindow = "min"', "takes"),
    ('family = "fused-dot"\nalign = "min"', "not a fused-dot model"),
    ('family = "fused-dot"\nresult_bits = -1', "result_bits = -1 is out of range"),
    ('family = "fused-dot"\nrounding = "sideways"', "not a fused-dot model"),
    ('family = "fma-chain"\norder = [0, true]', "is not a value fma-chain takes"),
    # issue 34.6: 2**40 was a MemoryError at seal, 2**26 still sealing after 120 s
    ('family = "fused-dot"\nfraction_bits = 1099511627776', "fraction_bits = 1099511627776 "
     "is out of range"),
    ('family = "fused-dot"\nfraction_bits = 67108864', "is out of range"),
    ('family = "fused-dot"\ngroup = 67108864', "group = 67108864 is out of range"),
    ('family = "fused-dot"\nresult_bits = 67108864', "is out of range"),
    ('family = "fma-chain"\norder = [' + ", ".join(["0"] * 9000) + "]", "order = "),
])
def test_a_model_the_lab_does_not_have_is_refused_at_load(tmp_path: Path, model: str,
                                                          why: str) -> None:
    with pytest.raises(UsageError, match=why):
        load_hypothesis(write(tmp_path, model))


def test_a_models_bits_are_bounded_by_its_grids_formats_before_any_work(
        tmp_path: Path) -> None:
    """Within the load bound, a fraction or result width past what the grid's formats can
    hold is refused before a case is evaluated (f16 x f16 + f32: 444 bits)."""
    g = grid(alignment(Frame(16)))
    for model in ("fraction_bits = 445", "result_bits = 8192"):
        h = load_hypothesis(write(tmp_path, f'family = "fused-dot"\n{model}', name="w"))
        with pytest.raises(UsageError, match=f"{model}: more than the 444 bits a sum over "
                                             "f16 x f16 \\+ f32 can hold"):
            predict(h, g, OBSERVABLES)
    edge = load_hypothesis(write(tmp_path, 'family = "fused-dot"\nfraction_bits = 444',
                                 name="e"))
    exact = load_hypothesis(write(tmp_path, 'family = "fused-dot"', name="x"))
    assert np.array_equal(predict(edge, g, OBSERVABLES)["literal"]["d_bits"],
                          predict(exact, g, OBSERVABLES)["literal"]["d_bits"])


def test_a_model_needs_raw_coordinates_and_a_grid_with_cases(tmp_path: Path) -> None:
    path = write(tmp_path, 'family = "fused-dot"')
    path.write_text(path.read_text().replace('coordinates = "raw"', 'coordinates = "cute"'))
    with pytest.raises(UsageError, match="own coordinates"):
        load_hypothesis(path)
    h = load_hypothesis(write(tmp_path, 'family = "fused-dot"', name="n"))
    bare = grid(ties(Frame(16))).drop_vars("a_bits")
    with pytest.raises(UsageError, match="no numeric cases"):
        predict(h, bare, OBSERVABLES)
    order = load_hypothesis(write(tmp_path, 'family = "fma-chain"\norder = [0, 1]', name="o"))
    with pytest.raises(UsageError, match="not a permutation"):
        predict(order, grid(ties(Frame(16))), OBSERVABLES)



def _f64_file(lab_root: Path, name: str, model: str) -> Path:
    path = lab_root / "preregistrations" / "numerics-mma-f64-m8n8k4" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'schema = 1\nid = "{name}"\nprobe = "numerics-mma-f64-m8n8k4"\n'
                    f'claim = "x"\ncoordinates = "raw"\nwhere = "finite_inputs == 1"\n\n'
                    f'[model]\n{model}\n\n[predict]\nd_lo = "model & 4294967295"\n'
                    'd_hi = "(model >> 32) & 4294967295"\nrest_zero = "1"\n')
    return path


def test_a_sealed_model_is_checked_end_to_end_and_its_meaning_is_pinned(
        toylab, monkeypatch, tmp_path: Path) -> None:
    """In a lab of its own: a model file sealed, a (faked) measurement of the simulated unit
    after it: the unit's own law CONFIRMED, a rival one parameter away REFUTED; then the
    lab's implementation of the family changes under the sealed file (as an edit of
    models.py would): the prediction no longer evaluates to the sealed table, TAMPERED."""
    from toylab import copy_probe

    from probelab import check, prereg
    from probelab.notary.rules import Outcome, Rule
    from probelab.numerics import models, spec

    copy_probe(toylab.root, "numerics_mma")
    own = _f64_file(toylab.root, "own", 'family = "fused-dot"\nfraction_bits = 25\n'
                    'rounding = "toward-zero"')  # the simulated unit's law
    rival = _f64_file(toylab.root, "rival", 'family = "fused-dot"\nfraction_bits = 26\n'
                      'rounding = "toward-zero"')
    toylab.git("add", "-A")
    toylab.git("commit", "-qm", "numerics probe and two model files")
    for path in (own, rival):
        prereg.seal(path)
    from probelab.sweep import run_sweep
    data = toylab.as_measured(run_sweep("numerics-mma-f64-m8n8k4", "sim", target="sm_90",
                                        out_root=toylab.root / "sim-data",
                                        allow_blind=True).path)
    first = check.check(own, data)
    assert first["verdict"] == Outcome.CONFIRMED and first["dataset"]["grid_matches_seal"]
    assert check.check(rival, data)["verdict"] == Outcome.REFUTED

    class Nearer(models.FusedDot):  # the same name and parameters, another rounding
        def _round(self, v, out, rounding):
            return super()._round(v, out, "nearest-even")

    monkeypatch.setitem(spec.FAMILIES, "fused-dot", Nearer)
    monkeypatch.setenv("PROBELAB_CACHE", str(tmp_path / "fresh-cache"))  # a new code digest
    judged = check.assess(own, data)
    assert (judged.outcome, judged.rules) == (Outcome.TAMPERED, {Rule.TABLE_CHANGED})


def test_a_model_is_made_once_per_inputs_and_again_for_other_inputs(tmp_path: Path,
                                                                   monkeypatch) -> None:
    """A model's bits are kept under what it reads (the cases, the formats, the file's model,
    its family): a grid that differs elsewhere (a dataset's, with coordinates the stimulus
    lacks) reuses them; other cases or another format are made afresh, and predict what
    they should."""
    from probelab import hypothesis as claims
    from probelab.numerics import spec

    made: list[tuple[int, ...]] = []
    real = spec.predicted_bits
    monkeypatch.setattr(spec, "predicted_bits",
                        lambda model, g: made.append(g["a_bits"].shape) or real(model, g))
    monkeypatch.setattr(claims, "_MODELS", {})
    h = load_hypothesis(write(tmp_path, 'family = "fused-dot"\nfraction_bits = 25\n'
                                        'rounding = "toward-zero"'))
    g = grid(alignment(Frame(16)))
    first = predict(h, g, OBSERVABLES)["literal"]["d_bits"]
    again = predict(h, g.assign_coords(trial=("trial", np.arange(3))), OBSERVABLES)
    assert len(made) == 1 and np.array_equal(again["literal"]["d_bits"], first)
    fewer = g.isel(case=slice(0, 5))
    assert np.array_equal(predict(h, fewer, OBSERVABLES)["literal"]["d_bits"], first[:, :5])
    bf16 = g.assign_coords(a_format=((), "bf16"), b_format=((), "bf16"))
    other = predict(h, bf16, OBSERVABLES)["literal"]["d_bits"]
    assert len(made) == 3 and not np.array_equal(other, first)  # f16 patterns read as bf16
    nearest = load_hypothesis(write(tmp_path, 'family = "fused-dot"\nfraction_bits = 25\n'
                                              'rounding = "nearest-even"', name="n"))
    predict(nearest, g, OBSERVABLES)
    assert len(made) == 4
    spelled = load_hypothesis(write(tmp_path, 'family = "fused-dot"\nfraction_bits = 25\n'
                                              'rounding = "toward-zero"\nc = "in-sum"\n'
                                              'nan = "quiet"', name="s"))
    assert np.array_equal(predict(spelled, g, OBSERVABLES)["literal"]["d_bits"], first)
    assert len(made) == 4  # the same model and NaN, its defaults written out
    ones = load_hypothesis(write(tmp_path, 'family = "fused-dot"\nfraction_bits = 25\n'
                                           'rounding = "toward-zero"\nnan = "all-ones"',
                                 name="o"))
    predict(ones, g, OBSERVABLES)
    assert len(made) == 5  # another NaN spelling: other bits
