"""swmmac-iu4 figures: the decoded pairing law, and the calibrated lane maps.

Each entry of PLOTS takes (ds, tables=None, scoring="literal") and returns {kernel: figure}.
Both draw what decode.py recovers from the raw D words, so a figure never shows a law the
decode refused: unknown cells are marked, and the decode's problems are printed under it.
The tables behind the figures are plain functions (pairing_table, field_table,
lane_tables), so they can be checked without reading pixels.
"""

from pathlib import Path

import numpy as np
import xarray as xr
from matplotlib import colormaps
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

from probelab.plot import cell_table, dataset_header, new_figure
from probelab.probe import load_sibling

decode = load_sibling(Path(__file__).parent / "decode.py")
UNKNOWN, SEVERAL = decode.UNKNOWN, decode.SEVERAL
FIELDS, VALUES = 16, 4
OFFSET_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1"]  # offset 0-3 in the group
BAD = "#ff00ff"  # no single B nibble, outside the group, or not given by the data
NOT_REACHED, OVERLAP = "#ffffff", "#ff00ff"
CLASS_COLORS = [to_hex(c) for name in ("tab20", "tab20b") for c in colormaps[name].colors]
PROBLEMS_SHOWN = 5


def _wrap(text: str, width: int = 125) -> str:
    words, lines, line = text.split(" "), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = "    " + word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])


def _footer(problems: list[str], notes: list[str]) -> str:
    if not problems:
        lines = ["No problems: every sub-sweep agrees with this law."]
    else:
        lines = [f"NO LAW — {len(problems)} problem(s):"]
        lines += [_wrap(f"• {p}") for p in problems[:PROBLEMS_SHOWN]]
        if len(problems) > PROBLEMS_SHOWN:
            lines.append(f"• ... {len(problems) - PROBLEMS_SHOWN} more (decode.recover_law)")
    lines += [_wrap(f"note: {n}") for n in notes[:PROBLEMS_SHOWN]]
    return "\n".join(lines)


def nibble_labels(nibbles: int) -> list[str]:
    """Row labels: compressed A nibble n, its group (n // 2) and which of the group's two
    compressed nibbles it is (low: bits 0-3 of its byte, high: bits 4-7)."""
    return [f"n={n} (group {n // 2}, {'high' if n % 2 else 'low'})" for n in range(nibbles)]


def pairing_table(rec) -> tuple[np.ndarray, np.ndarray]:
    """(K/4, 4) colours and text: B nibble q (and its offset in n's group) per (n, v)."""
    colors = np.full(rec.paired.shape, BAD, dtype=object)
    text = np.full(rec.paired.shape, "?", dtype=object)
    for (n, v), q in np.ndenumerate(rec.paired):
        if q == UNKNOWN:
            continue
        o = int(rec.offset[n, v])
        text[n, v] = f"q={q}\n(+{o})" if o != UNKNOWN else f"q={q}\n(outside)"
        if o != UNKNOWN:
            colors[n, v] = OFFSET_COLORS[o]
    return colors, text


def field_table(rec) -> tuple[np.ndarray, np.ndarray]:
    """(K/4, 16) colours and text: which idx field governs each nibble. The governing field
    is dark with "●"; several fields are all marked in magenta; f = n is shaded."""
    nn = rec.nibbles
    colors = np.full((nn, FIELDS), "#ffffff", dtype=object)
    text = np.full((nn, FIELDS), "", dtype=object)
    for n in range(nn):
        if n < FIELDS:
            colors[n, n] = "#e6e6e6"
        for f in rec.fields[n]:
            colors[n, f] = "#1a1a1a" if len(rec.fields[n]) == 1 else BAD
            text[n, f] = "●"
    return colors, text


def _pairing_figure(ds: xr.Dataset, kernel: str) -> Figure:
    rec = decode.recover_law(ds, kernel)
    nn = rec.nibbles
    footer = _footer(rec.problems, rec.notes)
    foot_h = 0.4 + 0.14 * footer.count("\n")
    fig = new_figure(10.5, 1.6 + 0.5 * nn + foot_h)
    grid = fig.add_gridspec(2, 2, width_ratios=[4, 5.5], height_ratios=[0.5 * nn, foot_h],
                            wspace=0.08, hspace=0.9 / (0.5 * nn + foot_h))
    ax, side = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1])
    foot = fig.add_subplot(grid[1, :])
    colors, text = pairing_table(rec)
    cell_table(ax, colors, text, nibble_labels(nn), [f"v={v}" for v in range(VALUES)])
    ax.set_xlabel("value v of the governing idx field")
    colors, text = field_table(rec)
    cell_table(side, colors, text, [""] * nn, [str(f) for f in range(FIELDS)])
    side.set_xlabel("idx field f (bits 2f..2f+1 of the lane's idx word)\n"
                    "●: the field that governs nibble n (grey: f = n)")
    status = "law recovered" if rec.ok else f"NO LAW ({len(rec.problems)} problems)"
    dataset_header(ax, kernel, "which B nibble each compressed A nibble pairs with", ds,
            f"{status}. Cell: paired B nibble q (its offset in group 4·(n//2)); "
            f"colour: offset 0-3, magenta: no single B nibble / outside the group")
    foot.axis("off")
    foot.text(0, 0, footer, ha="left", va="bottom", fontsize=7.5, family="monospace",
              transform=foot.transAxes, color="black" if rec.ok else "#b00000")
    return fig


