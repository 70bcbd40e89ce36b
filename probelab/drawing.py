"""Figures for any probe: save them (PNG + SVG, atomically) and draw labelled cell tables;
`Table`: the machine-readable rows beside a figure (CSV + JSON).

Rendering is headless: the Agg backend is selected before pyplot is imported. Figures are
built with `new_figure` (no pyplot state), so a notebook or a test can make many of them
without leaking; `save_figure` closes them anyway.
"""

import contextlib
import csv
import io
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import matplotlib

matplotlib.use("Agg")

import numpy as np
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.backends.backend_agg import RendererAgg, get_hinting_flag
from matplotlib.cm import ScalarMappable
from matplotlib.collections import LineCollection
from matplotlib.colors import Colormap, Normalize, to_rgba_array
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties, findfont, get_font
from matplotlib.textpath import text_to_path
from matplotlib.transforms import Affine2D, Bbox, IdentityTransform, Transform, offset_copy

from probelab.storage import atomic_write_bytes

# PNG resolution: at 150 dpi a 5 pt label is 10 px tall; at 200 the PNG (its pixels, drawn
# and encoded) took half of the largest datasets' `plot`. The SVG is sharp at any size.
DPI = 150
PAD_INCHES = 0.1
FORMATS = ("png", "svg")
# Reproducible bytes (no date, no version). The PNG is Agg's pixels encoded with a 256-colour
# palette (`palette_png`): cells are flat colours, and only text edges carry more, so the
# files are a third the size (the docs travel to the device machine, whose copy of the
# working tree is capped)
SVG_METADATA = {"Date": None, "Creator": None}
PALETTE_LEVEL = 9  # zlib level of the palette PNG: 0.3 s on the largest lane map
MIN_FONT, MAX_FONT = 5.0, 12.0
CELL_EDGE = "0.82"  # light grey: visible around white cells, quiet around coloured ones
LINE_SPACING = 1.2  # as Text spaces its lines
TICK_PAD, LABEL_PAD = 3.5, 4.0  # points, as matplotlib's defaults for ticks and axis labels
ALIGN = {"left": 0.0, "center": 0.5, "right": 1.0, "bottom": 0.0, "top": 1.0}


def new_figure(width: float, height: float) -> Figure:
    """A figure outside pyplot's registry (nothing to leak if it is never closed)."""
    return Figure(figsize=(width, height), dpi=100)


@dataclass(frozen=True)
class Table:
    """A machine-readable companion of a figure: rows of named columns, written beside it as
    `stem`.csv and `stem`.json (people diff them against their own tables)."""

    columns: tuple[str, ...]
    rows: tuple[tuple[object, ...], ...]

    def save(self, stem: Path) -> list[Path]:
        """Write both files (reproducible bytes; a file already holding them is left alone)."""
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows([self.columns, *self.rows])
        records = [dict(zip(self.columns, row, strict=True)) for row in self.rows]
        paths = []
        for fmt, data in (("csv", text.getvalue()), ("json", json.dumps(records, indent=1))):
            path = stem.with_name(f"{stem.name}.{fmt}")
            if not (path.is_file() and path.read_bytes() == data.encode()):
                atomic_write_bytes(path, data.encode())
            paths.append(path)
        return paths


def save_output(output: Figure | Table, stem: Path) -> list[Path]:
    """What a plot function returned, written: a figure as PNG + SVG, a table as CSV + JSON."""
    return output.save(stem) if isinstance(output, Table) else save_figure(output, stem)


def save_figure(fig: Figure, stem: Path) -> list[Path]:
    """Write `stem`.png and `stem`.svg atomically (parents created), close `fig`, return paths.

    The bytes are reproducible (no date, fixed SVG ids), and a file that already holds them
    (a PNG: the same picture, whatever its encoder) is left alone, so redrawing an unchanged
    figure never dirties a checkout. The suffix is appended, never substituted: a stem such
    as `selector-map.prmt` keeps its dot. Within `saving_behind`, the PNG is encoded and
    both files written on its thread.
    """
    paths = [stem.with_name(f"{stem.name}.{fmt}") for fmt in FORMATS]
    try:
        # The tight box, found once for both formats and without a draw ("tight" draws the
        # whole figure once more per format to find it); measuring needs no canvas pixels
        box = fig.get_tightbbox(RendererAgg(1, 1, fig.dpi)).padded(PAD_INCHES)
        pixels = _Canvas()
        fig.savefig(pixels, format="rgba", dpi=DPI, bbox_inches=box)
        png = _soon(lambda: palette_png(pixels.rgba))  # encoded while the SVG is drawn
        svg = io.BytesIO()
        # SVG keeps its text as text: a third of the size, and searchable
        with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "probelab"}):
            fig.savefig(svg, format="svg", dpi=DPI, bbox_inches=box, metadata=SVG_METADATA)
    finally:
        if (pyplot := sys.modules.get("matplotlib.pyplot")) is not None:
            pyplot.close(fig)  # a figure made with pyplot is in its registry until closed
    _soon(lambda: _write_new(paths, [png.result(), svg.getvalue()]))
    return paths


