"""byte-perm figures: what each selector nibble picks, and where a hypothesis gets it wrong.

Each entry of PLOTS takes (ds, tables=None, scoring="literal") and returns {kernel: figure}.
mismatch-map also draws `probelab diff`: another dataset's values stand in for the prediction
and `versus` names that dataset in the title.
The tables behind the figures are plain functions (selector_table, lane_differences,
mismatch_fractions), so they can be checked without reading pixels.
"""

import numpy as np
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from probelab.drawing import cell_table, dataset_header, new_figure

STRUCTURED = ("msb_none", "msb_all", *(f"msb_byte{k}" for k in range(8)))
NIBBLES = np.arange(16, dtype=np.uint32)
NIBBLE_LABELS = [f"{v:X}" for v in NIBBLES]
LANES = 4
# Cell kinds: 0-7 a plain pick of source byte j, then these three.
ZERO, ONES, OTHER = 8, 9, 10
KIND_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#76b7b2",  # bytes 0-3 (x)
               "#b07aa1", "#9c755f", "#edc948", "#bab0ac",  # bytes 4-7 (y)
               "#ffffff", "#1a1a1a", "#ff00ff"]  # 0x00, 0xFF, unexpected
KIND_NAMES = [*(f"byte {j} ({'x' if j < 4 else 'y'})" for j in range(8)),
              "0x00", "0xFF", "unexpected"]


def _operands(ds: xr.Dataset, patterns: tuple[str, ...]) -> np.ndarray:
    names = list(ds["pattern"].values)
    return np.array([names.index(p) for p in patterns])


def source_bytes(ds: xr.Dataset, operands: np.ndarray) -> np.ndarray:
    """(operands, 8) uint8: bytes 0-3 of x, then 4-7 of y."""
    x = ds["x"].values[operands].astype("<u4").view(np.uint8).reshape(-1, 4)
    y = ds["y"].values[operands].astype("<u4").view(np.uint8).reshape(-1, 4)
    return np.concatenate([x, y], axis=1)


def selector_table(ds: xr.Dataset, kernel: str, lane: int = 0) -> np.ndarray:
    """(10, 16) uint8: output byte `lane` for selector v << 4*lane, per structured pattern."""
    values = ds["value"].sel(kernel=kernel, selector=NIBBLES << np.uint32(4 * lane)).values
    return ((values[_operands(ds, STRUCTURED)] >> (8 * lane)) & 0xFF).astype(np.uint8)


