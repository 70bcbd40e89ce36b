"""The bit-op kit: probes of one 32-bit integer instruction (or CUDA intrinsic) per kernel,
over a grid of operand words x parameter values (selectors, shift amounts, positions and
lengths, truth tables), one 32-bit result per cell and kernel.

A probe folder declares its axes, its ops (kernel name, evidence, the PTX reading its
simulated device follows) and its generated kernel source; `BitOpProbe` does the rest.
`source` writes the kernels from a table, so immediates (prmt's mode, lop3's truth table)
are compile-time constants of committed, generated text.
"""

from probelab.kits.bitops.probe import Axis, BitOpProbe, Op, random_pairs
from probelab.kits.bitops.source import asm_kernel, call_kernel, header, unrolled_kernel

__all__ = ["Axis", "BitOpProbe", "Op", "asm_kernel", "call_kernel", "header", "random_pairs",
           "unrolled_kernel"]
