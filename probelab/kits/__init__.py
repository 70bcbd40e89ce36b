"""Probe-family kits: for each family of instructions, the engine that designs its stimulus
and decodes its outputs, the probe class a probe folder declares itself with, and its
figures; `elements` is the codec they share, `fragment` their one (thread, value) slot
numbering. The core never imports a kit (a test proves it): a probe imports one, and the
core only sees the probe.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from probelab.errors import UsageError
from probelab.probe import SEPARATION_FLOOR as SEPARATION_FLOOR  # the kits' probes declare it
from probelab.probe import Evidence, Kernel, Rendered, recorded_info

if TYPE_CHECKING:  # xarray is imported where a dataset is read: discovery needs none
    import xarray as xr


@dataclass
class Declared:
    """What every kit's probe class is declared with first (the rest is the family's)."""

    id: str
    version: str
    summary: str
    targets: tuple[str, ...]  # fnmatch patterns of ISA targets, e.g. "sm_90*"
    vendor: str  # the one vendor its kernels are for
    source: Path | Rendered  # the kernel source every kernel of the probe is built from

    def kernels_of(self, vendor: str, units: Iterable[Any], evidence: Callable[[Any], Evidence],
                   symbol: Callable[[Any], str] = lambda unit: f"probe_{unit.name}",
                   options: Mapping[str, object] | None = None) -> list[Kernel]:
        """One kernel per declared unit (a shape, a form, ...) named as it is, for the
        probe's own vendor only, built with `options` (e.g. {"arch": "sm_90a"})."""
        if vendor != self.vendor:
            return []
        path, text = ((self.source.path, self.source.render())
                      if isinstance(self.source, Rendered) else (self.source, None))
        return [Kernel(u.name, symbol(u), path, vendor, evidence(u),
                       options=dict(options or {}), text=text) for u in units]


def lazy_figures(module: str, function: str) -> Callable[..., dict[str, object]]:
    """A plot function that imports its figures (and matplotlib) only when one is drawn, so
    discovery and sweeps never pay for them."""
    def draw(ds: object, **options: object) -> dict[str, object]:
        return getattr(importlib.import_module(module), function)(ds, **options)

    return draw


def recorded_stimulus(ds: xr.Dataset, kit: str) -> Mapping[str, object]:
    """The stimulus facts a dataset records of its probe of `kit` (probe_info's `stimulus`,
    under the content hash): from its provenance alone, no probe imported. UsageError where
    it records none (a dataset older than the record, or another kit's): nothing is rebuilt
    from conventions."""
    from probelab import dataset

    facts = recorded_info(dataset.provenance(ds))
    if facts is None or facts.stimulus.get("kit") != kit:
        raise UsageError(f"the dataset records no {kit} stimulus facts (probe_info.stimulus)")
    return facts.stimulus
