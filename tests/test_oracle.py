"""`probelab oracle`: an outside model's D against a numerics dataset's, per family. The
comparison is tested with an oracle of the lab's own models on a simulated unit (no
package needed); MMA-Sim's adaptor where mmasim is installed (`probelab[oracles]`)."""

import importlib.util
import types
from pathlib import Path

import h5py
import numpy as np
import pytest
import xarray as xr
from typer.testing import CliRunner

from probelab import oracle
from probelab.cli import app
from probelab.numerics.models import FusedDot
from probelab.numerics.spec import predicted_bits
from probelab.probe import get_probe
from probelab.sweep import run_sweep
from probelab.vendors.nvidia import oracle_mmasim

PROBE = "numerics-mma-f16-f32"
# MMA-Sim's Hopper mma.sync f16 -> f32 as the lab writes it (preregistrations/PROBE/mmasim-exact)
MMASIM_HOPPER = {"family": "fused-dot", "fraction_bits": 25, "rounding": "toward-zero",
                 "align": "exponents", "overflow": "infinity"}
HAS_MMASIM = importlib.util.find_spec("mmasim") is not None


def _simulated(where: Path, spec: dict) -> Path:
    """A dataset of PROBE from a simulated unit computing the lab's model `spec`."""
    probe = get_probe(PROBE)
    law = {k: v for k, v in spec.items() if k != "family"}
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("PROBELAB_GIT_HEAD", raising=False)
        patch.setattr(probe, "sim_model", FusedDot(**law))
        return run_sweep(probe.id, "sim", target="sm_90", out_root=where,
                         allow_blind=True).path


@pytest.fixture(scope="module")
def hopper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One simulated unit of MMA-Sim's Hopper law (a sweep takes a while: made once)."""
    return _simulated(tmp_path_factory.mktemp("hopper"), MMASIM_HOPPER)


def _own_law_oracle(monkeypatch, spec: dict) -> None:
    """An oracle `own` that predicts with the lab's model `spec`."""
    def model(ds: xr.Dataset, kernel: str) -> oracle.Model:
        return oracle.Model("own law", lambda: predicted_bits(spec, ds).astype(np.uint64)
                            .reshape(-1) & np.uint64(0xFFFFFFFF))
    fake = types.SimpleNamespace(model=model)
    real = oracle.oracle_module
    monkeypatch.setattr(oracle, "oracle_module",
                        lambda name: fake if name == "own" else real(name))


def test_an_oracle_of_the_units_own_law_agrees_and_a_rival_is_counted_per_family(
        hopper: Path, monkeypatch) -> None:
    path = hopper
    _own_law_oracle(monkeypatch, MMASIM_HOPPER)
    [same], unmodelled = oracle.run("own", path)
    assert unmodelled == []
    assert same.disagree == 0 and same.simulated
    assert sum(f.agree for f in same.families) == xr.open_dataset(path).sizes["case"]
    # one parameter away: the rival differs somewhere, and the counts say where
    _own_law_oracle(monkeypatch, {**MMASIM_HOPPER, "fraction_bits": 24})
    [rival], _ = oracle.run("own", path)
    assert rival.disagree == len(rival.disagreeing) > 0
    for f in rival.families:
        assert f.cases == f.agree + f.nan_payload + f.disagree
    named = {case["case"] for case in rival.disagreeing}
    ds = xr.open_dataset(path)
    wrong_families = {str(f) for f, n in zip(ds["family"].values, ds["case_name"].values,
                                             strict=True) if str(n) in named}
    assert wrong_families == {f.name for f in rival.families if f.disagree}


def test_the_command_never_reads_simulated_data_as_agreement(hopper: Path,
                                                             monkeypatch) -> None:
    _own_law_oracle(monkeypatch, MMASIM_HOPPER)
    result = CliRunner().invoke(app, ["oracle", "own", str(hopper)])
    assert result.exit_code == 1 and "SIMULATED" in result.output  # all agree, not evidence
    assert CliRunner().invoke(app, ["oracle", "nobody", str(hopper)]).exit_code == 2


def test_a_kernel_the_oracle_does_not_model_is_named_and_never_reads_as_agreement(
        hopper: Path, monkeypatch) -> None:
    def model(ds: xr.Dataset, kernel: str) -> oracle.Model:
        raise oracle.NoModel("no such instruction here")
    real = oracle.oracle_module
    monkeypatch.setattr(oracle, "oracle_module", lambda name: types.SimpleNamespace(
        model=model) if name == "none" else real(name))
    reports, [skipped] = oracle.run("none", hopper)
    assert reports == [] and skipped.why == "no such instruction here"
    result = CliRunner().invoke(app, ["oracle", "none", str(hopper)])
    assert result.exit_code == 2 and "not compared: no such instruction here" in result.output


