"""A sparse-metadata probe for one family of structured-sparse instructions, built from
declarations: its kernels (`sparse.Unit`s), its vendor's metadata rules and its element type.
`SparseProbe` does the rest with `probelab.kits.sparse`: one launch per kernel covers every wave;
lane l of wave w reads a[w][l][..], b[w][l][..], c[w][l][..] and e[w][l], and writes
d[w][l][..], every buffer strided for the widest kernel (`Design.a_regs`, `b_regs`,
`d_regs`); kernels take params, a, b, c, e, then d.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from probelab.kits import SEPARATION_FLOOR, Declared, lazy_figures
from probelab.kits.sparse import engine as sparse
from probelab.kits.sparse import recipe
from probelab.kits.sparse.engine import Design, Unit
from probelab.probe import Evidence, Kernel, Launch

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr


@dataclass
class SparseProbe(Declared):
    separation_floor: ClassVar[int] = SEPARATION_FLOOR
    design: Design
    evidence: Callable[[Unit], Evidence]
    symbol: Callable[[Unit], str] = lambda unit: f"probe_{unit.name}"
    block: int = 256
    options: Mapping[str, object] = field(default_factory=dict)  # compiler options per kernel
    excluded: Mapping[str, str] = field(default_factory=dict)  # target pattern -> why not
    # The simulated unit's law per kernel: hidden (random, seeded) unless a test swaps in
    # another. Never documentation, never evidence.
    sim_laws: dict[str, sparse.Law] = field(default_factory=dict)
    observables: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # the design's
    plots: Mapping[str, Callable[..., object]] = field(
        default_factory=lambda: {"pairing-map": lazy_figures("probelab.kits.sparse.figures",
                                                             "figures")})
    # observables an earlier version of the probe had: {name: why they are gone}. Sealed
    # hypotheses that predict them are kept, marked as for that version, never scored.
    retired: Mapping[str, str] = field(default_factory=dict)
    # the variable in which the decode lists what it could not read (the sweep says so)
    problems_variable: str = "decode_problems"

    def __post_init__(self) -> None:
        if not self.observables:
            self.observables = dict(sparse.observables(self.design))

    def kernels(self, vendor: str) -> list[Kernel]:
        return self.kernels_of(vendor, self.design.units, self.evidence, self.symbol,
                               self.options)

    def stimulus(self) -> xr.Dataset:
        return sparse.stimulus(self.design)

    @property
    def stimulus_facts(self) -> dict[str, object]:
        """What its datasets record of the stimulus beyond the grid (recipe.record)."""
        return recipe.record(self.design)

    def launch(self, stimulus: xr.Dataset) -> Launch:
        w = sparse.waves(stimulus, self.design.codec)
        waves, d_regs, lanes = w["e"].shape[0], self.design.d_regs, self.design.lanes
        return Launch(inputs={"params": np.array([waves], np.uint32), "a": w["a"],
                              "b": w["b"], "c": np.zeros((waves, lanes, d_regs), np.uint32),
                              "e": w["e"]},
                      outputs={"d": waves * lanes * d_regs}, threads=waves * lanes,
                      block=self.block)

    def assemble(self, stimulus: xr.Dataset,
                 outputs: Mapping[str, Mapping[str, np.ndarray]]) -> xr.Dataset:
        raw = {u.name: np.asarray(outputs[u.name]["d"], np.uint32).reshape(
            -1, self.design.lanes, self.design.d_regs) for u in self.design.units}
        return sparse.assemble(stimulus, self.design, raw)[0]

    def hidden_law(self, unit: Unit) -> sparse.Law:
        if unit.name not in self.sim_laws:
            rng = np.random.default_rng([self.design.seed, self.design.units.index(unit)])
            self.sim_laws[unit.name] = sparse.random_law(unit, self.design, rng)
        return self.sim_laws[unit.name]

    def simulate(self, kernel: Kernel, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        unit = next(u for u in self.design.units if u.name == kernel.name)
        waves = int(inputs["params"][0])
        lanes = self.design.lanes
        regs = {n: np.asarray(inputs[n], np.uint32).reshape(waves, lanes, -1) for n in "abc"}
        d = sparse.multiply(self.hidden_law(unit), unit, self.design.codec, regs["a"],
                            regs["b"], regs["c"],
                            np.asarray(inputs["e"], np.uint32).reshape(waves, lanes))
        return {"d": d.reshape(-1)}
