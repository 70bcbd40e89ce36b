"""Probe-family kits: for each family of instructions, the engine that designs its stimulus
and decodes its outputs, the probe class a probe folder declares itself with, and its
figures; `elements` is the codec they share. The core never imports a kit (a test proves
it): a probe imports one, and the core only sees the probe.
"""

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Declared:
    """What every kit's probe class is declared with first (the rest is the family's)."""

    id: str
    version: str
    summary: str
    targets: tuple[str, ...]  # fnmatch patterns of ISA targets, e.g. "sm_90*"
    vendor: str  # the one vendor its kernels are for
    source: Path  # the kernel source every kernel of the probe is built from


def lazy_figures(module: str, function: str) -> Callable[..., dict[str, object]]:
    """A plot function that imports its figures (and matplotlib) only when one is drawn, so
    discovery and sweeps never pay for them."""
    def draw(ds: object, **options: object) -> dict[str, object]:
        return getattr(importlib.import_module(module), function)(ds, **options)

    return draw
