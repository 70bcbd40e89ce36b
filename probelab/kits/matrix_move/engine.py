"""Warp-collective matrix movement (PTX ldmatrix, stmatrix, movmatrix on 16-bit elements):
which address-providing lane and which element of its row each register element comes from,
where each register element lands, with no layout assumed.

A wave is one warp and one instruction. Every lane points (ldmatrix, stmatrix) at its own
16-byte row of the warp's shared tile of ROWS rows, a different random row per wave, so a
lane's address and a row's place in memory are never confounded; no two lanes share a row,
and half the rows are nobody's. Waves come in two roles:

- "ids": every source element holds its own id (tile element (row, col): row * COLS + col
  + 1; register element (lane, reg, half): (lane * regs + reg) * 2 + half + 1), so each
  destination element names its source; a loaded id is turned into the lane whose address
  pointed at that row, a stored one is read at the rows each lane addressed. Two id waves
  with different addresses must agree.
- "random": random 16-bit values, replayed through the map the id waves gave and compared
  bit for bit (`replayed`).

Observables, per kernel (coordinates `num`, matrices, and `trans`):
- load: `from_addr_lane`, `from_col` over (lane, reg, half): the lane whose address the
  element's row came from and the element of that row;
- store: `from_lane`, `from_reg`, `from_half` over (addr_lane, col): what landed at element
  col of the row lane addr_lane addressed; `stray`: elements written to rows no lane
  addressed;
- move: `from_lane`, `from_half` over (lane, half).
NONE: nothing arrived (0: the kernel writes 0 to the registers beyond .num, and zeroes the
tile before a store; ids start at 1); INVALID: not one consistent id. Every output word is
written, so repeats with alternating poisons compare equal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from probelab.kits.sentinels import FLAGS, INVALID, NONE

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr

LANES, ROWS, COLS, HALVES = 32, 64, 8, 2  # a row: 16 bytes, eight 16-bit elements
WORDS = COLS // HALVES  # 32-bit words per row
ROLES = ("ids", "ids", "random", "random")
OPS = ("load", "store", "move")
OBSERVABLES = {
    "load": {"from_addr_lane": ("kernel", "lane", "reg", "half"),
             "from_col": ("kernel", "lane", "reg", "half"), "replayed": ("kernel",)},
    "store": {"from_lane": ("kernel", "addr_lane", "col"),
              "from_reg": ("kernel", "addr_lane", "col"),
              "from_half": ("kernel", "addr_lane", "col"), "stray": ("kernel",),
              "replayed": ("kernel",)},
    "move": {"from_lane": ("kernel", "lane", "half"), "from_half": ("kernel", "lane", "half"),
             "replayed": ("kernel",)},
}


@dataclass(frozen=True)
class Form:
    """One kernel: its op, how many 8x8 matrices (registers per lane) and whether .trans."""

    name: str
    op: str
    num: int
    trans: bool

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"{self.name}: op {self.op!r} is not one of {', '.join(OPS)}")
        if self.num not in (1, 2, 4) or (self.op == "move" and (self.num != 1 or not self.trans)):
            raise ValueError(f"{self.name}: {self.op} takes .x1/.x2/.x4 (movmatrix: one, .trans)")


def op_of(forms: Sequence[Form]) -> str:
    """The one op every kernel of a probe shares (they read the same buffers)."""
    ops = {f.op for f in forms}
    if len(ops) != 1:
        raise ValueError(f"one probe, one op (its kernels share buffers): got {sorted(ops)}")
    return ops.pop()


def regs_of(op: str) -> int:
    return 1 if op == "move" else 4


def stimulus(forms: Sequence[Form], seed: int) -> xr.Dataset:
    """The grid: per-wave addresses (distinct random rows) and source values."""
    import xarray as xr

    op, rng = op_of(forms), np.random.default_rng(seed)
    regs, waves = regs_of(op), len(ROLES)
    u32 = lambda n: np.arange(n, dtype=np.uint32)  # noqa: E731
    ids = np.array([r == "ids" for r in ROLES])
    coords = {
        "kernel": ("kernel", np.array([f.name for f in forms])),
        "num": ("kernel", np.array([f.num for f in forms], np.uint32)),
        "trans": ("kernel", np.array([f.trans for f in forms], np.uint32)),
        "op": ((), op), "lanes": ((), np.uint32(LANES)),
        "wave": ("wave", u32(waves)), "role": ("wave", np.array(ROLES)),
        "lane": ("lane", u32(LANES)), "reg": ("reg", u32(regs)), "half": ("half", u32(HALVES)),
    }
    if op == "load":
        values = np.arange(ROWS * COLS, dtype=np.uint32).reshape(ROWS, COLS) + 1
        random = rng.integers(0, 1 << 16, (waves, ROWS, COLS), dtype=np.uint32)
        coords |= {"row": ("row", u32(ROWS)), "col": ("col", u32(COLS)),
                   "tile": (("wave", "row", "col"), np.where(ids[:, None, None], values, random),
                            {"description": "the shared tile each wave loads from"})}
    else:
        values = np.arange(LANES * regs * HALVES, dtype=np.uint32).reshape(LANES, regs, HALVES) + 1
        random = rng.integers(0, 1 << 16, (waves, LANES, regs, HALVES), dtype=np.uint32)
        coords["held"] = (("wave", "lane", "reg", "half"),
                          np.where(ids[:, None, None, None], values, random),
                          {"description": "what each lane's registers hold before the wave"})
    if op != "move":
        coords["address"] = (("wave", "lane"), np.stack(
            [rng.permutation(ROWS)[:LANES] for _ in range(waves)]).astype(np.uint32),
            {"description": "the tile row (16 bytes) each lane's address points at"})
    if op == "store":
        coords |= {"row": ("row", u32(ROWS)), "col": ("col", u32(COLS)),
                   "addr_lane": ("addr_lane", u32(LANES))}
    return xr.Dataset(coords=coords)


def _words(halves: np.ndarray) -> np.ndarray:
    """(..., 2n) 16-bit values -> (..., n) uint32, element 2i in the low half of word i."""
    h = halves.astype(np.uint32).reshape(*halves.shape[:-1], -1, HALVES)
    return h[..., 0] | (h[..., 1] << 16)


def _halves(words: np.ndarray) -> np.ndarray:
    """`_words` undone: (..., n) uint32 -> (..., 2n) 16-bit values."""
    w = np.asarray(words, np.uint32)
    return np.stack([w & 0xFFFF, w >> 16], -1).reshape(*w.shape[:-1], -1)


def buffers(grid: xr.Dataset) -> dict[str, np.ndarray]:
    """The launch's inputs in kernel order: params, address (load, store), tile or held."""
    op, waves = str(grid["op"].values), grid.sizes["wave"]
    out = {"params": np.array([waves], np.uint32)}
    if op != "move":
        out["address"] = grid["address"].values.astype(np.uint32).reshape(-1)
    if op == "load":
        out["tile"] = _words(grid["tile"].values).reshape(-1)
    else:
        out["held"] = _words(grid["held"].values).reshape(-1)  # (wave, lane, reg) words
    return out