def test_an_f64_is_read_from_its_two_halves_and_nans_are_told_per_format() -> None:
    ds = xr.Dataset({"d_hi": (("kernel", "case"), np.array([[0x7FF80000, 0x3FF00000]],
                                                           np.uint32)),
                     "d_lo": (("kernel", "case"), np.array([[1, 0]], np.uint32))},
                    coords={"kernel": ["f64_m8n8k4"]})
    bits = oracle.measured_bits(ds, "f64_m8n8k4")
    assert bits.tolist() == [0x7FF8000000000001, 0x3FF0000000000000]
    assert oracle._nan(bits, "f64").tolist() == [True, False]
    # the same 16 bits are a NaN in f16 and not in bf16's reading of a 32-bit word
    f16 = np.array([0x7E00, 0x7C00, 0xFE01], np.uint64)
    assert oracle._nan(f16, "f16").tolist() == [True, False, True]
    assert oracle._nan(np.array([0x7FC00000, 0x7F800000], np.uint64), "f32").tolist() == \
        [True, False]


def test_a_nan_with_other_bits_is_counted_apart_and_is_not_exact(hopper: Path) -> None:
    ds = xr.open_dataset(hopper)
    measured = oracle.measured_bits(ds, str(ds["kernel"].values[0]))
    nans = oracle._nan(measured, "f32")
    assert nans.any()  # the stimulus makes NaNs
    quiet, other_quiet = np.uint64(0x7FFFFFFF), np.uint64(0x7FC00000)
    other = np.where(nans, np.where(measured == quiet, other_quiet, quiet), measured)  # NaN,
    # other bits
    families, wrong = oracle.compared(ds, str(ds["kernel"].values[0]), other)
    assert wrong == [] and sum(f.nan_payload for f in families) == int(nans.sum())
    report = oracle.Report("x", hopper, "k", "i", False, oracle.Standing(None),
                           families=families)
    assert report.disagree == 0 and not report.exact


def test_a_dataset_edited_after_its_sweep_is_named_tampered(hopper: Path, tmp_path: Path,
                                                             monkeypatch) -> None:
    edited = tmp_path / "edited.nc"
    edited.write_bytes(hopper.read_bytes())
    with h5py.File(edited, "r+") as f:  # a value changed, the content hash left as it was
        f["d_bits"][0, 0] += 1
    _own_law_oracle(monkeypatch, MMASIM_HOPPER)
    result = CliRunner().invoke(app, ["oracle", "own", str(edited)])
    assert result.exit_code == 3 and "TAMPERED" in result.output, result.output


def test_an_oracle_is_found_by_its_file_in_a_vendors_folder() -> None:
    assert oracle.oracle_module("mmasim") is oracle_mmasim
    with pytest.raises(oracle.UsageError, match="mmasim"):  # the known ones are named
        oracle.oracle_module("nobody")


def _named(kernel: str, k: int, formats: tuple[str, str, str]) -> xr.Dataset:
    return xr.Dataset(coords={"kernel": [kernel], "k": np.arange(k),
                              **{f"{x}_format": f for x, f in zip("abd", formats, strict=True)}})


@pytest.mark.parametrize(("kernel", "k", "formats", "wanted"), [
    ("f16_f32_m16n8k16", 16, ("f16", "f16", "f32"), (False, "m16n8k16.f32.f16.f16.f32")),
    ("wgmma_e4m3_f32_m64n8k32", 32, ("e4m3", "e4m3", "f32"),
     (True, "m64n8k32.f32.e4m3.e4m3")),
    ("f64_m8n8k4", 4, ("f64", "f64", "f64"), (False, "m8n8k4.f64.f64.f64.f64")),
])
def test_a_kernel_name_and_formats_say_which_instruction_mmasim_is_asked_for(
        kernel: str, k: int, formats: tuple[str, str, str], wanted: tuple[bool, str]) -> None:
    assert oracle_mmasim.instruction(_named(kernel, k, formats), kernel) == wanted


def test_cases_of_another_length_than_the_instruction_have_no_model() -> None:
    with pytest.raises(oracle.NoModel, match="k is 16"):
        oracle_mmasim.instruction(_named("f16_f32_m16n8k16", 8, ("f16", "f16", "f32")),
                                  "f16_f32_m16n8k16")


@pytest.mark.skipif(not HAS_MMASIM, reason="MMA-Sim is not installed (probelab[oracles])")
def test_mmasim_agrees_with_a_unit_simulated_with_its_published_hopper_law(
        hopper: Path, tmp_path: Path) -> None:
    """The adaptor hands MMA-Sim the stored bits as they are: on a unit that computes
    MMA-Sim's Hopper law as the lab writes it, every case agrees (NaN with NaN)."""
    [report], _ = oracle.run("mmasim", hopper)
    assert report.instruction == "mma m16n8k16.f32.f16.f16.f32 on Hopper"
    assert report.disagree == 0, report.disagreeing[:4]
    # and a unit one fraction bit short is told apart
    other = _simulated(tmp_path, {**MMASIM_HOPPER, "fraction_bits": 24})
    assert oracle.run("mmasim", other)[0][0].disagree > 0