def pairing_map(ds: xr.Dataset, tables: dict | None = None,
                scoring: str = "literal") -> dict[str, Figure]:
    """Per kernel: the decoded pairing law (n x v -> q) and the governing field of each n."""
    return {str(k): _pairing_figure(ds, str(k)) for k in ds["kernel"].values}


def _runs(values: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5"."""
    out, start = [], None
    for i, v in enumerate(values):
        if start is None:
            start = v
        if i + 1 == len(values) or values[i + 1] != v + 1:
            out.append(str(start) if start == v else f"{start}-{v}")
            start = None
    return ",".join(out)


def _class_color(cls: int) -> str:
    if cls == UNKNOWN:
        return NOT_REACHED
    if cls == SEVERAL:
        return OVERLAP
    return CLASS_COLORS[cls % len(CLASS_COLORS)]


def _class_name(side: str, cls: int) -> str:
    return {UNKNOWN: "-", SEVERAL: "*"}.get(int(cls), f"{side}{cls}")


def lane_tables(maps) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Colours and text of the three views: "d" (32 D lanes x 8 dwords: the (A class,
    B class) reaching each position), "a" and "b" (32 source lanes x 32 D lanes: the dwords
    a lane reaches in each D lane)."""
    d_text = np.array([[f"{_class_name('a', a)} {_class_name('b', b)}"
                        for a, b in zip(ra, rb, strict=True)]
                       for ra, rb in zip(maps.d_a, maps.d_b, strict=True)], dtype=object)
    d_colors = np.vectorize(_class_color, otypes=[object])(maps.d_a)
    views = {"d": (d_colors, d_text)}
    for side, reach, cls in (("a", maps.a_reach, maps.a_class), ("b", maps.b_reach,
                                                                 maps.b_class)):
        colors = np.full(reach.shape[:2], NOT_REACHED, dtype=object)
        text = np.full(reach.shape[:2], "", dtype=object)
        for lane, d_lane in zip(*np.nonzero(reach.any(axis=2)), strict=True):
            text[lane, d_lane] = _runs(np.flatnonzero(reach[lane, d_lane]).tolist())
            colors[lane, d_lane] = _class_color(int(cls[lane]))
        views[side] = (colors, text)
    return views


def _lane_figure(ds: xr.Dataset, kernel: str) -> Figure:
    maps = decode.lane_maps(ds, kernel)
    views = lane_tables(maps)
    d_colors, d_text = views["d"]
    fig = new_figure(26, 14.5)
    grid = fig.add_gridspec(2, 3, width_ratios=[11, 32, 32], height_ratios=[32, 1.5],
                            wspace=0.12, hspace=0.16)
    d_ax, a_ax, b_ax = (fig.add_subplot(grid[0, i]) for i in range(3))
    foot = fig.add_subplot(grid[1, :])
    lanes = [str(lane) for lane in range(decode.LANES)]
    cell_table(d_ax, d_colors, np.char.replace(d_text.astype(str), " ", "\n"), lanes,
               [str(e) for e in range(decode.DWORDS)])
    d_ax.set_ylabel("D lane")
    d_ax.set_xlabel("D dword\nD register: the (A class, B class)\nthat reaches each position")
    for ax, side, name in ((a_ax, "a", "A"), (b_ax, "b", "B")):
        cls = maps.a_class if side == "a" else maps.b_class
        rows = [f"{lane} ({_class_name(side, c)})" for lane, c in enumerate(cls)]
        cell_table(ax, *views[side], rows, lanes, fontsize=7.5)
        ax.set_ylabel(f"{name} lane (its class)", labelpad=2)
        ax.set_xlabel(f"D lane\n{name} lanes: which D positions each reaches "
                      f"({'lane' if side == 'a' else 'B-lane'} sub-sweep, hit cells); "
                      "cell: the D dwords reached in that D lane")
    status = "calibrated" if maps.ok else f"NOT CALIBRATED ({len(maps.problems)} problems)"
    dataset_header(d_ax, kernel, "calibrated lane maps, from raw D words", ds,
            f"{status}. Class aN / bN: the A / B lanes that reach exactly what lane N "
            "reaches (N = the smallest such lane; in a matrix layout one row of A / one "
            "column of B). '-': reached by none, '*': by several classes (magenta).")
    foot.axis("off")
    foot.text(0, 0, _footer(maps.problems, []) if maps.problems else
              "Every D position is reached by exactly one A class and one B class, and no two "
              "positions share a label.", ha="left", va="bottom", fontsize=8,
              family="monospace", transform=foot.transAxes,
              color="black" if maps.ok else "#b00000")
    return fig


def lane_map(ds: xr.Dataset, tables: dict | None = None,
             scoring: str = "literal") -> dict[str, Figure]:
    """Per kernel: the D register labelled by calibrated lane classes, and the A and B lane
    views (which D positions each lane reaches)."""
    return {str(k): _lane_figure(ds, str(k)) for k in ds["kernel"].values}


PLOTS = {"pairing-map": pairing_map, "lane-map": lane_map}
