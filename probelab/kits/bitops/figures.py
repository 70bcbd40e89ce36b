"""Figures of the bit-op kit's datasets, read off the dataset alone (its grid's coordinates,
the operand words it records, its values; never a probe's code or model). This module: where
each result bit or byte comes from.

- selector-map (prmt-modes): per mode, the source byte each result byte takes, for selectors
  0-15, and which selector bits change any result over every selector swept;
- truth-tables (lop3): the output bit for each input (a, b, c) and each immLut;
- shift-map (shf): the source bit of {b, a} each result bit takes, per shift amount;
- field-map (bfe-bfi): how many bits of a each result holds, and where its bit 31 comes
  from, per (pos, len).

A result bit (byte) is named by the source bit (byte) it equals in every operand word of the
grid, the structured words and the random ones alike: a name the data give, not a reading.
Kernels whose values are identical on every cell are drawn once, named together
(`groups`). The arrays behind the figures are plain functions, checked without pixels.
"""

import numpy as np
import xarray as xr
from matplotlib.axes import Axes
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from probelab.drawing import cell_table, dataset_header, new_figure, panels

# a result bit or byte that is no source's: 0 (0x00) in every word, 1 (0xFF) in every word,
# or neither; NOT_HELD: a cell the grid does not hold
ZERO, ONE, OTHER, NOT_HELD = -1, -2, -3, -4
CODE_COLOURS = {ZERO: "white", ONE: "black", OTHER: "#ff00ff", NOT_HELD: "0.85"}
CODE_WORDS = "white: 0 in every word, black: 1 in every word, magenta: neither, grey: not held"
SOURCE_MAP = "turbo"  # source bit 0-63 of {b, a}: a's bits blue to green, b's yellow to red
BYTE_COLOURS = ["#4e79a7", "#76b7b2", "#59a14f", "#8cd17d",  # bytes 0-3 (a)
                "#f28e2b", "#edc948", "#e15759", "#b07aa1"]  # bytes 4-7 (b)
LABEL_PT = 5.0  # edge labels of the image-like tables, one per row or column
PIXEL_IN = 0.13  # a cell of the image-like tables


def groups(ds: xr.Dataset) -> list[list[str]]:
    """The kernels, those whose values are identical on every cell together (in order)."""
    values = ds["value"].values
    names = [str(k) for k in ds["kernel"].values]
    found: list[list[int]] = []
    for i in range(len(names)):
        same = next((g for g in found if np.array_equal(values[g[0]], values[i])), None)
        if same is None:
            found.append([i])
        else:
            same.append(i)
    return [[names[i] for i in g] for g in found]


def symbols(words: np.ndarray, width: int, count: int) -> np.ndarray:
    """(..., count): each word's `width`-bit symbols (bits, bytes), least significant first."""
    shifts = np.arange(count, dtype=np.uint64) * np.uint64(width)
    return (np.asarray(words, np.uint64)[..., None] >> shifts) & np.uint64((1 << width) - 1)


def sources_of(sources: np.ndarray, results: np.ndarray, ones: int) -> np.ndarray:
    """For each result symbol, over every word (the first axis of both: `sources` (words, n)
    the source symbols, `results` (words, ...)): ZERO where it is 0 in every word, ONE where
    it is `ones` in every word, else the first source index it equals in every word, else
    OTHER."""
    res = np.moveaxis(results, 0, -1)
    match = (res[..., None, :] == sources.T).all(-1)
    found = np.where(match.any(-1), match.argmax(-1), OTHER)
    found = np.where((res == ones).all(-1), ONE, found)
    return np.where((res == 0).all(-1), ZERO, found)


def paint(index: np.ndarray, count: int, cmap: str | list[str] = SOURCE_MAP) -> np.ndarray:
    """(..., 4) RGBA: source index i of `count` through `cmap` (a colormap's name, or one
    colour per index), the codes in CODE_COLOURS."""
    from matplotlib import colormaps
    from matplotlib.colors import to_rgba, to_rgba_array

    index = np.asarray(index)
    if isinstance(cmap, str):
        out = colormaps[cmap](np.clip(index, 0, count - 1) / max(count - 1, 1))
    else:
        out = to_rgba_array(cmap)[np.clip(index, 0, count - 1)]
    for code, colour in CODE_COLOURS.items():
        out[index == code] = to_rgba(colour)
    return out


def short(value: int) -> str:
    """A coordinate as a label: decimal, or a power of two (less one) past 2**16."""
    if value < 1 << 16:
        return str(value)
    for p in range(16, 33):
        if value in (1 << p, (1 << p) - 1, (1 << p) + 1):
            return f"2^{p}" + {1 << p: "", (1 << p) - 1: "-1", (1 << p) + 1: "+1"}[value]
    return f"{value:#x}"


def image(ax: Axes, colors: np.ndarray, rows: list[str], cols: list[str],
          vmax: float | None = None) -> ScalarMappable | None:
    """Cells without text or grid, one label per row and column (cell_table's colours:
    values through viridis from 0 to `vmax`, NaN blank, or RGBA)."""
    return cell_table(ax, colors, np.full(np.shape(colors)[:2], ""), rows, cols, vmin=0,
                      vmax=vmax, fontsize=LABEL_PT, grid=False)


