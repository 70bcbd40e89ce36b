"""swmmac-iu4 decode: from raw per-lane D words to a pairing law, or to a clear refusal.

`recover_law(ds, kernel)` reads the pair sub-sweep (which B nibble each compressed A nibble
n meets, per idx field f and value v) and turns it into a law in the model's terms: which
field governs nibble n (`field_of`), which B nibble each value pairs it with (`paired`) and
that nibble's offset within n's group of 4 (`offset`). Everything else the sweep measured
is then checked against what that law predicts: the lane and random-idx sub-sweeps (does
the active lane's *own* idx word decide its pairing?), the B-lane sub-sweep, exact signed
products and leave-one-out superposition. Anything that does not fit is a problem, named
with its cells; a Recovered with problems is not a law (`ok` False, `law()` refuses).
Limits of the evidence itself (a sub-sweep that cannot test what it is meant to for this
law) are `notes`: they do not stop a law, but they say what was not tested.

`lane_maps(ds, kernel)` calibrates the D register from data: which D (lane, dword)
positions each A lane reaches (lane sub-sweep, hit cells) and each B lane reaches (B-lane
sub-sweep, hit cells). A lanes with identical reach form one A-lane class (in a matrix
layout: one row of A), B lanes one B-lane class (one column of B); each D position gets the
(A class, B class) that reaches it, without borrowing a documented layout.

Coordinates are read by value, not position, so a sliced grid decodes too; what a slice
leaves out is reported, never guessed.
"""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr

from probelab.probe import load_sibling

HERE = Path(__file__).parent
probe = load_sibling(HERE / "probe.py")
model = probe.model
NONE, MULTIPLE, LANES, DWORDS = probe.NONE, probe.MULTIPLE, probe.LANES, probe.DWORDS
UNKNOWN = -1  # a pairing or offset the data do not give
SEVERAL = -2  # a D position reached by more than one lane class
VALUES = 4  # 2-bit idx fields
SHOWN = 4  # example cells quoted per problem


@dataclass
class Recovered:
    """What the pair sub-sweep says, and everything that contradicts it."""

    kernel: str
    K: int
    field_of: list[int | None]  # per existing nibble: the governing field, None if none/several
    fields: list[tuple[int, ...]]  # per existing nibble: every field that changes its pairing
    paired: np.ndarray  # (K // 4, 4): B nibble per (n, v) under the governing field; UNKNOWN
    offset: np.ndarray  # (K // 4, 4): paired - 4 * (n // 2) when that is 0..3, else UNKNOWN
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def nibbles(self) -> int:
        return self.K // 4

    @property
    def ok(self) -> bool:
        return not self.problems

    def law(self) -> "model.Law":
        """The recovered law as a model.Law (nibbles K lacks, and unidentifiable fields, keep
        the identity's entries). Refuses whenever anything did not fit."""
        if not self.ok:
            raise ValueError(f"{self.kernel}: no law recovered: " + "; ".join(self.problems))
        field_of, offset = np.arange(16), np.tile(np.arange(VALUES), (16, 1))
        for n in range(self.nibbles):
            if self.field_of[n] is not None:
                field_of[n] = self.field_of[n]
            offset[n] = self.offset[n]
        return model.Law(field_of, offset)


@dataclass
class LaneMaps:
    """Which D positions each A and B lane reaches, and the classes that makes."""

    kernel: str
    a_reach: np.ndarray  # (32 A lanes, 32 D lanes, 8 dwords) bool; a lane not swept: all False
    b_reach: np.ndarray  # (32 B lanes, 32, 8)
    a_class: np.ndarray  # (32,): smallest A lane with identical reach; UNKNOWN if none
    b_class: np.ndarray  # (32,)
    d_a: np.ndarray  # (32, 8): the A class reaching each D position; UNKNOWN none, SEVERAL
    d_b: np.ndarray  # (32, 8)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _cell(names: tuple[str, ...], values: tuple) -> str:
    return "(" + ", ".join(f"{n}={int(v)}" for n, v in zip(names, values, strict=True)) + ")"


def _examples(items: list[str]) -> str:
    more = f", ... ({len(items) - SHOWN} more)" if len(items) > SHOWN else ""
    return ", ".join(items[:SHOWN]) + more


def _code(code: int) -> str:
    return {NONE: "no B nibble", MULTIPLE: "several B nibbles"}.get(int(code), f"q={code}")