def output_words(grid: xr.Dataset) -> int:
    op, waves = str(grid["op"].values), grid.sizes["wave"]
    return waves * (ROWS * WORDS if op == "store" else LANES * regs_of(op))


# ---- the simulated unit (tests and the sim backend only; never evidence) ----

@dataclass(frozen=True)
class Law:
    """A movement law: for every destination element, its source element, or -1 (not
    written). load: (num, lanes, regs, halves, 2) -> (address lane, col); store: (num,
    lanes, cols, 3) over (address lane, col) -> (lane, reg, half); move: (lanes, halves, 2)."""

    table: np.ndarray


def random_law(form: Form, rng: np.random.Generator) -> Law:
    """A hidden law: a random bijection between the elements the form moves (the first
    8 * num address lanes' rows, the first num registers)."""
    n = form.num
    if form.op == "move":
        cells = np.stack(np.meshgrid(np.arange(LANES), np.arange(HALVES), indexing="ij"), -1)
        return Law(rng.permutation(cells.reshape(-1, 2)).reshape(LANES, HALVES, 2))
    if form.op == "load":
        src = np.stack(np.meshgrid(np.arange(8 * n), np.arange(COLS), indexing="ij"), -1)
        table = np.full((LANES, 4, HALVES, 2), -1)
        table[:, :n] = rng.permutation(src.reshape(-1, 2)).reshape(n, LANES, HALVES, 2) \
            .transpose(1, 0, 2, 3)
        return Law(table)
    src = np.stack(np.meshgrid(np.arange(LANES), np.arange(n), np.arange(HALVES),
                               indexing="ij"), -1)
    table = np.full((LANES, COLS, 3), -1)
    table[:8 * n] = rng.permutation(src.reshape(-1, 3)).reshape(8 * n, COLS, 3)
    return Law(table)


