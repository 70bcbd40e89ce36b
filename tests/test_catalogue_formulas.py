"""Every formula docs/catalogue.md states about a measured map, evaluated on that map (issue 36:
a formula the data refute fails here, as the 32B/64B swizzle wording did).

A formula is annotated by an HTML comment (invisible when the page is rendered) right after
the paragraph or list that states it:

    <!-- formula: <probe>/<stamp> <kernel>[,<kernel>...] <operand>[,<operand>...]
    text: <the formula as the prose above writes it>
    <name> = <expression>
    check: <expression that must hold on every measured cell>
    -->

`<probe>/<stamp>` is the dataset data/<probe>/sm_90/<stamp>.nc. Expressions are probelab.expr's
language; definitions may use the ones before them. They are evaluated over the slots that
hold an element, with these coordinates:
- lane-id maps (operands A, B, C/D, as the exports name them): `lane` and `value` (CuTe's
  thread and value) and the element the data put there, A: `m`, `k`; B: `k`, `n`; C/D: `m`,
  `n`, numbered as the catalogue's figures and exports are, the PTX ISA's way: the measured
  (canonical) map renumbered through the probe's sealed PTX file by `numbering_of`, which
  refuses a numbering that is not one to one on the data;
- matrix-move maps (operand `map`): the map's own index and fields, as the kit's dataset
  names them and measured (no numbering involved): load, (`lane`, `reg`, `half`) ->
  (`from_addr_lane`, `from_col`); store, (`addr_lane`, `col`) -> (`from_lane`, `from_reg`,
  `from_half`); move, (`lane`, `half`) -> (`from_lane`, `from_half`). A cell nothing arrived
  at is no measured cell; one the decode found inconsistent is, and fails every check.
`text` must appear in the paragraph the comment follows, so the prose and its machine
reading say the same thing. The tests that read datasets skip in a light tree, which has none
(tests/archive.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from archive import needs_archive

from probelab import dataset, vocabulary
from probelab.expr import compile_program
from probelab.hypothesis import helper_values, load_hypothesis
from probelab.kits.lane_id.figures import lane_map_table
from probelab.kits.matrix_move.figures import FIELDS
from probelab.kits.sentinels import NONE
from probelab.lanemaps import HELPERS, numbering_of

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "docs" / "catalogue.md"
COMMENT = re.compile(r"<!--(.*?)-->", re.S)
LABELS = {"A": ("m", "k"), "B": ("k", "n"), "C/D": ("m", "n")}
MOVE_MAP = "map"


@dataclass(frozen=True)
class Formula:
    dataset: str  # <probe>/<stamp>
    kernels: tuple[str, ...]
    operands: tuple[str, ...]
    text: str
    definitions: tuple[tuple[str, str], ...]
    checks: tuple[str, ...]
    paragraph: str  # the prose the comment follows, whitespace collapsed

    @property
    def probe(self) -> str:
        return self.dataset.split("/")[0]


    def __str__(self) -> str:  # the test id: which map, not the formula (its text is prose)
        return f"{self.dataset} {','.join(self.kernels)} {','.join(self.operands)}"


def _prose_before(doc: str, start: int) -> str:
    """The paragraph (or list) a comment at `start` follows, other comments left out."""
    before = COMMENT.sub("", doc[:start]).rstrip()
    return " ".join(before.split("\n\n")[-1].split())


def formulas(doc: str) -> list[Formula]:
    found = []
    for match in COMMENT.finditer(doc):
        head, *lines = [line.strip() for line in match.group(1).strip().splitlines()]
        if not head.startswith("formula:"):
            continue
        where, kernels, operands = head.removeprefix("formula:").split()
        text, definitions, checks = "", [], []
        for line in lines:
            key, colon, rest = line.partition(":")
            if colon and key == "text":
                text = rest.strip()
            elif colon and key == "check":
                checks.append(rest.strip())
            else:
                name, equals, source = line.partition("=")
                if not equals:
                    raise ValueError(f"{head}: {line!r} is neither text, check nor a definition")
                definitions.append((name.strip(), source.strip()))
        found.append(Formula(where, tuple(kernels.split(",")), tuple(operands.split(",")),
                             text, tuple(definitions), tuple(checks),
                             _prose_before(doc, match.start())))
    return found


def archive_path(name: str) -> str:
    """A dataset named <probe>/<stamp>, as the manifest names it."""
    probe, stamp = name.split("/")
    return f"data/{probe}/sm_90/{stamp}.nc"


@cache
def _dataset(name: str) -> xr.Dataset:
    """An archive dataset, read in the fragment vocabulary (its a_reg as a_value)."""
    return vocabulary.translated(dataset.load(ROOT / archive_path(name)))


@cache
def _ptx_table(name: str, kernel: str) -> dict[str, dict[str, np.ndarray]]:
    """One kernel's lane map as its export has it, per operand: lane, value and the element's
    row and col in the PTX numbering (the probe's sealed ptx-*.toml, not its restatement as
    layouts: that gives the same tables)."""
    ds = _dataset(name)
    (sealed,) = [p for p in (ROOT / "preregistrations" / name.split("/")[0]).glob("ptx-*.toml")
                 if "-as-layout" not in p.stem]
    hypothesis = load_hypothesis(sealed)
    dims = {helper: ("kernel", f"{operand}_lane", f"{operand}_value")
            for operand, helpers in HELPERS.items() for helper in helpers}
    numbering = numbering_of(ds, kernel, helper_values(hypothesis, ds, dims), hypothesis.id)
    table = lane_map_table(ds, kernel, numbering)
    rows = np.array([row[1:3] + row[5:] for row in table.rows], dtype=np.int64)
    operand = np.array([row[0] for row in table.rows])
    return {op: dict(zip(("lane", "value", "row", "col"), rows[operand == op].T, strict=True))
            for op in set(operand.tolist())}


def _cells(name: str, kernel: str, operand: str) -> dict[str, np.ndarray]:
    """The measured cells of one operand's map, as the coordinates the formulas read."""
    if operand == MOVE_MAP:
        k = _dataset(name).sel(kernel=kernel)
        fields = [k[field] for field in FIELDS[str(k["op"].values)]]
        # a cell some field says something of is measured: a half-filled one fails the checks
        held = np.logical_or.reduce([f.values != NONE for f in fields])
        index = dict(zip(fields[0].dims, np.indices(held.shape), strict=True))
        return {dim: at[held] for dim, at in index.items()} | \
            {str(f.name): f.values[held].astype(np.int64) for f in fields}
    table = _ptx_table(name, kernel)[operand]
    row, col = LABELS[operand]
    return {"lane": table["lane"], "value": table["value"], row: table["row"],
            col: table["col"]}