def byte_kinds(table: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """Kind of each cell: j if it is source byte j of its row (sign bit included), ZERO, ONES
    or OTHER. Source byte j carries j + 1 in its low 7 bits, so a pick names its byte."""
    picks = table[:, :, None] == sources[:, None, :]
    kinds = np.where(picks.any(axis=2), picks.argmax(axis=2), OTHER)
    return np.select([table == 0x00, table == 0xFF], [ZERO, ONES], kinds)


def lane_differences(ds: xr.Dataset, kernel: str) -> dict[int, int]:
    """{lane: cells of its selector table that differ from lane 0's}, lanes 1-3."""
    lane0 = selector_table(ds, kernel, 0)
    return {lane: int(np.count_nonzero(selector_table(ds, kernel, lane) != lane0))
            for lane in range(1, LANES)}


def mismatch_fractions(ds: xr.Dataset, kernel: str, predicted: np.ndarray) -> np.ndarray:
    """(operand, 16): share of (selector, lane) pairs with nibble_L(s) == v whose output
    byte L differs between `predicted` (operand, selector) and the data."""
    diff = ds["value"].sel(kernel=kernel).values ^ np.asarray(predicted, np.uint32)
    selectors = ds["selector"].values
    wrong = np.zeros((diff.shape[0], NIBBLES.size))
    pairs = np.zeros(NIBBLES.size)
    for lane in range(LANES):
        nibble = (selectors >> (4 * lane)) & 0xF
        one_hot = (nibble[:, None] == NIBBLES[None, :]).astype(float)  # (selector, 16)
        wrong += (((diff >> (8 * lane)) & 0xFF) != 0).astype(float) @ one_hot
        pairs += one_hot.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return wrong / pairs


def _selector_figure(ds: xr.Dataset, kernel: str) -> Figure:
    table = selector_table(ds, kernel)
    kinds = byte_kinds(table, source_bytes(ds, _operands(ds, STRUCTURED)))
    fig = new_figure(9, 6.6)
    ax, foot = fig.subplots(2, 1, gridspec_kw={"height_ratios": [10, 2.4], "hspace": 0.28})
    cell_table(ax, np.array(KIND_COLORS)[kinds], np.vectorize("{:02X}".format)(table),
               STRUCTURED, NIBBLE_LABELS)
    ax.set_xlabel("selector nibble value v  (lane 0: s = v, other nibbles 0)")
    differ = {lane: n for lane, n in lane_differences(ds, kernel).items() if n}
    lanes = ("all 4 byte lanes agree" if not differ else "lanes differ: " + ", ".join(
        f"lane {lane} in {n}/{table.size} cells" for lane, n in differ.items()) + " vs lane 0")
    dataset_header(ax, kernel, "output byte 0 per selector nibble", ds,
                   f"{lanes} (lane L: s = v << 4L)")
    foot.axis("off")
    handles = [Patch(facecolor=c, edgecolor="0.5", label=n)
               for c, n in zip(KIND_COLORS, KIND_NAMES, strict=True)]
    foot.legend(handles=handles, loc="upper center", ncol=6, fontsize=8, frameon=False)
    foot.text(0.5, 0.0, "Cells: output byte (hex). Columns 0-7 pick bytes 0-7 (0-3 from x, "
              "4-7 from y). Source byte k holds k + 1 in its low 7 bits;\nbit 7 (sign) is set "
              "on no byte, all bytes, or only byte k (row). 'unexpected': neither a source "
              "byte of its row, 0x00 nor 0xFF.", ha="center", va="bottom", fontsize=7.5,
              transform=foot.transAxes)
    return fig


def selector_map(ds: xr.Dataset, tables: dict | None = None,
                 scoring: str = "literal", about: dict | None = None) -> dict[str, Figure]:
    """Per kernel: output byte 0 for each nibble value, over the sign-marked operands."""
    return {str(k): _selector_figure(ds, str(k)) for k in ds["kernel"].values}


def _mismatch_figure(ds: xr.Dataset, kernel: str, predicted: np.ndarray,
                     scoring: str, versus: str | None = None,
                     versus_simulated: bool = False, about: dict | None = None) -> Figure:
    fractions = mismatch_fractions(ds, kernel, predicted)
    percent = np.round(100 * fractions).astype(int)
    text = np.where(fractions == 0, "·", np.char.add(percent.astype(str), "%"))
    text = np.where((fractions > 0) & (percent == 0), "<1%", text)
    text = np.where((fractions < 1) & (percent == 100), ">99%", text)
    fig = new_figure(9.5, 7.2)
    ax, bar = fig.subplots(1, 2, gridspec_kw={"width_ratios": [40, 1], "wspace": 0.03})
    claimed = about is None or kernel in about["claimed"]
    mapping = cell_table(ax, fractions, text, list(ds["pattern"].values), NIBBLE_LABELS,
                         cmap="Reds" if claimed else "Greys", vmin=0, vmax=1)
    wrong = "is wrong" if versus is None else "differs"
    fig.colorbar(mapping, cax=bar, label=f"share of (selector, lane) pairs whose byte {wrong}")
    ax.set_xlabel("selector nibble value v  (pairs (s, L) with nibble L of s = v)")
    cells = predicted.size
    matches = cells - int(np.count_nonzero(ds["value"].sel(kernel=kernel).values != predicted))
    if versus is None:
        who = f"{about['id']} ({scoring}; verdict {about['verdict']})" if about else scoring
        verdict = "" if claimed else (f"\nNOT CLAIMED by {about['id']}: shown for "
                                      "information, its verdict ignores this kernel")
        dataset_header(ax, kernel, f"where {who} misses", ds,
                f"{matches:,} / {cells:,} cells match ({100 * matches / cells:.2f}%); "
                f"cell: share of output bytes the prediction gets wrong{verdict}")
    else:
        dataset_header(ax, kernel, "diff, A (this) vs B", ds,
                f"B = {versus}. {matches:,} / {cells:,} cells agree "
                f"({100 * matches / cells:.2f}%); cell: share of output bytes that differ",
                other_simulated=versus_simulated)
    return fig


def mismatch_map(ds: xr.Dataset, tables: dict | None = None, scoring: str = "literal",
                 versus: str | None = None, versus_simulated: bool = False,
                 about: dict | None = None) -> dict[str, Figure]:
    """Per kernel: for each operand and nibble value, how often the prediction is wrong.

    `about` names the hypothesis, its verdict and the kernels it claims (the title says them;
    a kernel it does not claim is drawn in grey, marked). For `probelab diff`, `tables` holds
    another dataset's values and `versus` names it (with `versus_simulated` when it is
    simulated): the figure is then titled as a diff."""
    if tables is None:
        raise ValueError("mismatch-map needs a hypothesis")
    predicted = np.asarray(tables[scoring]["value"], np.uint32)
    return {str(k): _mismatch_figure(ds, str(k), predicted, scoring, versus, versus_simulated,
                                     about) for k in ds["kernel"].values}


PLOTS = {"selector-map": selector_map, "mismatch-map": mismatch_map}
