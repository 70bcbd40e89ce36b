"""Lane-id layout recovery for dense matrix multiply-accumulate instructions, D = A·B + C.

Nothing about the layout is assumed. A *slot* is one (lane, register) of an operand's
fragment, numbered `slot = register * lanes + lane`; every value is an exact integer-valued
double, so each output names its sources:

- "a named" waves, one per B slot: every A slot holds its id (slot + 1), B is 1.0 in that
  one slot and 0 elsewhere, every C slot holds CSCALE * (slot + 1). Each D slot then reads
  CSCALE * (c + 1) + (a + 1): the C slot that landed there and the A slot the hot B slot
  paired with (a + 1 = 0: none).
- "b named" waves, one per A slot: the same with A and B swapped.
- "gemm" waves: random small integers in every slot, an independent check.

The computation alone fixes a layout only up to renumbering rows, columns and k (any
consistent renumbering multiplies the same), so what is measured, and what hypotheses
predict, are label-free relations: A slot and D slot share a row (`same_row`), A slot and B
slot share a k (`same_k`), B slot and D slot share a column (`same_col`), once from each
named experiment (suffix `_b`: from the "b named" waves), and which C slot lands in each D
slot (`c_src`). The lane map drawn from them uses canonical labels: rows and k numbered in
order of first appearance over A's slots, columns over B's (slot order). `gemm_exact` reads
a random GEMM through that recovered map and compares it with numpy bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr

NONE, INVALID = 0xFFFFFFFE, 0xFFFFFFFF
CSCALE = 1024  # > the largest operand id: C's id and A's (or B's) id share one double
OPERANDS = ("a", "b", "c", "d")


@dataclass(frozen=True)
class Shape:
    """One instruction's fragment shape: the matrices and f64 values per lane per operand."""

    name: str  # the kernel's name
    M: int
    N: int
    K: int
    lanes: int
    a_regs: int
    b_regs: int
    d_regs: int  # C has D's shape

    def __post_init__(self) -> None:
        sizes = (("A", self.a_regs, self.M * self.K), ("B", self.b_regs, self.K * self.N),
                 ("D", self.d_regs, self.M * self.N))
        for what, regs, elements in sizes:
            if regs * self.lanes != elements:
                raise ValueError(f"{self.name}: {what} has {elements} elements, not "
                                 f"{self.lanes} lanes x {regs} registers")
            if elements >= CSCALE:  # ids 1..slots must stay below C's scale to be read apart
                raise ValueError(f"{self.name}: {what} has {elements} slots; the lane-id "
                                 f"encoding names at most {CSCALE - 1}")


@dataclass(frozen=True)
class Layout:
    """(lane, register) -> (row, col) per operand, -1 where a slot holds nothing.

    a: (lanes, regs, 2) as (m, k); b: (k, n); c and d: (m, n)."""

    a: np.ndarray
    b: np.ndarray
    c: np.ndarray
    d: np.ndarray


@dataclass(frozen=True)
class Sizes:
    lanes: int
    a_regs: int
    b_regs: int
    d_regs: int

    @classmethod
    def widest(cls, shapes: Sequence[Shape]) -> Sizes:
        lanes = {s.lanes for s in shapes}
        if len(lanes) != 1:
            raise ValueError(f"one probe, one wave width: got {sorted(lanes)}")
        return cls(lanes.pop(), max(s.a_regs for s in shapes), max(s.b_regs for s in shapes),
                   max(s.d_regs for s in shapes))

    def slots(self, operand: str) -> int:
        return self.lanes * {"a": self.a_regs, "b": self.b_regs}.get(operand, self.d_regs)


