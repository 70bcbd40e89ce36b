"""Figures of the bit-op kit's datasets, read off the dataset alone: what each result is,
where the result is a count, a position or a mask rather than a moved bit
(probelab.kits.bitops.figures draws those).

- scan-map (bit-scan): every kernel's result on each family of words numbered by a bit
  position k (a single bit, a low or high run, a single hole: the pattern names the grid
  records), and on the words named without a number;
- mask-map (bmsk): each mask's lowest set bit and width, per (pos, width), and whether every
  mask is one run of ones;
- search-map (fns): the result per (offset, base) for the grid's first masks, and the
  offsets whose result is one value over every mask and base.
"""

import re

import numpy as np
import xarray as xr
from matplotlib.figure import Figure

from probelab.drawing import cell_table, dataset_header, new_figure, panels
from probelab.kits.bitops.figures import PIXEL_IN, groups, image, short

NUMBERED = re.compile(r"([a-z_]*?)(\d+)")
WORD_BITS = 32
ALL_ONES = 0xFFFFFFFF
NOT_FOUND = "0.85"  # 0xffffffff: grey
SHOWN_MASKS = 4


def _rgba(values: np.ndarray, top: int) -> np.ndarray:
    """Values 0..top through viridis; 0xffffffff grey; anything else white."""
    from matplotlib import colormaps
    from matplotlib.colors import to_rgba

    out = colormaps["viridis"](np.clip(values, 0, top) / top)
    out[values == ALL_ONES] = to_rgba(NOT_FOUND)
    out[(values > top) & (values != ALL_ONES)] = to_rgba("white")
    return out


def _word_text(value: int) -> str:
    return "-1" if value == ALL_ONES else str(value)


# -- bit scans -------------------------------------------------------------------------------

def scan_panels(ds: xr.Dataset) -> list[tuple[str, list[str], list[int]]]:
    """(family, column labels, word index per column, -1 where the grid keeps no such word
    under that name): each family of words numbered 0 to 31 (bit k, low k, ...; not the
    random ones), then the words named without a number (zero, ones)."""
    numbered: dict[str, dict[int, int]] = {}
    plain: list[int] = []
    for i, name in enumerate(str(n) for n in ds["pattern"].values):
        if found := NUMBERED.fullmatch(name):
            numbered.setdefault(found.group(1), {})[int(found.group(2))] = i
        elif not any(c.isdigit() for c in name):
            plain.append(i)
    shown = [(family, [str(k) for k in range(WORD_BITS)],
              [at.get(k, -1) for k in range(WORD_BITS)])
             for family, at in numbered.items()
             if max(at) < WORD_BITS and not family.startswith("random")]
    names = [str(ds["pattern"].values[i]) for i in plain]
    return shown + ([("named", names, plain)] if plain else [])


def scan_map(ds: xr.Dataset, **_: object) -> dict[str, Figure]:
    """One figure: per family of words, every kernel group's result (rows) per word."""
    kinds = groups(ds)
    values = ds["value"].sel(kernel=[k[0] for k in kinds]).transpose("kernel", "word").values
    families = scan_panels(ds)
    # a kernel that gives words (any result past 32 but all ones) is written in hex, uncoloured
    words_out = ((values > WORD_BITS) & (values != ALL_ONES)).any(1)
    fig = new_figure(0.45 * WORD_BITS + 2.5, (0.3 * len(kinds) + 1.2) * len(families) + 1.5)
    head, axes = panels(fig, len(families), 1, hspace=0.6)
    for ax, (family, labels, words) in zip(axes[:, 0], families, strict=True):
        at = np.array(words)
        held = np.where(at >= 0, values[:, np.maximum(at, 0)], ALL_ONES).astype(np.int64)
        text = np.vectorize(_word_text)(held)
        text[words_out] = np.vectorize("{:08x}".format)(held[words_out])
        colours = _rgba(held, WORD_BITS)
        colours[words_out] = colours[:, at < 0] = (1, 1, 1, 1)
        text[:, at < 0] = ""
        cell_table(ax, colours, text, [", ".join(k) for k in kinds], labels)
        ax.set_xlabel(f"word: {family}" + (" k" if family != "named" else ""), fontsize=8)
    dataset_header(head, "bit scans", "each result on words with one boundary at bit k",
                   ds, "cells: the result (-1: 0xffffffff, grey); a kernel whose results "
                   "are words in 8 hex digits, white; blank: the grid keeps that word under "
                   "another name")
    return {"all": fig}


# -- bmsk ------------------------------------------------------------------------------------