class _Canvas(io.RawIOBase):
    """A file for Agg to write its canvas to (format "rgba"): kept as its pixels, (height,
    width, 4) uint8 rows top first, with no PNG encoded and decoded on the way."""

    rgba: np.ndarray

    def writable(self) -> bool:
        return True

    def write(self, canvas: memoryview) -> int:  # type: ignore[override]
        self.rgba = np.array(canvas)  # a copy: the canvas goes with its renderer
        return self.rgba.nbytes


def _write_new(paths: list[Path], contents: list[bytes]) -> None:
    for path, data in zip(paths, contents, strict=True):
        if not _holds(path, data):
            atomic_write_bytes(path, data)


def _holds(path: Path, data: bytes) -> bool:
    """Whether the file at `path` already shows `data`: the same bytes, or for a PNG the same
    picture (its pixels decoded alike; the lab writes no metadata). Other releases of Pillow
    and its zlib encode one picture in other bytes: a checkout is not dirtied by them."""
    if not path.is_file():  # none there yet (or no regular file: the write says why)
        return False
    held = path.read_bytes()
    return held == data or (path.suffix == ".png" and _same_pixels(held, data))


def _same_pixels(a: bytes, b: bytes) -> bool:
    """Two PNG files decode to the same RGBA pixels (False if either is no PNG)."""
    from PIL import Image, UnidentifiedImageError

    try:
        first, second = (np.asarray(Image.open(io.BytesIO(png)).convert("RGBA"))
                         for png in (a, b))
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        return False
    return first.shape == second.shape and bool((first == second).all())


T = TypeVar("T")
_pending: list[Future[Any]] | None = None  # saves handed to `saving_behind`'s thread
_saver = ThreadPoolExecutor(1, thread_name_prefix="probelab-save")


def _soon(work: Callable[[], T]) -> Future[T]:
    """`work` run now (its error raised), or within `saving_behind` queued on its thread
    (one thread: what is queued later runs later)."""
    if _pending is None:
        done: Future[T] = Future()
        done.set_result(work())
        return done
    queued = _saver.submit(work)
    _pending.append(queued)
    return queued


@contextlib.contextmanager
def saving_behind() -> Iterator[None]:
    """Within: each `save_figure` hands its PNG's encoding and both files' writing to a
    thread (PIL encodes outside the GIL) and returns, so the next figure is drawn meanwhile.
    On leaving, every file is written (or the first error raised), however the block ends."""
    global _pending
    outer, _pending = _pending, []
    try:
        yield
    finally:  # every save waited for, so an interrupted command says truly what it wrote
        pending, _pending = _pending, outer
        errors = [e for e in (done.exception() for done in pending) if e is not None]
    if errors:
        raise errors[0]


