"""The bit-op kit: probes of one 32-bit integer instruction (or CUDA intrinsic) per kernel,
over a grid of operand words x parameter values (selectors, shift amounts, positions and
lengths, truth tables), one 32-bit result per cell and kernel.

A probe folder declares its axes, its ops (kernel name, evidence, the PTX reading its
simulated device follows) and how its kernel source is rendered; `BitOpProbe` does the
rest. `source` writes the kernels from a table, so immediates (prmt's mode, lop3's truth
table) are compile-time constants of the rendered text (kept in no file:
probelab.probe.Rendered).
"""

from probelab.kits.bitops.probe import Axis, BitOpProbe, Op, word_pairs
from probelab.kits.bitops.source import asm_kernel, call_kernel, header, unrolled_kernel

__all__ = ["Axis", "BitOpProbe", "Op", "asm_kernel", "call_kernel", "header",
           "unrolled_kernel", "word_pairs"]