def mismatches(formula: Formula) -> tuple[int, int]:
    """(cells where some check fails, cells checked) over the formula's kernels and operands."""
    failed = checked = 0
    for kernel in formula.kernels:
        for operand in formula.operands:
            cells = _cells(formula.dataset, kernel, operand)
            checks = [(f"check{i}", source) for i, source in enumerate(formula.checks)]
            program = compile_program([*formula.definitions, *checks], cells)
            values = program.evaluate(cells, keep=[name for name, _ in checks])
            holds = np.logical_and.reduce([v != 0 for v in values.values()])
            failed, checked = failed + int((~holds).sum()), checked + holds.size
    return failed, checked


DOC = CATALOGUE.read_text(encoding="utf-8")
FORMULAS = formulas(DOC)


@needs_archive
@pytest.mark.parametrize("formula", FORMULAS, ids=str)
def test_formula_holds_on_its_measured_map(formula: Formula) -> None:
    assert formula.checks, "an annotation with nothing to check"
    failed, checked = mismatches(formula)
    assert checked > 0, "no measured cell"
    assert failed == 0, f"{failed} of {checked} measured cells refute it"


@pytest.mark.parametrize("formula", FORMULAS, ids=str)
def test_formula_is_the_one_the_prose_states(formula: Formula) -> None:
    assert formula.text and " ".join(formula.text.split()) in formula.paragraph


@needs_archive
def test_every_formula_reads_a_dataset_of_the_archive() -> None:
    lines = (ROOT / "data" / "MANIFEST.jsonl").read_text(encoding="utf-8").splitlines()
    pinned = {json.loads(line)["path"] for line in lines}
    assert {archive_path(f.dataset) for f in FORMULAS} <= pinned