def mask_runs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lowest set bit, -1 for none; bits set; whether the set bits are one run)."""
    v = np.asarray(values, np.uint64)
    bits = (v[..., None] >> np.arange(WORD_BITS, dtype=np.uint64)) & np.uint64(1)
    count = bits.sum(-1).astype(np.int64)
    lowest = np.where(count > 0, bits.argmax(-1), -1)
    run = v >> np.maximum(lowest, 0).astype(np.uint64)
    return lowest, count, (count == 0) | ((run & (run + np.uint64(1))) == 0)


def mask_map(ds: xr.Dataset, **_: object) -> dict[str, Figure]:
    """One figure: per kernel group, each mask's lowest set bit and width over (pos, width)."""
    kinds = groups(ds)
    pos, widths = ([short(int(v)) for v in ds[n].values] for n in ("pos", "width"))
    side = PIXEL_IN * len(widths) + 1.6
    fig = new_figure(2 * side + 1, (PIXEL_IN * len(pos) + 1.8) * len(kinds) + 1.5)
    head, axes = panels(fig, len(kinds), 2)
    for row, names in zip(axes, kinds, strict=True):
        masks = ds["value"].sel(kernel=names[0]).transpose("pos", "width").values
        lowest, count, run = mask_runs(masks)
        for ax, shown, what in zip(row, (lowest, count), ("lowest set bit", "bits set"),
                                   strict=True):
            mapping = image(ax, np.where(count > 0, shown, np.nan), pos, widths,
                            vmax=WORD_BITS)
            fig.colorbar(mapping, ax=ax, label=what, fraction=0.05, pad=0.02)
            ax.set_title(f"{', '.join(names)}: {what}", fontsize=8)
            ax.set_xlabel(f"width (b); one run of ones in {int(run.sum())} of {run.size} "
                          "masks", fontsize=7)
            ax.set_ylabel("pos (a)", fontsize=7)
    dataset_header(head, "bmsk", "each mask's lowest set bit and width", ds,
                   "blank: no bit set (mask 0)")
    return {"all": fig}


# -- fns -------------------------------------------------------------------------------------

def offsets_of(ds: xr.Dataset) -> list[int]:
    """The offset coordinate, as signed numbers where it says it is an s32."""
    raw = [int(v) for v in ds["offset"].values]
    signed = "s32" in str(ds["offset"].attrs.get("description", ""))
    return [v - (1 << 32) if signed and v >= 1 << 31 else v for v in raw]


def constant_rows(ds: xr.Dataset, kernel: str) -> list[tuple[int, int]]:
    """(offset, result) for each offset whose result is one value over every mask and base."""
    values = ds["value"].sel(kernel=kernel).transpose("offset", ...).values
    flat = values.reshape(values.shape[0], -1)
    return [(off, int(row[0])) for off, row in zip(offsets_of(ds), flat, strict=True)
            if (row == row[0]).all()]


def search_map(ds: xr.Dataset, **_: object) -> dict[str, Figure]:
    """One figure: per kernel group, the result per (offset, base) for the first masks."""
    kinds = groups(ds)
    offsets = [str(v) for v in offsets_of(ds)]
    bases = [str(int(v)) if int(v) % 4 == 0 else "" for v in ds["base"].values]
    masks = min(SHOWN_MASKS, ds.sizes["mask"])
    names = [str(p) for p in ds["pattern"].values] if "pattern" in ds.coords else \
        [f"{int(m):#x}" for m in ds["mask"].values]
    width = PIXEL_IN * len(bases) + 1.6
    fig = new_figure(width * masks + 1, (PIXEL_IN * len(offsets) + 2.4) * len(kinds) + 1)
    head, axes = panels(fig, len(kinds), masks)
    for row, group in zip(axes, kinds, strict=True):
        values = ds["value"].sel(kernel=group[0]).transpose("mask", "offset", "base").values
        for m, ax in enumerate(row):
            image(ax, _rgba(values[m].astype(np.int64), WORD_BITS - 1), offsets, bases)
            ax.set_title(f"{', '.join(group)}\nmask {names[m]} "
                         f"({int(ds['mask'].values[m]):#010x})", fontsize=8)
            ax.set_xlabel("base", fontsize=7)
            ax.set_ylabel("offset", fontsize=7)
        same = "; ".join(f"{off}: {_word_text(v)}" for off, v in constant_rows(ds, group[0]))
        row[0].annotate(f"one result over every mask and base at offset {same}",
                        (0, 0), xytext=(0, -28), xycoords="axes fraction",
                        textcoords="offset points", va="top", fontsize=7)
    dataset_header(head, "fns", "the n-th set bit found, per offset and base", ds,
                   "colour: the bit position found (0-31); grey: 0xffffffff (none found)")
    return {"all": fig}