def stimulus(shapes: Sequence[Shape], trials: int, seed: int) -> xr.Dataset:
    """The grid: slot dims per operand, per-kernel shape coordinates, GEMM trial values."""
    import xarray as xr

    size = Sizes.widest(shapes)
    rng = np.random.default_rng(seed)
    per_kernel = {k: ("kernel", np.array([getattr(s, k) for s in shapes], np.uint32))
                  for k in ("M", "N", "K", "a_regs", "b_regs", "d_regs")}
    u32 = lambda n: np.arange(n, dtype=np.uint32)  # noqa: E731
    small = lambda *shape: rng.integers(-4, 5, shape).astype(np.int32)  # noqa: E731
    coords = {
        "kernel": ("kernel", np.array([s.name for s in shapes])), **per_kernel,
        "lanes": ((), np.uint32(size.lanes)),
        "a_lane": ("a_lane", u32(size.lanes)), "a_reg": ("a_reg", u32(size.a_regs)),
        "b_lane": ("b_lane", u32(size.lanes)), "b_reg": ("b_reg", u32(size.b_regs)),
        "d_lane": ("d_lane", u32(size.lanes)), "d_reg": ("d_reg", u32(size.d_regs)),
        "trial": ("trial", u32(trials)),
        "gemm_a": (("trial", "a_reg", "a_lane"), small(trials, size.a_regs, size.lanes)),
        "gemm_b": (("trial", "b_reg", "b_lane"), small(trials, size.b_regs, size.lanes)),
        "gemm_c": (("trial", "d_reg", "d_lane"), 16 * small(trials, size.d_regs, size.lanes)),
    }
    return xr.Dataset(coords=coords)


def _ids(slots: int) -> np.ndarray:
    return np.arange(1, slots + 1, dtype=np.float64)


def waves(grid: xr.Dataset) -> dict[str, np.ndarray]:
    """Inputs of every wave, in order a-named, b-named, gemm: a (W, A slots), b, c."""
    size = _sizes(grid)
    na, nb, nd = size.slots("a"), size.slots("b"), size.slots("d")
    trials = grid.sizes["trial"]
    c_ids = CSCALE * _ids(nd)
    a = np.concatenate([np.broadcast_to(_ids(na), (nb, na)), np.eye(na),
                        grid["gemm_a"].values.reshape(trials, na)])
    b = np.concatenate([np.eye(nb), np.broadcast_to(_ids(nb), (na, nb)),
                        grid["gemm_b"].values.reshape(trials, nb)])
    c = np.concatenate([np.broadcast_to(c_ids, (nb + na, nd)),
                        grid["gemm_c"].values.reshape(trials, nd)])
    return {"a": a.astype(np.float64), "b": b.astype(np.float64), "c": c.astype(np.float64)}


