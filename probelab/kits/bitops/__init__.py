"""The bit-op kit: probes of one 32-bit integer instruction (or CUDA intrinsic) per kernel,
over a grid of operand words x parameter values (selectors, shift amounts, positions and
lengths, truth tables), one 32-bit result per cell and kernel.

A probe folder declares its axes, its ops (kernel name, evidence, the PTX reading its
simulated device follows) and how its kernel source is rendered; `BitOpProbe` does the
rest. `source` writes the kernels from a table, so immediates (prmt's mode, lop3's truth
table) are compile-time constants of the rendered text (kept in no file:
probelab.probe.Rendered).
"""

from collections.abc import Callable

from probelab.kits import lazy_figures
from probelab.kits.bitops.probe import Axis, BitOpProbe, Op, word_pairs
from probelab.kits.bitops.source import asm_kernel, call_kernel, header, unrolled_kernel

__all__ = ["Axis", "BitOpProbe", "Op", "asm_kernel", "call_kernel", "header", "plot_kind",
           "unrolled_kernel", "word_pairs"]

# each plot kind's drawing: (module of probelab.kits.bitops, function), one kind per probe
FIGURES = {"selector-map": ("figures", "selector_map"),
           "truth-tables": ("figures", "truth_tables"),
           "shift-map": ("figures", "shift_map"),
           "field-map": ("figures", "field_map"),
           "scan-map": ("value_figures", "scan_map"),
           "mask-map": ("value_figures", "mask_map"),
           "search-map": ("value_figures", "search_map")}


def plot_kind(kind: str) -> dict[str, Callable[..., dict[str, object]]]:
    """A probe's `plots`: {kind: its drawing}, imported (with matplotlib) only when drawn."""
    module, function = FIGURES[kind]
    return {kind: lazy_figures(f"probelab.kits.bitops.{module}", function)}