# (dataset, kernel, operand) each stated formula family is annotated on at least once
FAMILIES = {
    "mma.sync 16-bit": [("mma-f16-f32/20261201T143403Z", "f16_f32_m16n8k16", op)
                        for op in ("A", "B", "C/D")],
    "mma.sync 8-bit": [("mma-s8s8/20261201T145505Z", "s8s8_m16n8k32", op) for op in "AB"],
    "mma.sync 4-bit": [("mma-s4s4/20261201T151604Z", "s4s4_m16n8k64", op) for op in "AB"],
    "mma.sync b1": [("mma-b1-and-k256/20261201T162313Z", "b1_and_m16n8k256", op)
                    for op in "AB"],
    "wgmma D and A": [("wgmma-f16-rs/20261201T171653Z", "rs_none", op) for op in ("A", "C/D")],
    "wgmma tf32 A": [("wgmma-tf32-f32/20261201T172927Z", "tf32_f32_m64n8k8", "A")],
    "wgmma 8-bit A": [("wgmma-s8-s32/20261201T172944Z", "s8_s32_m64n8k32", "A")],
    "wgmma B unswizzled": [("wgmma-f16-rs/20261201T171653Z", "rs_none", "B")],
    "wgmma B 32B swizzle": [("wgmma-f16-rs/20261201T171653Z", "rs_sw32", "B"),
                            ("wgmma-tf32-f32-n256/20261203T131938Z", "tf32_f32_rs_n256", "B")],
    "wgmma B 64B swizzle": [("wgmma-f16-rs/20261201T171653Z", "rs_sw64", "B"),
                            ("wgmma-f16-ss/20261201T172917Z", "ss_sw64_hi", "B")],
    "wgmma B 128B swizzle": [("wgmma-f16-rs/20261201T171653Z", "rs_sw128", "B"),
                             ("wgmma-f16-rs/20261201T171653Z", "rs_sw128_k1", "B")],
    "ldmatrix": [("ldmatrix-b16/20261201T162237Z", k, MOVE_MAP)
                 for k in ("ldmatrix_x4", "ldmatrix_x4_trans")],
    "stmatrix": [("stmatrix-b16/20261201T162239Z", k, MOVE_MAP)
                 for k in ("stmatrix_x4", "stmatrix_x4_trans")],
    "movmatrix": [("movmatrix-b16/20261201T162240Z", "movmatrix_trans", MOVE_MAP)],
    "wgmma D at N = 256": [("wgmma-tf32-f32-n256/20261203T131938Z", "tf32_f32_rs_n256", "C/D")],
}


def test_every_family_and_swizzle_mode_is_annotated() -> None:
    annotated = {(f.dataset, k, op) for f in FORMULAS for k in f.kernels for op in f.operands}
    missing = {family: sorted(set(cases) - annotated) for family, cases in FAMILIES.items()}
    assert not {family: cases for family, cases in missing.items() if cases}


def _swizzle(kernel: str) -> Formula:
    (formula,) = [f for f in FORMULAS if f.kernels == (kernel,) and f.operands == ("B",)
                  and f.probe == "wgmma-f16-rs"]
    return formula


# The wording the catalogue had before issue 36, `c ^ (row & 1 | 3 | 7)` over rows of 32/64
# bytes, evaluated the same way: of B's 128 elements, the ones it puts in the wrong chunk.
OLD_WORDING = {"rs_sw32": ("c ^ ((r >> 2) & 1)", "c ^ (r & 1)", 64),
               "rs_sw64": ("c ^ ((r >> 1) & 3)", "c ^ (r & 3)", 96)}


@needs_archive
@pytest.mark.parametrize("kernel", OLD_WORDING)
def test_the_old_swizzle_wording_is_refuted(kernel: str) -> None:
    right, wrong, refuting = OLD_WORDING[kernel]
    formula = _swizzle(kernel)
    assert any(right in check for check in formula.checks)
    assert "row & 1 | 3 | 7" not in DOC
    old = replace(formula, text=wrong,
                  checks=tuple(check.replace(right, wrong) for check in formula.checks))
    assert mismatches(old) == (refuting, 128)