def _source_bar(fig: Figure, ax: Axes | list[Axes], label: str) -> None:
    bar = ScalarMappable(Normalize(0, 63), SOURCE_MAP)
    fig.colorbar(bar, ax=ax, label=label, fraction=0.03, pad=0.02)


# -- prmt ------------------------------------------------------------------------------------

def prmt_sources(ds: xr.Dataset, kernel: str) -> np.ndarray:
    """(selector, 4): the byte of {b, a} (0-3: a's, 4-7: b's) each result byte takes, over
    every operand word, or a code."""
    a, b = (ds[n].values.astype(np.uint64) for n in "ab")
    src = symbols((b << np.uint64(32)) | a, 8, 8)
    res = symbols(ds["value"].sel(kernel=kernel).transpose("word", "selector").values, 8, 4)
    return sources_of(src, res, 0xFF)


def selector_bits(ds: xr.Dataset, kernel: str) -> tuple[list[int], int, int]:
    """The selector bits whose flip changes some result (tried wherever the grid holds both
    selectors), and how many selectors give what their value masked to those bits gives, of
    those whose masked value the grid holds."""
    values = ds["value"].sel(kernel=kernel).transpose("selector", ...).values
    at = {int(s): i for i, s in enumerate(ds["selector"].values)}
    matter = sorted({bit for s, i in at.items() for bit in range(32)
                     if (j := at.get(s ^ (1 << bit))) is not None
                     and not np.array_equal(values[i], values[j])})
    mask = sum(1 << bit for bit in matter)
    tried = [(i, at[s & mask]) for s, i in at.items() if s & mask in at]
    return matter, sum(np.array_equal(values[i], values[j]) for i, j in tried), len(tried)


def selector_map(ds: xr.Dataset, **_: object) -> dict[str, Figure]:
    """One figure: per mode (kernel), the source byte of each result byte for selectors
    0-15, and which selector bits matter."""
    kinds = groups(ds)
    selectors = ds["selector"].values
    shown = [i for i in np.argsort(selectors, kind="stable") if selectors[i] < 16]
    fig = new_figure(2.3 * len(kinds) + 1, 0.32 * len(shown) + 3)
    head, axes = panels(fig, 1, len(kinds))
    for ax, names in zip(axes[0], kinds, strict=True):
        picked = prmt_sources(ds, names[0])[shown]
        text = np.vectorize(lambda i: {ZERO: "00", ONE: "FF", OTHER: "?"}.get(i, str(i)))(
            picked)
        cell_table(ax, paint(picked, 8, BYTE_COLOURS), text,
                   [f"{selectors[i]:#x}" for i in shown], [f"d.{k}" for k in range(4)])
        matter, agree, tried = selector_bits(ds, names[0])
        mask = sum(1 << bit for bit in matter)
        ax.set_title(", ".join(names), fontsize=10)
        ax.set_xlabel(f"result byte\nselector bits that matter: "
                      f"{', '.join(map(str, matter)) or 'none'}\n{agree} of {tried} "
                      f"selectors act as s & {mask:#x}", fontsize=7)
    dataset_header(head, "prmt.b32 modes", "the byte of {b, a} each result byte takes",
                   ds, "cells: source byte 0-3 (a), 4-7 (b), named over every operand word "
                   "swept; 00/FF: that constant in every word, ?: neither; rows: selector")
    return {"all": fig}


# -- lop3 ------------------------------------------------------------------------------------

def truth_table(ds: xr.Dataset, kernel: str) -> np.ndarray:
    """(8, lut): row k = 4a + 2b + c, the output bit at every bit position of every triple
    whose a, b, c bits there are k; OTHER where those differ, NOT_HELD where none is k."""
    a, b, c = (symbols(ds[n].values, 1, 32).astype(np.int64) for n in "abc")
    combo = 4 * a + 2 * b + c  # (triple, bit)
    out = symbols(ds["value"].sel(kernel=kernel).transpose("triple", "lut").values, 1, 32)
    out = np.moveaxis(out, 1, 0)  # (lut, triple, bit)
    table = np.full((8, out.shape[0]), NOT_HELD)
    for k in range(8):
        seen = out[:, combo == k]
        if seen.shape[1]:
            table[k] = np.where(seen.all(1), 1, np.where(seen.any(1), OTHER, 0))
    return table