def _single(hits: np.ndarray, qs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(..., q) hits -> (the q *value* that hit or UNKNOWN, the number of hits)."""
    count = hits.sum(-1)
    q = np.where(count == 1, qs[hits.argmax(-1)], UNKNOWN)
    return q.astype(np.int64), count


def _positions(coord: np.ndarray) -> dict[int, int]:
    return {int(v): i for i, v in enumerate(coord)}


def _pairing(sub: xr.Dataset, nn: int, rec: Recovered) -> None:
    """field_of, fields, paired and offset from the pair sub-sweep (paired_q)."""
    n_at, f_at, v_at = (_positions(sub[d].values) for d in ("n", "f", "v"))
    qs = sub["q"].values.astype(np.int64)
    codes = sub["paired_q"].values.astype(np.int64)  # (n, f, v): a q *position*, NONE, MULTIPLE
    single = codes < len(qs)
    q_of = np.where(single, qs[np.where(single, codes, 0)], UNKNOWN)  # (n, f, v) q values
    if missing := [n for n in range(nn) if n not in n_at]:
        rec.problems.append(f"nibbles {missing} (K={rec.K} has 0-{nn - 1}) were not swept")
    if missing := [v for v in range(VALUES) if v not in v_at]:
        rec.problems.append(f"field values {missing} were not swept")
    if missing := [f for f in range(nn) if f not in f_at]:
        rec.problems.append(f"idx fields {missing} were not swept: a nibble one of them "
                            "governs would look ungoverned")
    fs = sorted(f_at)
    bad, outside, unstable, several = [], [], [], []
    for n, i in sorted(n_at.items()):
        if n >= nn:  # a nibble K does not have must drive nothing
            hits = [_cell(("n", "f", "v"), (n, f, v)) + f": {_code(codes[i, f_at[f], j])}"
                    for f in fs for v, j in v_at.items() if codes[i, f_at[f], j] != NONE]
            if hits:
                rec.problems.append(f"nibble {n} does not exist at K={rec.K} but products "
                                    f"appear in {len(hits)} cells: {_examples(hits)}")
            continue
        bad += [_cell(("n", "f", "v"), (n, f, v)) + f": {_code(codes[i, f_at[f], j])}"
                for f in fs for v, j in sorted(v_at.items()) if not single[i, f_at[f], j]]
        changing = tuple(f for f in fs if len(set(q_of[i, f_at[f]][single[i, f_at[f]]])) > 1)
        rec.fields[n] = changing
        if 0 in v_at:  # idx = 0 in every lane, whatever f is: identical waves
            base = set(q_of[i, :, v_at[0]][single[i, :, v_at[0]]])
            if len(base) > 1:
                unstable.append(f"n={n}: {sorted(int(b) for b in base)}")
            baseline = int(next(iter(base))) if len(base) == 1 else UNKNOWN
        else:
            baseline = UNKNOWN
        if len(changing) > 1:
            several.append(f"n={n}: fields {list(changing)}")
            rec.paired[n, 0] = baseline
        elif len(changing) == 1:
            rec.field_of[n] = g = changing[0]
            for v, j in v_at.items():
                rec.paired[n, v] = q_of[i, f_at[g], j]
        else:  # no field moves it: one B nibble whatever the idx (if the cells agree)
            values = set(q_of[i][single[i]])
            if len(values) == 1:
                rec.paired[n, [v for v in v_at if v < VALUES]] = int(next(iter(values)))
        for v in range(VALUES):
            q = int(rec.paired[n, v])
            if q == UNKNOWN:
                continue
            if 0 <= q - 4 * (n // 2) < VALUES:
                rec.offset[n, v] = q - 4 * (n // 2)
            else:
                outside.append(f"(n={n}, v={v}): q={q}")
    if bad:
        rec.problems.append(f"pair sub-sweep: {len(bad)} cells fit no single B position "
                            f"(one hit expected): {_examples(bad)}")
    if unstable:
        rec.problems.append("pair sub-sweep: the idx = 0 cells (identical waves) disagree: "
                            + _examples(unstable))
    if several:
        rec.problems.append("pair sub-sweep: nibbles affected by more than one idx field: "
                            + _examples(several))
    if outside:
        rec.problems.append(f"pair sub-sweep: {len(outside)} pairings fall outside the "
                            f"nibble's group of 4 B nibbles (4 * (n // 2) + 0..3), which no "
                            f"law of this form gives: {_examples(outside)}")


def _predict(rec: Recovered, n: int, word: int) -> int:
    """B nibble the recovered law pairs nibble n with when its lane's idx word is `word`."""
    if n >= rec.nibbles:
        return UNKNOWN
    if rec.field_of[n] is None:
        if rec.fields[n]:  # several fields: the law does not say
            return UNKNOWN
        return int(rec.paired[n, 0])
    return int(rec.paired[n, (int(word) >> (2 * rec.field_of[n])) & 3])


def _lane_sweep(sub: xr.Dataset, rec: Recovered) -> None:
    """Lane sub-sweep: only lane la drives nibble ln, its field lf = lv, the other lanes
    carry (lv + 2) % 4 there. Law-free: every active lane must pair alike. With the law:
    the active lane's own word must predict the pairing."""
    hits = sub["hit_lane"].values.astype(bool)  # (la, ln, lv, lq)
    las, lns, lfs, lvs = (sub[d].values.astype(np.int64) for d in ("la", "ln", "lf", "lv"))
    q, count = _single(hits, sub["lq"].values.astype(np.int64))
    bad, disagree, wrong, unchecked, other_rule = [], [], [], 0, 0
    for i, ln in enumerate(lns):
        lf = int(lfs[i])
        if ln < rec.nibbles and rec.field_of[ln] not in (None, lf):
            rec.notes.append(f"lane sub-sweep: it sets field {lf} for nibble {ln}, which field "
                             f"{rec.field_of[ln]} governs: lane uniformity there is only "
                             "tested for the idx-0 pairing")
        for j, lv in enumerate(lvs):
            names = ("la", "ln", "lv")
            bad += [_cell(names, (la, ln, lv)) + f": {count[a, i, j]} hits"
                    for a, la in enumerate(las) if count[a, i, j] != 1]
            groups: dict[int, list[int]] = {}
            for a, la in enumerate(las):
                groups.setdefault(int(q[a, i, j]), []).append(int(la))
            if len(groups) > 1:
                disagree.append(f"(ln={ln}, lv={lv}): " + "; ".join(
                    f"lanes {lanes} -> {'?' if k == UNKNOWN else f'q={k}'}"
                    for k, lanes in sorted(groups.items(), key=lambda kv: -len(kv[1]))))
            own = _predict(rec, int(ln), int(lv) << (2 * lf))
            other = _predict(rec, int(ln), ((int(lv) + 2) % 4) << (2 * lf))
            for a, la in enumerate(las):
                if own == UNKNOWN:
                    unchecked += 1
                elif count[a, i, j] == 1 and q[a, i, j] != own:
                    other_rule += int(q[a, i, j] == other)
                    wrong.append(_cell(names, (la, ln, lv)) + f": q={q[a, i, j]}, its own idx "
                                 f"predicts q={own}, the other lanes' idx q={other}")
    total = hits.shape[0] * hits.shape[1] * hits.shape[2]
    if bad:
        rec.problems.append(f"lane sub-sweep: {len(bad)} of {total} cells fit no single B "
                            f"position: {_examples(bad)}")
    if disagree:
        rec.problems.append("lane non-uniformity: active lanes pair the same nibble and idx "
                            "differently (lane sub-sweep): " + _examples(disagree))
    if wrong:
        why = (f"; in {other_rule} of them the other lanes' idx governs" if other_rule else "")
        rec.problems.append(f"lane non-uniformity: in {len(wrong)} of {total} lane sub-sweep "
                            f"cells the active lane's own idx does not predict its pairing"
                            f"{why}: {_examples(wrong)}")
    if unchecked:
        rec.problems.append(f"lane sub-sweep: {unchecked} cells could not be checked: the "
                            "pair sub-sweep gives no law for their nibble")


def _explained(q: np.ndarray, words: np.ndarray) -> bool:
    """Is q (per active lane) a function of one 2-bit field of the lane's own word?"""
    for f in range(16):
        value = (words >> (2 * f)) & 3
        if all(len(set(q[value == v].tolist())) <= 1 for v in range(VALUES)):
            return True
    return False


def _random_sweep(sub: xr.Dataset, rec: Recovered) -> None:
    """Random sub-sweep: each lane carries its own random idx word; only lane ra drives
    nibble rn. Law-free: some single field of the active lane's own word must determine
    the pairing. With the law: the active lane's own word must predict it."""
    hits = sub["hit_random"].values.astype(bool)  # (ra, rn, rq)
    ras, rns = sub["ra"].values.astype(np.int64), sub["rn"].values.astype(np.int64)
    words = sub["ridx"].values.astype(np.int64)
    q, count = _single(hits, sub["rq"].values.astype(np.int64))
    unexplained = [int(rn) for r, rn in enumerate(rns) if rn < rec.nibbles
                   and (count[:, r] == 1).all() and not _explained(q[:, r], words)]
    if unexplained:
        rec.problems.append(f"lane non-uniformity (or idx fields acting jointly): for nibbles "
                            f"{unexplained} no single field of the active lane's own idx word "
                            f"determines its pairing across the {len(ras)} active lanes "
                            "(random sub-sweep, whatever the law)")
    bad, wrong, ghost, unchecked = [], [], [], 0
    for a, ra in enumerate(ras):
        for r, rn in enumerate(rns):
            cell = _cell(("ra", "rn"), (ra, rn))
            if rn >= rec.nibbles:
                if count[a, r]:
                    ghost.append(cell)
                continue
            if count[a, r] != 1:
                bad.append(f"{cell}: {count[a, r]} hits")
                continue
            want = _predict(rec, int(rn), int(words[a]))
            if want == UNKNOWN:
                unchecked += 1
            elif q[a, r] != want:
                wrong.append(f"{cell}: q={q[a, r]}, its own idx {int(words[a]):#010x} "
                             f"predicts q={want}")
    total = hits.shape[0] * int(np.count_nonzero(rns < rec.nibbles))
    if bad:
        rec.problems.append(f"random sub-sweep: {len(bad)} of {total} cells fit no single B "
                            f"position: {_examples(bad)}")
    if ghost:
        rec.problems.append(f"random sub-sweep: nibbles that K={rec.K} does not have "
                            f"(rn >= {rec.nibbles}) formed products in {len(ghost)} cells: "
                            f"{_examples(ghost)}")
    if wrong:
        rec.problems.append(f"lane non-uniformity (or idx fields acting jointly): in "
                            f"{len(wrong)} of {total} random-idx cells the active lane's own "
                            f"idx word does not predict its pairing under the recovered law: "
                            f"{_examples(wrong)}")
    if unchecked:
        rec.problems.append(f"random sub-sweep: {unchecked} cells could not be checked: the "
                            "pair sub-sweep gives no law for their nibble")


def _blane_sweep(sub: xr.Dataset, rec: Recovered) -> None:
    """B-lane sub-sweep: only B lane bm drives nibble bq; A nibble bn everywhere, idx 0.
    Every B lane must meet A exactly at the nibble the law pairs bn with under idx 0."""
    hits = sub["hit_blane"].values.astype(bool)  # (bm, bq)
    bms = sub["bm"].values.astype(np.int64)
    q, count = _single(hits, sub["bq"].values.astype(np.int64))
    want = _predict(rec, int(sub["bn"].values), 0)
    off = [f"B lane {bm}: " + (f"q={q[m]}" if count[m] == 1 else f"{count[m]} hits")
           for m, bm in enumerate(bms) if count[m] != 1 or q[m] != want]
    if want == UNKNOWN:
        rec.problems.append("B-lane sub-sweep could not be checked: the pair sub-sweep gives "
                            "no law for its nibble")
    elif off:
        rec.problems.append(f"B-lane non-uniformity: {len(off)} of {len(bms)} B lanes do not "
                            f"meet A nibble {int(sub['bn'].values)} exactly at B nibble {want} "
                            f"(idx 0): {_examples(off)}")


def _products(sub: xr.Dataset, rec: Recovered) -> None:
    sas, sbs = sub["sa"].values, sub["sb"].values
    scaled = sub["scaled"].values
    inexact = [_cell(("sa", "sb"), (sas[i], sbs[j])) for i, j in zip(*np.nonzero(scaled == 0),
                                                                    strict=True)]
    if inexact:
        rec.problems.append(f"inexact signed products: {len(inexact)} of {scaled.size} "
                            f"(sa, sb) cells are not sa * sb times the (1, 1) cell: "
                            f"{_examples(inexact)}")
    d = sub["d_signed"].values.astype(np.int64)  # (sa, sb, lane, dword)
    unit = d[list(sas).index(1), list(sbs).index(1)] - probe.accumulator_start()
    if not (unit % 2**32).any():
        rec.notes.append("signed sub-sweep is vacuous: A nibble 0 meets none of B nibbles 0-3 "
                         f"under idx 0 (it pairs with B nibble {_predict(rec, 0, 0)}), so no "
                         "product is formed and exactness of signed products is untested")
    linear = sub["loo_linear"].values
    if broken := [int(t) for t in sub["trial"].values[linear == 0]]:
        rec.problems.append(f"non-linearity: in trials {broken} the leave-one-out parts do "
                            "not add up to the dense product")


def recover_law(ds: xr.Dataset, kernel: str) -> Recovered:
    """The law the pair sub-sweep shows for `kernel`, checked against every other
    sub-sweep. `ok` only when nothing contradicts it; problems name the cells."""
    sub = ds.sel(kernel=kernel)
    k = int(sub["K"].values)
    nn = k // 4
    rec = Recovered(kernel, k, [None] * nn, [()] * nn, np.full((nn, VALUES), UNKNOWN),
                    np.full((nn, VALUES), UNKNOWN))
    _pairing(sub, nn, rec)
    _lane_sweep(sub, rec)
    _random_sweep(sub, rec)
    _blane_sweep(sub, rec)
    _products(sub, rec)
    return rec


def _classes(reach: np.ndarray, swept: np.ndarray, side: str,
             problems: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Lanes with identical (non-empty) reach form a class named by its smallest lane;
    per D position, the class that reaches it (UNKNOWN none, SEVERAL more than one)."""
    lanes = reach.shape[0]
    cls = np.full(lanes, UNKNOWN)
    for lane in range(lanes):
        if not reach[lane].any():
            continue
        same = [m for m in range(lanes) if np.array_equal(reach[m], reach[lane])]
        cls[lane] = min(same)
    if silent := [lane for lane in range(lanes) if swept[lane] and cls[lane] == UNKNOWN]:
        problems.append(f"{side} lanes {silent} reach no D position")
    if unswept := [lane for lane in range(lanes) if not swept[lane]]:
        problems.append(f"{side} lanes {unswept} were not swept")
    d = np.full(reach.shape[1:], UNKNOWN)
    for c in sorted(set(cls[cls >= 0].tolist())):
        mask = reach[c]
        d = np.where(mask & (d == UNKNOWN), c, np.where(mask, SEVERAL, d))
    if (d == SEVERAL).any():
        where = [f"(lane {la}, dword {e})" for la, e in zip(*np.nonzero(d == SEVERAL),
                                                             strict=True)]
        problems.append(f"{len(where)} D positions are reached by more than one {side} lane "
                        f"class (classes overlap without being equal): {_examples(where)}")
    if swept.all() and (d == UNKNOWN).any():
        where = [f"(lane {la}, dword {e})" for la, e in zip(*np.nonzero(d == UNKNOWN),
                                                             strict=True)]
        problems.append(f"{len(where)} D positions are reached by no {side} lane: "
                        f"{_examples(where)}")
    return cls, d


def _reach(d: np.ndarray, hits: np.ndarray, side: str, lanes: np.ndarray,
           problems: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(lane, cells..., D lane, dword) raw words and (lane, cells...) hits -> per source
    lane the union of nonzero D positions over its hit cells; reach that differs between
    hit cells of one lane is a problem (the lane would have no single class)."""
    reach = np.zeros((LANES, LANES, DWORDS), bool)
    swept = np.zeros(LANES, bool)
    uneven = []
    for i, lane in enumerate(lanes):
        swept[lane] = True
        cells = d[i].reshape(-1, LANES, DWORDS)[hits[i].reshape(-1)] != 0
        if cells.shape[0]:
            reach[lane] = cells.any(axis=0)
            if not (cells == cells[0]).all():
                uneven.append(int(lane))
    if uneven:
        problems.append(f"{side} lanes {_examples([str(u) for u in uneven])} reach different "
                        "D positions in different hit cells")
    return reach, swept


def lane_maps(ds: xr.Dataset, kernel: str) -> LaneMaps:
    """Calibrated lane maps for `kernel`, from the lane and B-lane sub-sweeps' raw D."""
    sub = ds.sel(kernel=kernel)
    problems: list[str] = []
    a_reach, a_swept = _reach(sub["d_lane"].values, sub["hit_lane"].values.astype(bool), "A",
                              sub["la"].values.astype(np.int64), problems)
    b_reach, b_swept = _reach(sub["d_blane"].values, sub["hit_blane"].values.astype(bool), "B",
                              sub["bm"].values.astype(np.int64), problems)
    a_class, d_a = _classes(a_reach, a_swept, "A", problems)
    b_class, d_b = _classes(b_reach, b_swept, "B", problems)
    labelled = (d_a >= 0) & (d_b >= 0)
    pairs = list(zip(d_a[labelled].tolist(), d_b[labelled].tolist(), strict=True))
    if len(set(pairs)) != len(pairs):
        problems.append(f"{len(pairs) - len(set(pairs))} D positions repeat another's (A "
                        "class, B class) label: the register would hold one element twice")
    return LaneMaps(kernel, a_reach, b_reach, a_class, b_class, d_a, d_b, problems)
