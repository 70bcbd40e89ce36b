"""A matrix-move probe (ldmatrix, stmatrix or movmatrix forms), built from declarations.

A probe folder declares its forms, its kernel source and what the evidence gate must see;
`MatrixMoveProbe` does the rest with the kit's engine. One launch per kernel covers every
wave (one warp each); a kernel takes `params` (the number of waves), `address` (per wave and
lane, the tile row its address points at; not for movmatrix), then `tile` (per wave, ROWS
rows of 4 words: load) or `held` (per wave and lane, 4 registers, 1 for movmatrix), and
writes `out`: per wave and lane its destination registers (load, move) or the whole tile
(store, which first zeroes it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from probelab.kits import Declared, lazy_figures
from probelab.kits.matrix_move import engine, recipe
from probelab.kits.matrix_move.engine import LANES, Form, Law
from probelab.probe import Evidence, Kernel, Launch

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr

__all__ = ["Form", "MatrixMoveProbe"]


@dataclass
class MatrixMoveProbe(Declared):
    forms: tuple[Form, ...]
    evidence: Callable[[Form], Evidence]
    seed: int
    block: int = 128  # 4 warps: the kernel source sizes its shared tiles for this
    excluded: Mapping[str, str] = field(default_factory=dict)  # target pattern -> why not
    # The simulated unit's law per kernel: hidden (random, seeded) unless a test swaps in
    # another. Never documentation, never evidence.
    sim_laws: dict[str, Law] = field(default_factory=dict)
    plots: Mapping[str, Callable[..., object]] = field(
        default_factory=lambda: {"movemap": lazy_figures("probelab.kits.matrix_move.figures",
                                                         "move_map_figures")})

    def __post_init__(self) -> None:
        self.op = engine.op_of(self.forms)  # one op: the kernels share buffers
        self.observables = dict(engine.OBSERVABLES[self.op])

    def kernels(self, vendor: str) -> list[Kernel]:
        return self.kernels_of(vendor, self.forms, self.evidence)

    def stimulus(self) -> xr.Dataset:
        return engine.stimulus(self.forms, self.seed)

    @property
    def stimulus_facts(self) -> dict[str, object]:
        """What its datasets record of the stimulus beyond the grid (recipe.record)."""
        return recipe.record(self.seed)

    def launch(self, stimulus: xr.Dataset) -> Launch:
        waves = stimulus.sizes["wave"]
        return Launch(inputs=engine.buffers(stimulus),
                      outputs={"out": engine.output_words(stimulus)},
                      threads=waves * LANES, block=self.block)

    def assemble(self, stimulus: xr.Dataset,
                 outputs: Mapping[str, Mapping[str, np.ndarray]]) -> xr.Dataset:
        return engine.assemble(stimulus, self.forms,
                               {f.name: outputs[f.name]["out"] for f in self.forms})

    def hidden_law(self, form: Form) -> Law:
        if form.name not in self.sim_laws:
            rng = np.random.default_rng([self.seed, self.forms.index(form)])
            self.sim_laws[form.name] = engine.random_law(form, rng)
        return self.sim_laws[form.name]

    def simulate(self, kernel: Kernel, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        form = next(f for f in self.forms if f.name == kernel.name)
        return {"out": engine.simulate(form, self.hidden_law(form), inputs)}