def simulate(form: Form, law: Law, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    """What a unit following `law` writes (the output buffer's words; registers it does not
    write read 0, as the kernels write them)."""
    waves = int(inputs["params"][0])
    t = law.table
    if form.op == "load":
        address = np.asarray(inputs["address"]).reshape(waves, LANES)
        tile = _halves(np.asarray(inputs["tile"]).reshape(waves, ROWS, WORDS))
        ok = t[..., 0] >= 0
        rows = address[:, np.where(ok, t[..., 0], 0)]  # (waves, lanes, regs, halves)
        got = tile[np.arange(waves)[:, None, None, None], rows, np.where(ok, t[..., 1], 0)]
        return _words(np.where(ok[None], got, 0)).reshape(-1)
    held = _halves(np.asarray(inputs["held"]).reshape(waves, LANES, -1))
    held = held.reshape(waves, LANES, -1, HALVES)
    if form.op == "move":
        return _words(held[:, t[..., 0], 0, t[..., 1]]).reshape(-1)
    address = np.asarray(inputs["address"]).reshape(waves, LANES)
    tile = np.zeros((waves, ROWS, COLS), np.uint32)
    ok = t[..., 0] >= 0
    got = held[:, np.where(ok, t[..., 0], 0), np.where(ok, t[..., 1], 0),
               np.where(ok, t[..., 2], 0)]  # (waves, addr lanes, cols)
    for w in range(waves):
        tile[w, address[w]] = np.where(ok, got[w], tile[w, address[w]])
    return _words(tile).reshape(-1)


# ---- decode ----

def _agree(per_wave: np.ndarray) -> np.ndarray:
    """The id waves' answers (waves, ...) as one: INVALID where they differ."""
    return np.where((per_wave == per_wave[0]).all(0), per_wave[0], INVALID).astype(np.uint32)


def _decode_load(grid: xr.Dataset, raw: np.ndarray) -> tuple[dict[str, np.ndarray], bool]:
    """raw (waves, lanes, regs) -> from_addr_lane, from_col (lanes, regs, halves); replayed."""
    ids = grid["role"].values == "ids"
    address = grid["address"].values.astype(np.int64)
    tile = grid["tile"].values.astype(np.int64)
    v = _halves(raw).reshape(*raw.shape, HALVES).astype(np.int64)
    none = v == 0
    owner = np.full((len(address), ROWS), -1)
    for w, rows in enumerate(address):
        owner[w, rows] = np.arange(LANES)
    row, col = (v - 1) // COLS, (v - 1) % COLS
    good = (v >= 1) & (v <= ROWS * COLS)
    lane = np.where(good, owner[np.arange(len(v))[:, None, None, None], np.clip(row, 0, ROWS - 1)],
                    -1)
    lane_id = np.where(none, NONE, np.where(lane >= 0, lane, INVALID))
    col_id = np.where(none, NONE, np.where(lane >= 0, col, INVALID))
    from_lane, from_col = _agree(lane_id[ids]), _agree(col_id[ids])
    # replay the random waves through that map: written elements from their rows, the rest
    # unwritten
    ok = (from_lane < LANES) & (from_col < COLS)
    replayed = True
    for w in np.flatnonzero(~ids):
        rows = address[w][np.where(ok, from_lane, 0)]
        want = tile[w][rows, np.where(ok, from_col, 0)]
        replayed &= bool(np.array_equal(np.where(ok, want, 0), np.where(ok, v[w], 0))
                         and np.array_equal(none[w], from_lane == NONE))
    return {"from_addr_lane": from_lane, "from_col": from_col}, replayed


def _source(v: np.ndarray, regs: int) -> tuple[np.ndarray, ...]:
    """Register-element ids -> (lane, reg, half) each, -1 where not an id."""
    good = (v >= 1) & (v <= LANES * regs * HALVES)
    i = np.where(good, v - 1, 0)
    return tuple(np.where(good, x, -1) for x in (i // (regs * HALVES), (i // HALVES) % regs,
                                                  i % HALVES))


def _decode_store(grid: xr.Dataset, raw: np.ndarray) -> tuple[dict[str, np.ndarray], bool, int]:
    """raw (waves, rows, words) -> from_lane/reg/half (addr lanes, cols); replayed; stray."""
    ids = grid["role"].values == "ids"
    address = grid["address"].values.astype(np.int64)
    held = grid["held"].values.astype(np.int64)
    regs = grid.sizes["reg"]
    tile = _halves(raw).astype(np.int64)  # (waves, rows, cols)
    at = tile[np.arange(len(tile))[:, None], address]  # (waves, addr lanes, cols)
    lane, reg, half = _source(at, regs)
    fields = []
    for x in (lane, reg, half):
        fields.append(_agree(np.where(at == 0, NONE, np.where(lane >= 0, x, INVALID))[ids]))
    unaddressed = np.ones(tile.shape[:2], bool)
    unaddressed[np.arange(len(tile))[:, None], address] = False
    stray = int(np.count_nonzero(tile[unaddressed]))
    ok = fields[0] < LANES
    replayed = True
    for w in np.flatnonzero(~ids):
        want = held[w][np.where(ok, fields[0], 0), np.where(ok, fields[1], 0),
                       np.where(ok, fields[2], 0)]
        replayed &= bool(np.array_equal(np.where(ok, want, 0), at[w]))
    return dict(zip(("from_lane", "from_reg", "from_half"), fields, strict=True)), replayed, stray


def _decode_move(grid: xr.Dataset, raw: np.ndarray) -> tuple[dict[str, np.ndarray], bool]:
    """raw (waves, lanes, 1) -> from_lane, from_half (lanes, halves); replayed."""
    ids = grid["role"].values == "ids"
    held = grid["held"].values[:, :, 0].astype(np.int64)  # (waves, lanes, halves)
    v = _halves(raw).astype(np.int64)  # (waves, lanes, halves): one register
    none = v == 0
    lane, _, half = _source(v, 1)
    fields = [_agree(np.where(none, NONE, np.where(lane >= 0, x, INVALID))[ids])
              for x in (lane, half)]
    ok = fields[0] < LANES
    replayed = True
    for w in np.flatnonzero(~ids):
        want = held[w][np.where(ok, fields[0], 0), np.where(ok, fields[1], 0)]
        replayed &= bool(np.array_equal(np.where(ok, want, -1), np.where(ok, v[w], -1))
                         and ok.all())
    return {"from_lane": fields[0], "from_half": fields[1]}, replayed


def assemble(grid: xr.Dataset, forms: Sequence[Form], outputs: Mapping[str, np.ndarray]
             ) -> xr.Dataset:
    """Raw output words of every kernel ({kernel: words}) -> the dataset: the raw words and
    the decoded movement."""
    op, waves = op_of(forms), grid.sizes["wave"]
    ds = grid.copy()
    per: dict[str, list[np.ndarray]] = {}
    raws = []
    for form in forms:
        words = np.asarray(outputs[form.name], np.uint32)
        if op == "store":
            raw = words.reshape(waves, ROWS, WORDS)
            values, replayed, stray = _decode_store(grid, raw)
            values["stray"] = np.uint32(stray)
        else:
            raw = words.reshape(waves, LANES, regs_of(op))
            values, replayed = (_decode_load if op == "load" else _decode_move)(grid, raw)
        values["replayed"] = np.uint32(replayed)
        raws.append(raw)
        for k, v in values.items():
            per.setdefault(k, []).append(v)
    raw_dims = ("kernel", "wave", "row", "word") if op == "store" else \
        ("kernel", "wave", "lane", "reg")
    ds["raw"] = (raw_dims, np.stack(raws), {
        "description": "the output words as the device wrote them (16-bit element 2i in the "
                       "low half of word i)"})
    for k, dims in OBSERVABLES[op].items():
        ds[k] = (dims, np.stack(per[k]).astype(np.uint32))
        if k.startswith("from_"):
            ds[k].attrs |= FLAGS
    return ds