def truth_tables(ds: xr.Dataset, **_: object) -> dict[str, Figure]:
    """One figure per kernel group: the 8 x 256 truth-table image."""
    out = {}
    luts = [int(v) for v in ds["lut"].values]
    for names in groups(ds):
        table = truth_table(ds, names[0])
        read = (np.where(table == 1, 1, 0) << np.arange(8)[:, None]).sum(0)
        rgba = paint(np.where(table == 1, ONE, np.where(table == 0, ZERO, table)), 1)
        fig = new_figure(PIXEL_IN * 0.5 * len(luts) + 2, 3.2)
        ax = fig.subplots()
        image(ax, rgba, [f"a b c = {k >> 2} {(k >> 1) & 1} {k & 1}" for k in range(8)],
               [f"{v:#04x}" if v % 16 == 0 else "" for v in luts])
        ax.set_xlabel("immLut", fontsize=8)
        same = int(sum(int(r) == v for r, v in zip(read, luts, strict=True)))
        dataset_header(ax, ", ".join(names), "the output bit for each input (a, b, c)", ds,
                       f"over every bit of {ds.sizes['triple']} operand triples; {CODE_WORDS}; "
                       f"the column read as a number (row k = bit k) is its immLut in {same} "
                       f"of {len(luts)} columns")
        out[names[0]] = fig
    return out


# -- shf -------------------------------------------------------------------------------------

def shift_sources(ds: xr.Dataset, kernel: str) -> np.ndarray:
    """(shift, 32): the bit of {b, a} (0-31: a's, 32-63: b's) each result bit takes, over
    every operand pair, or a code."""
    a, b = (ds[n].values.astype(np.uint64) for n in "ab")
    src = symbols((b << np.uint64(32)) | a, 1, 64)
    res = symbols(ds["value"].sel(kernel=kernel).transpose("pair", "shift").values, 1, 32)
    return sources_of(src, res, 1)


def shift_map(ds: xr.Dataset, **_: object) -> dict[str, Figure]:
    """One figure: per kernel group, the source of each result bit (bit 31 first) per shift."""
    kinds = groups(ds)
    shifts = [short(int(s)) for s in ds["shift"].values]
    width = PIXEL_IN * 32 + 1.3
    fig = new_figure(width * len(kinds) + 1.5, PIXEL_IN * len(shifts) + 3)
    head, axes = panels(fig, 1, len(kinds))
    for ax, names in zip(axes[0], kinds, strict=True):
        image(ax, paint(shift_sources(ds, names[0])[:, ::-1], 64), shifts,
               [str(i) if i % 4 == 0 else "" for i in range(31, -1, -1)])
        facts = [f"{f} {int(ds[f].sel(kernel=names[0]))}" for f in ("left", "clamp")
                 if f in ds.coords]
        ax.set_title("\n".join(names) + ("\n" + ", ".join(facts) if facts else ""), fontsize=7)
        ax.set_xlabel("result bit", fontsize=7)
    _source_bar(fig, list(axes[0]), "source bit of {b, a} (0-31: a, 32-63: b)")
    dataset_header(head, "funnel shifts", "the bit of {b, a} each result bit takes", ds,
                   f"rows: the shift operand; over every operand pair swept; {CODE_WORDS}")
    return {"all": fig}


# -- bfe / bfi -------------------------------------------------------------------------------

def field_sources(ds: xr.Dataset, kernel: str) -> np.ndarray:
    """(pos, len, 32): the bit of {b, a} (0-31: a's, 32-63: b's) each result bit takes, over
    every operand word, or a code."""
    a, b = (ds[n].values.astype(np.uint64) for n in "ab")
    src = symbols((b << np.uint64(32)) | a, 1, 64)
    res = symbols(ds["value"].sel(kernel=kernel).transpose("word", "pos", "len").values, 1, 32)
    return sources_of(src, res, 1)


def bits_of_a(sources: np.ndarray) -> np.ndarray:
    """How many distinct bits of a the result holds, per cell (the last axis: result bits)."""
    return (sources[..., None] == np.arange(32)).any(-2).sum(-1)


def field_map(ds: xr.Dataset, **_: object) -> dict[str, Figure]:
    """One figure: per kernel group, the distinct bits of a the result holds and the source
    of its bit 31, over (pos, len)."""
    kinds = groups(ds)
    pos, lens = ([short(int(v)) for v in ds[n].values] for n in ("pos", "len"))
    side = PIXEL_IN * len(lens) + 1.4
    fig = new_figure(2 * side + 2, (PIXEL_IN * len(pos) + 1.6) * len(kinds) + 1.5)
    head, axes = panels(fig, len(kinds), 2)
    for (count_ax, top_ax), names in zip(axes, kinds, strict=True):
        src = field_sources(ds, names[0])
        mapping = image(count_ax, bits_of_a(src).astype(float), pos, lens, vmax=32)
        fig.colorbar(mapping, ax=count_ax, label="bits of a held", fraction=0.05, pad=0.02)
        image(top_ax, paint(src[..., 31], 64), pos, lens)
        _source_bar(fig, top_ax, "source of result bit 31 (0-31: a, 32-63: b)")
        for ax in (count_ax, top_ax):
            ax.set_title(", ".join(names), fontsize=8)
            ax.set_xlabel("len", fontsize=7)
            ax.set_ylabel("pos", fontsize=7)
    dataset_header(head, "bit fields", "the bits of a each result holds", ds,
                   f"left: how many distinct bits of a; right: where result bit 31 comes "
                   f"from; over every operand word swept; {CODE_WORDS}")
    return {"all": fig}