def to_lane_major(values: np.ndarray, lanes: int) -> np.ndarray:
    """(W, slots) in slot order -> (W, lanes, regs): the order a kernel reads its fragment."""
    w, slots = values.shape
    return np.ascontiguousarray(values.reshape(w, slots // lanes, lanes).transpose(0, 2, 1))


def from_lane_major(values: np.ndarray) -> np.ndarray:
    """(W, lanes, regs) -> (W, slots) in slot order."""
    return values.transpose(0, 2, 1).reshape(values.shape[0], -1)


def _sizes(grid: xr.Dataset) -> Sizes:
    return Sizes(grid.sizes["a_lane"], grid.sizes["a_reg"], grid.sizes["b_reg"],
                 grid.sizes["d_reg"])


# ---- the simulated unit (tests and the sim backend only; never evidence) ----

def multiply(layout: Layout, a: np.ndarray, b: np.ndarray, c: np.ndarray, shape: Shape
             ) -> np.ndarray:
    """D slots (W, lanes * d_regs) of D = A·B + C for slot values laid out by `layout`;
    inputs are (W, slots) over the widest sizes, slots the shape has no element for are
    ignored, D slots it does not write stay 0."""
    mats = {}
    for name, values, rows, cols in (("a", a, shape.M, shape.K), ("b", b, shape.K, shape.N),
                                     ("c", c, shape.M, shape.N)):
        where = _slot_order(getattr(layout, name))
        used = where[:, 0] >= 0
        mat = np.zeros((values.shape[0], rows, cols))
        mat[:, where[used, 0], where[used, 1]] = values[:, : where.shape[0]][:, used]
        mats[name] = mat
    full = mats["a"] @ mats["b"] + mats["c"]
    where = _slot_order(layout.d)
    out = np.zeros((a.shape[0], c.shape[1]))
    used = np.flatnonzero(where[:, 0] >= 0)
    out[:, used] = full[:, where[used, 0], where[used, 1]]
    return out


def _slot_order(lane_map: np.ndarray) -> np.ndarray:
    """(lanes, regs, 2) -> (slots, 2) in slot order (register-major)."""
    return lane_map.transpose(1, 0, 2).reshape(-1, 2)


def random_layout(shape: Shape, rng: np.random.Generator, regs: Sizes | None = None) -> Layout:
    """A hidden layout nobody documented: every operand's elements shuffled over its slots
    (C lands where D is read, as in every real unit)."""
    size = regs or Sizes(shape.lanes, shape.a_regs, shape.b_regs, shape.d_regs)

    def shuffled(rows: int, cols: int, regs_used: int, regs_total: int) -> np.ndarray:
        out = np.full((shape.lanes, regs_total, 2), -1)
        cells = np.stack(np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij"), -1)
        out[:, :regs_used] = rng.permutation(cells.reshape(-1, 2)).reshape(
            shape.lanes, regs_used, 2)
        return out

    d = shuffled(shape.M, shape.N, shape.d_regs, size.d_regs)
    return Layout(shuffled(shape.M, shape.K, shape.a_regs, size.a_regs),
                  shuffled(shape.K, shape.N, shape.b_regs, size.b_regs), d, d)


# ---- decode ----

def _names(values: np.ndarray, slots: int, c_slots: int) -> tuple[np.ndarray, np.ndarray]:
    """D values -> (C slot, operand slot), each NONE where nothing arrived and INVALID where
    the value is not CSCALE * (c + 1) + (x + 1) with both ids in range."""
    finite = np.isfinite(values) & (values == np.floor(values)) & (values >= 0) & \
        (values < CSCALE * (2**20))
    v = np.where(finite, values, 0).astype(np.int64)
    c, x = v // CSCALE - 1, v % CSCALE - 1
    ok = finite & (x < slots) & (c < c_slots)
    c_name = np.where(c < 0, NONE, c)
    x_name = np.where(x < 0, NONE, x)
    return (np.where(ok, c_name, INVALID).astype(np.uint32),
            np.where(ok, x_name, INVALID).astype(np.uint32))


def _related(src: np.ndarray, slots: int) -> np.ndarray:
    """src (hot slots, D slots) of named slots -> (named slots, D slots) 0/1: the named slot
    reached that D slot for some hot slot."""
    out = np.zeros((slots, src.shape[1]), np.uint32)
    hot, d = np.nonzero(src < slots)
    out[src[hot, d], d] = 1
    return out


def _paired(src: np.ndarray, slots: int) -> np.ndarray:
    """src (hot slots, D slots) -> (named slots, hot slots) 0/1: paired in some D slot."""
    out = np.zeros((slots, src.shape[0]), np.uint32)
    hot, d = np.nonzero(src < slots)
    out[src[hot, d], hot] = 1
    return out


@dataclass(frozen=True)
class Relations:
    row_ad: np.ndarray  # (A slots, D slots)
    k_ab: np.ndarray  # (A slots, B slots)
    col_bd: np.ndarray  # (B slots, D slots)


def relations(a_src: np.ndarray, b_src: np.ndarray, size: Sizes) -> tuple[Relations, Relations]:
    """From the a-named waves (a_src: (B slots, D slots)) and the b-named ones (b_src:
    (A slots, D slots)), the same three relations twice, independently."""
    na, nb = size.slots("a"), size.slots("b")
    by_a = Relations(_related(a_src, na), _paired(a_src, na),
                     (a_src < na).astype(np.uint32))
    by_b = Relations((b_src < nb).astype(np.uint32), _paired(b_src, nb).T,
                     _related(b_src, nb))
    return by_a, by_b


def _classes(vectors: np.ndarray) -> np.ndarray:
    """Rows with equal nonzero vectors share a class; classes numbered in order of first
    appearance; -1 for all-zero rows."""
    labels = np.full(vectors.shape[0], -1)
    seen: dict[bytes, int] = {}
    for i, v in enumerate(vectors):
        if v.any():
            labels[i] = seen.setdefault(v.tobytes(), len(seen))
    return labels


def _through(relation: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, bool]:
    """For each column of `relation` (rows labelled by `labels`), the one label its related
    rows carry; False when some column relates to rows of two labels."""
    out = np.full(relation.shape[1], -1)
    ok = True
    for j in range(relation.shape[1]):
        found = set(labels[np.flatnonzero(relation[:, j])].tolist()) - {-1}
        if len(found) > 1:
            ok = False
        if len(found) == 1:
            out[j] = found.pop()
    return out, ok


def recover(rel: Relations, c_src: np.ndarray, shape: Shape, size: Sizes
            ) -> tuple[Layout | None, str]:
    """The lane map the relations imply, in canonical labels, or None and why not."""
    a_row, a_k = _classes(rel.row_ad), _classes(rel.k_ab)
    b_col = _classes(rel.col_bd)
    b_k, ok_bk = _through(rel.k_ab, a_k)
    d_row, ok_dr = _through(rel.row_ad, a_row)
    d_col, ok_dc = _through(rel.col_bd, b_col)
    if not (ok_bk and ok_dr and ok_dc):
        return None, "a slot relates to two rows, columns or k"
    counts = {"rows": (a_row.max() + 1, shape.M), "k": (a_k.max() + 1, shape.K),
              "columns": (b_col.max() + 1, shape.N)}
    for what, (seen, want) in counts.items():
        if seen != want:
            return None, f"{seen} distinct {what}, the shape has {want}"
    mapped = {"A": np.stack([a_row, a_k], -1), "B": np.stack([b_k, b_col], -1),
              "D": np.stack([d_row, d_col], -1)}
    wanted = {"A": shape.M * shape.K, "B": shape.K * shape.N, "D": shape.M * shape.N}
    for what, cells in mapped.items():
        used = cells[(cells >= 0).all(-1)]
        if len(used) != wanted[what] or len(np.unique(used, axis=0)) != wanted[what]:
            return None, f"{what}: {len(used)} slots for {wanted[what]} elements, or repeats"
        if ((cells >= 0).any(-1) & ~(cells >= 0).all(-1)).any():
            return None, f"{what}: a slot with a row but no column"
    c = np.full_like(mapped["D"], -1)
    landed = np.flatnonzero(c_src < size.slots("d"))
    c[c_src[landed]] = mapped["D"][landed]
    if len(landed) != wanted["D"] or len(np.unique(c_src[landed])) != len(landed):
        return None, "C does not land one to one on D"
    lanes = size.lanes

    def lane_major(cells: np.ndarray) -> np.ndarray:
        return cells.reshape(-1, lanes, 2).transpose(1, 0, 2)

    return Layout(lane_major(mapped["A"]), lane_major(mapped["B"]), lane_major(c),
                  lane_major(mapped["D"])), "recovered"


def factorizes(layout: Layout, a_src: np.ndarray, b_src: np.ndarray) -> bool:
    """Every named output is exactly what the recovered layout predicts (the relations are
    projections; this checks the full three-way table behind them)."""
    a, b, d = (_slot_order(getattr(layout, n)) for n in "abd")

    def inverse(cells: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
        inv = np.full(shape, INVALID, np.uint32)
        used = np.flatnonzero(cells[:, 0] >= 0)
        inv[cells[used, 0], cells[used, 1]] = used
        return inv

    inv_a = inverse(a, (a[:, 0].max() + 1, a[:, 1].max() + 1))
    inv_b = inverse(b, (b[:, 0].max() + 1, b[:, 1].max() + 1))
    d_ok, (m_d, n_d) = d[:, 0] >= 0, d.T
    # a-named: hot B slot (k, n) meets D slot (m, n) -> the A slot holding (m, k)
    meet = (b[:, None, 1] == n_d[None]) & d_ok[None] & (b[:, None, 0] >= 0)
    want_a = np.where(meet, inv_a[m_d[None], b[:, None, 0]], NONE)
    # b-named: hot A slot (m, k) meets D slot (m, n) -> the B slot holding (k, n)
    meet = (a[:, None, 0] == m_d[None]) & d_ok[None] & (a[:, None, 0] >= 0)
    want_b = np.where(meet, inv_b[a[:, None, 1], n_d[None]], NONE)
    return bool(np.array_equal(want_a, a_src) and np.array_equal(want_b, b_src))


def gemm_exact(layout: Layout, grid: xr.Dataset, d_gemm: np.ndarray, shape: Shape
               ) -> np.ndarray:
    """(trial,) 1 where the device's D, read through the recovered layout, equals numpy's
    A·B + C bit for bit, for A, B, C loaded through it."""
    trials = grid.sizes["trial"]
    inputs = [grid[f"gemm_{n}"].values.reshape(trials, -1).astype(np.float64) for n in "abc"]
    want = multiply(layout, *inputs, shape)
    return np.all(want.view(np.uint64) == d_gemm.view(np.uint64), axis=-1).astype(np.uint32)


SLOT_DIMS = {"a": "a", "b": "b", "c": "d", "d": "d"}  # C lives on D's slots
LANE_MAP_DIMS = {n: ("kernel", f"{SLOT_DIMS[n]}_lane", f"{SLOT_DIMS[n]}_reg") for n in OPERANDS}
OBSERVABLES = {
    "same_row": ("kernel", "a_lane", "a_reg", "d_lane", "d_reg"),
    "same_k": ("kernel", "a_lane", "a_reg", "b_lane", "b_reg"),
    "same_col": ("kernel", "b_lane", "b_reg", "d_lane", "d_reg"),
    "same_row_b": ("kernel", "a_lane", "a_reg", "d_lane", "d_reg"),
    "same_k_b": ("kernel", "a_lane", "a_reg", "b_lane", "b_reg"),
    "same_col_b": ("kernel", "b_lane", "b_reg", "d_lane", "d_reg"),
    "c_src": ("kernel", "d_lane", "d_reg"),
    "recovered": ("kernel",),
    "gemm_exact": ("kernel", "trial"),
}


def _lane_grid(table: np.ndarray, size: Sizes, rows: str, cols: str | None = None
               ) -> np.ndarray:
    """(slots of `rows`, slots of `cols`) -> (lanes, regs, lanes, regs), the grid's dim order
    (cols None: (n, slots of `rows`) -> (n, lanes, regs))."""
    if cols is None:
        n = table.shape[0]
        return table.reshape(n, size.slots(rows) // size.lanes, size.lanes).transpose(0, 2, 1)
    r, c = size.slots(rows) // size.lanes, size.slots(cols) // size.lanes
    return table.reshape(r, size.lanes, c, size.lanes).transpose(1, 0, 3, 2)


RAW_DIMS = {"d_anamed": ("kernel", "b_lane", "b_reg", "d_lane", "d_reg"),
            "d_bnamed": ("kernel", "a_lane", "a_reg", "d_lane", "d_reg"),
            "d_gemm": ("kernel", "trial", "d_lane", "d_reg"),
            "a_src": ("kernel", "b_lane", "b_reg", "d_lane", "d_reg"),
            "b_src": ("kernel", "a_lane", "a_reg", "d_lane", "d_reg")}


def _decode(grid: xr.Dataset, shape: Shape, d: np.ndarray) -> tuple[dict[str, np.ndarray], str]:
    """One kernel's D slots (W, D slots) -> its variables, and how its lane map fared."""
    size = _sizes(grid)
    na, nb = size.slots("a"), size.slots("b")
    d_a, d_b, d_g = d[:nb], d[nb:nb + na], d[nb + na:]
    c_a, a_src = _names(d_a, na, size.slots("d"))
    c_b, b_src = _names(d_b, nb, size.slots("d"))
    c_all = np.concatenate([c_a, c_b])
    c_src = np.where((c_all == c_all[0]).all(0), c_all[0], INVALID).astype(np.uint32)
    by_a, by_b = relations(a_src, b_src, size)
    layout, why = recover(by_a, c_src, shape, size)
    if layout is not None and not all(np.array_equal(getattr(by_a, f), getattr(by_b, f))
                                      for f in ("row_ad", "k_ab", "col_bd")):
        layout, why = None, "the a-named and b-named experiments disagree"
    if layout is not None and not factorizes(layout, a_src, b_src):
        layout, why = None, "the outputs are not those of any one layout"
    values = {
        "d_anamed": _lane_grid(d_a, size, "b", "d"), "d_bnamed": _lane_grid(d_b, size, "a", "d"),
        "d_gemm": _lane_grid(d_g, size, "d"),
        "a_src": _lane_grid(a_src, size, "b", "d"), "b_src": _lane_grid(b_src, size, "a", "d"),
        "same_row": _lane_grid(by_a.row_ad, size, "a", "d"),
        "same_k": _lane_grid(by_a.k_ab, size, "a", "b"),
        "same_col": _lane_grid(by_a.col_bd, size, "b", "d"),
        "same_row_b": _lane_grid(by_b.row_ad, size, "a", "d"),
        "same_k_b": _lane_grid(by_b.k_ab, size, "a", "b"),
        "same_col_b": _lane_grid(by_b.col_bd, size, "b", "d"),
        "c_src": _lane_grid(c_src[None], size, "d")[0],
        "recovered": np.uint32(layout is not None),
        "gemm_exact": (gemm_exact(layout, grid, d_g, shape) if layout is not None
                       else np.zeros(grid.sizes["trial"], np.uint32)),
    }
    for n in OPERANDS:
        cells = getattr(layout, n) if layout is not None else np.full(
            (size.lanes, size.slots(n) // size.lanes, 2), -1)
        values[f"{n}_row"], values[f"{n}_col"] = cells[..., 0], cells[..., 1]
    return values, why


def assemble(grid: xr.Dataset, shapes: Sequence[Shape],
             outputs: Mapping[str, np.ndarray]) -> xr.Dataset:
    """Raw D of every kernel ({kernel: (W, lanes, d_regs) float64}) -> the dataset: raw
    values, decoded sources, relations, the recovered lane map and the GEMM check."""
    ds = grid.copy()
    per: dict[str, list[np.ndarray]] = {}
    reasons = []
    for shape in shapes:
        d = from_lane_major(np.asarray(outputs[shape.name], np.float64))
        values, why = _decode(grid, shape, d)
        reasons.append(f"{shape.name}: {why}")
        for k, v in values.items():
            per.setdefault(k, []).append(v)
    for k, dims in (RAW_DIMS | OBSERVABLES).items():
        ds[k] = (dims, np.stack(per[k]))
    for n in OPERANDS:
        for x in ("row", "col"):
            ds[f"{n}_{x}"] = (LANE_MAP_DIMS[n], np.stack(per[f"{n}_{x}"]).astype(np.int32), {
                "description": f"recovered lane map of {n.upper()}: (lane, reg) -> {x} in "
                "canonical labels (numbered by first appearance in slot order); -1: the slot "
                "holds nothing"})
    ds["recovered"].attrs["why"] = "; ".join(reasons)
    return ds


def lane_map(ds: xr.Dataset, kernel: str, operand: str) -> xr.Dataset | None:
    """One operand's recovered map as (lane, reg) -> (row, col), or None if not recovered."""
    import xarray as xr

    if int(ds["recovered"].sel(kernel=kernel)) != 1:
        return None
    rows = ds[f"{operand}_row"].sel(kernel=kernel)
    cols = ds[f"{operand}_col"].sel(kernel=kernel)
    return xr.Dataset({"row": rows, "col": cols})