def palette_png(rgba: np.ndarray) -> bytes:
    """Pixels ((height, width, 4) uint8 RGBA, rows top first) as a 256-colour palette PNG
    (deterministic: octree quantizer, no dither), no metadata."""
    from PIL import Image  # matplotlib's own dependency

    if rgba.ndim != 3 or rgba.shape[2] != 4 or rgba.dtype != np.uint8:
        raise ValueError(f"not RGBA pixels: {rgba.dtype} {rgba.shape}")
    image = Image.fromarray(rgba).convert("RGB")
    out = io.BytesIO()
    image.quantize(256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(
        out, "PNG", compress_level=PALETTE_LEVEL)
    return out.getvalue()


def _rgba(colors: np.ndarray, cmap: str | Colormap, vmin: float | None,
          vmax: float | None) -> tuple[np.ndarray, ScalarMappable | None]:
    """(rows, cols, 4) RGBA from values (through cmap; NaN: the cmap's 'bad' colour) or colours,
    and for values the mapping used (for a colorbar)."""
    colors = np.asarray(colors)
    if colors.ndim == 3:  # RGB(A) numbers
        flat = to_rgba_array(colors.reshape(-1, colors.shape[-1]))
        return flat.reshape(*colors.shape[:2], 4), None
    if colors.dtype.kind in "USO":  # colour names or hex strings
        return to_rgba_array(colors.reshape(-1)).reshape(*colors.shape, 4), None
    values = np.ma.masked_invalid(colors.astype(float))
    norm = Normalize(vmin, vmax)
    norm.autoscale_None(values)
    mapping = ScalarMappable(norm, matplotlib.colormaps.get_cmap(cmap))
    return mapping.to_rgba(values), mapping


def _font_size(ax: Axes, shape: tuple[int, int], text: np.ndarray) -> float:
    """The largest size (within MIN_FONT..MAX_FONT) at which the longest label fits its cell."""
    box = ax.get_window_extent()  # pixels
    points = 72 / ax.figure.dpi
    cell_h, cell_w = box.height * points / shape[0], box.width * points / shape[1]
    labels = [str(cell).split("\n") for cell in text.reshape(-1)] or [[""]]
    longest = max(len(line) for lines in labels for line in lines)
    n_lines = max(len(lines) for lines in labels)
    # A monospace glyph is about 0.6 em wide; leave a margin around the text.
    fit = min(cell_h * 0.62 / n_lines, cell_w * 0.8 / max(longest * 0.62, 1))
    return float(np.clip(fit, MIN_FONT, MAX_FONT))


@lru_cache
def _advance(font_path: str, size: float) -> float:
    """The advance of one glyph of a monospace font, in points: a line is its length in
    advances wide (as SVG measures it), so no line needs measuring."""
    font = get_font(font_path)
    font.set_size(size, 72)
    return font.load_char(ord("0")).linearHoriAdvance / 65536


@lru_cache(maxsize=4096)
def _glyphs(font_path: str, size: float, dpi: float, line: str, color: str
            ) -> tuple[np.ndarray, float, float, float]:
    """`line` rendered as Agg renders text: (RGBA image, rows bottom up as draw_image takes
    them; its x offset, descent and width in pixels)."""
    font = get_font(font_path)
    font.set_size(size, dpi)
    font.set_text(line, 0, flags=get_hinting_flag())
    font.draw_glyphs_to_bitmap(antialiased=True)
    alpha = np.asarray(font.get_image())[::-1]
    image = np.empty((*alpha.shape, 4), np.uint8)
    image[..., :3] = np.round(255 * to_rgba_array(color)[0, :3])
    image[..., 3] = alpha
    return (image, font.get_bitmap_offset()[0] / 64, font.get_descent() / 64,
            font.get_width_height()[0] / 64)


class Labels(Artist):
    """Many short texts in one monospace font as one artist: a table's cell texts, or the
    labels along one of its edges. Each text (lines split at "\\n") is aligned on its point
    of `xy` (in `transform`) by `ha` and `va`.

    A Text artist per text costs a layout per text and per draw, and Agg lays out and renders
    each string glyph by glyph (about 0.4 ms a line): tables of thousands of cells took
    seconds. Here Agg gets each distinct line rendered once and copied into place; other
    renderers (SVG: text stays text) get one draw_text per line.
    """

    zorder = 3  # above the cells, as Text

    def __init__(self, texts: Sequence[str], colors: Sequence[str], xy: np.ndarray,
                 transform: Transform, size: float, ha: str = "center", va: str = "center"
                 ) -> None:
        super().__init__()
        self.texts, self.colors = [str(t) for t in texts], list(colors)
        self.xy = np.asarray(xy, float).reshape(-1, 2)
        self.font = FontProperties(family="monospace", size=size)
        self.font_path = findfont(self.font)
        self.advance = _advance(self.font_path, size)  # points
        self.ha, self.va = ALIGN[ha], ALIGN[va]
        self.set_transform(transform)
        self.set_clip_on(False)  # never clipped: edge labels lie outside the axes

    def items(self) -> list[tuple[str, str]]:
        """(text, colour) of each text, in order."""
        return list(zip(self.texts, self.colors, strict=True))

    def _lines(self, renderer: RendererBase) -> tuple[float, float, list[tuple]]:
        """(line height, descent, [(anchor x, baseline y, line, colour)]) in display pixels,
        y up; the anchor x is where the line's `ha` point goes. An empty line is placed
        nowhere (an image's cells hold no text: no empty SVG element for each)."""
        _, height, descent = renderer.get_text_width_height_descent("lp", self.font, False)
        step = height * LINE_SPACING
        placed = []
        anchors = self.get_transform().transform(self.xy)
        for (x, y), text, color in zip(anchors, self.texts, self.colors, strict=True):
            lines = text.split("\n")
            top = y + (step * (len(lines) - 1) + height) * (1 - self.va)
            placed += [(x, top - (height - descent) - i * step, line, color)
                       for i, line in enumerate(lines) if line]
        return height, descent, placed

    def get_window_extent(self, renderer: RendererBase | None = None) -> Bbox:
        renderer = renderer or self.figure._get_renderer()
        height, descent, placed = self._lines(renderer)
        advance = renderer.points_to_pixels(self.advance)
        boxes = [Bbox.from_bounds(x - len(line) * advance * self.ha, y - descent,
                                  len(line) * advance, height) for x, y, line, _ in placed]
        return Bbox.union(boxes) if boxes else Bbox.null()

    def draw(self, renderer: RendererBase) -> None:
        if not self.get_visible():
            return
        gc = renderer.new_gc()
        renderer.open_group("labels", self.get_gid())
        _, _, placed = self._lines(renderer)
        if isinstance(renderer, RendererAgg):  # placed by the rendered width, as Agg places
            size = self.font.get_size_in_points()
            for x, y, line, color in placed:
                image, offset, descent, width = _glyphs(self.font_path, size, renderer.dpi,
                                                        line, color)
                renderer.draw_image(gc, round(x - width * self.ha + offset),
                                    round(y - descent) - 1, image)
        else:
            advance = renderer.points_to_pixels(self.advance)
            height = renderer.get_canvas_width_height()[1]
            for x, y, line, color in placed:
                gc.set_foreground(color)
                renderer.draw_text(gc, x - len(line) * advance * self.ha,
                                   height - y if renderer.flipy() else y, line, self.font, 0)
        renderer.close_group("labels")
        gc.restore()


class Cells(Artist):
    """A table's cell colours (rows, cols, 4) as one artist: cell (r, c) fills data
    [c, c + 1] x [r, r + 1].

    Renderers that scale images themselves (SVG) get one image of a pixel per cell: one
    element, sharp at any zoom, where a mesh is one SVG path per cell. Agg, which would
    resample an image at full output size, fills a quad mesh instead.
    """

    def __init__(self, rgba: np.ndarray) -> None:
        super().__init__()
        self.rgba = rgba

    def draw(self, renderer: RendererBase) -> None:
        if not self.get_visible():
            return
        rows, cols = self.rgba.shape[:2]
        gc = renderer.new_gc()
        if renderer.option_scale_image():
            image = np.round(255 * self.rgba).astype(np.uint8)
            renderer.draw_image(gc, 0, 0, image, Affine2D().scale(cols, rows)
                                + self.get_transform())
        else:
            corners = np.stack(np.meshgrid(np.arange(cols + 1.0), np.arange(rows + 1.0)), -1)
            renderer.draw_quad_mesh(gc, self.get_transform().frozen(), cols, rows, corners,
                                    np.zeros((1, 2)), IdentityTransform(),
                                    self.rgba.reshape(-1, 4), False, np.zeros((0, 4)))
        gc.restore()


def _points(lines: Sequence[str], size: float) -> tuple[float, float]:
    """(widest, height) of single lines in the monospace font of `size`, in points."""
    font = FontProperties(family="monospace", size=size)
    return (max(map(len, lines), default=0) * _advance(findfont(font), size),
            text_to_path.get_text_width_height_descent("lp", font, False)[1])


def _edge_labels(ax: Axes, row_labels: Sequence[str], col_labels: Sequence[str],
                 size: float) -> None:
    """Row labels left of the table and column labels below it (as tick labels, without
    the ticks), with the axis labels moved clear of them."""
    rows, cols = len(row_labels), len(col_labels)
    left = offset_copy(ax.get_yaxis_transform(), fig=ax.figure, x=-TICK_PAD, units="points")
    below = offset_copy(ax.get_xaxis_transform(), fig=ax.figure, y=-TICK_PAD, units="points")
    ax.add_artist(Labels(row_labels, ["black"] * rows,
                         np.stack([np.zeros(rows), np.arange(rows) + 0.5], -1), left, size,
                         ha="right"))
    ax.add_artist(Labels(col_labels, ["black"] * cols,
                         np.stack([np.arange(cols) + 0.5, np.zeros(cols)], -1), below, size,
                         va="top"))
    ax.set_xticks([])
    ax.set_yticks([])
    ax.xaxis.labelpad = TICK_PAD + _points(col_labels, size)[1] + LABEL_PAD
    ax.yaxis.labelpad = TICK_PAD + _points(row_labels, size)[0] + LABEL_PAD


def cell_table(ax: Axes, colors: np.ndarray, text: np.ndarray, row_labels: Sequence[str],
               col_labels: Sequence[str], cmap: str | Colormap = "viridis",
               vmin: float | None = None, vmax: float | None = None,
               fontsize: float | None = None, grid: bool = True) -> ScalarMappable | None:
    """Draw a grid of coloured cells, each with its text centred; row 0 is at the top.

    `colors` is (rows, cols) of values, mapped through `cmap` (vmin/vmax as in imshow; NaN
    gives the cmap's 'bad' colour), (rows, cols) of colour strings ("#ff00ff", "white") or
    (rows, cols, 3|4) of RGB(A) numbers. `text` is (rows, cols) of str. Text is dark on light
    cells and white on dark ones; its size fits the cells unless `fontsize` is given.
    Without `grid`, no lines part the cells (in an image of many small ones they would hide
    them). Returns the value -> colour mapping, for a colorbar (None when colours were given).

    The cells, their texts and each edge's labels are one artist each (`Cells`, `Labels`),
    the grid one line collection: thousands of artists took seconds to draw and save.
    """
    text = np.asarray(text, dtype=object)
    rgba, mapping = _rgba(colors, cmap, vmin, vmax)
    rows, cols = rgba.shape[:2]
    if text.shape != (rows, cols) or len(row_labels) != rows or len(col_labels) != cols:
        raise ValueError(f"cell_table: colours {(rows, cols)}, text {text.shape}, "
                         f"{len(row_labels)} row and {len(col_labels)} column labels")
    ax.add_artist(Cells(rgba))
    if grid:
        lines = [[(0, r), (cols, r)] for r in range(rows + 1)] + \
            [[(c, 0), (c, rows)] for c in range(cols + 1)]
        ax.add_collection(LineCollection(lines, colors=CELL_EDGE, linewidths=0.6),
                          autolim=False)
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    size = fontsize or _font_size(ax, (rows, cols), text)
    luminance = rgba[..., :3] @ np.array([0.299, 0.587, 0.114])
    centres = np.stack(np.meshgrid(np.arange(cols) + 0.5, np.arange(rows) + 0.5), -1)
    texts = Labels(text.reshape(-1), np.where(luminance < 0.5, "white", "black").reshape(-1),
                   centres, ax.transData, size)
    texts.set_in_layout(False)  # inside their cells: nothing to measure for the tight box
    ax.add_artist(texts)
    _edge_labels(ax, row_labels, col_labels, max(MIN_FONT, min(size, 10)))
    for spine in ax.spines.values():
        spine.set_visible(False)
    return mapping


def panels(fig: Figure, rows: int, cols: int, room: float = 0.7, **grid: float
           ) -> tuple[Axes, np.ndarray]:
    """(an empty axes along the figure's top edge, for a header over every panel; the
    (rows, cols) panels below it, `room` inches kept for the header's clearance and their
    titles)."""
    axes = np.array(fig.subplots(rows, cols, squeeze=False, gridspec_kw=grid or None))
    fig.subplots_adjust(top=1 - room / fig.get_figheight())
    head = fig.add_axes((0.0, 1.0, 1.0, 0.0))
    head.axis("off")
    return head, axes


def dataset_header(ax, kernel: str, what: str, ds, subtitle: str,
                   other_simulated: bool = False) -> None:
    """Title lines above the axes: [SIMULATED — not evidence], kernel + device, subtitle.

    Unknown provenance (e.g. an unsaved sweep) counts as simulated; `other_simulated` marks a
    simulated dataset this one is compared with (probelab diff)."""
    from probelab.dataset import provenance, simulated
    from probelab.errors import UsageError

    try:
        prov = provenance(ds)
    except UsageError:
        prov = {"device": "unknown device", "target": "?"}
    device, target = str(prov.get("device", "?")), str(prov.get("target", "?"))
    where = device if target in device else f"{device} ({target})"
    lines = [(subtitle, 9, "normal", "black"), (f"{kernel}: {what} — {where}", 12, "bold", "black")]
    if simulated(prov):
        lines.append(("SIMULATED — not evidence", 12, "bold", "red"))
    elif other_simulated:
        lines.append(("compared with SIMULATED data — not evidence", 12, "bold", "red"))
    offset = 6
    for text, size, weight, color in lines:
        ax.annotate(text, (0, 1), xytext=(0, offset), xycoords="axes fraction",
                    textcoords="offset points", ha="left", va="bottom", fontsize=size,
                    fontweight=weight, color=color)
        offset += size * (1 + LINE_SPACING * text.count("\n")) + 7  # a subtitle may wrap
