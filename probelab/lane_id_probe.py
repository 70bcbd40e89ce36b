"""A lane-id probe for one family of dense f64 matrix instructions, built from declarations.

A probe folder declares its shapes, its kernel source and what the evidence gate must see;
`LaneIdProbe` does the rest with `probelab.lane_id`: one launch per kernel covers every
wave, lane l of wave w reads its fragment from a[w][l][0..regs) (buffers strided for the
widest shape, values as doubles), and writes D likewise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from probelab import lane_id
from probelab.lane_id import Layout, Shape, Sizes
from probelab.probe import Evidence, Kernel, Launch

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr


@dataclass
class LaneIdProbe:
    id: str
    version: str
    summary: str
    targets: tuple[str, ...]
    vendor: str
    source: Path
    shapes: tuple[Shape, ...]
    evidence: Callable[[Shape], Evidence]
    seed: int
    trials: int = 4
    block: int = 256
    excluded: Mapping[str, str] = field(default_factory=dict)  # target pattern -> why not
    # The simulated unit's layout per kernel: hidden (random, seeded) unless a test swaps in
    # another. Never documentation, never evidence.
    sim_layouts: dict[str, Layout] = field(default_factory=dict)
    observables: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: dict(lane_id.OBSERVABLES))
    plots: Mapping[str, Callable[..., object]] = field(default_factory=dict)

    @property
    def size(self) -> Sizes:
        return Sizes.widest(self.shapes)

    def kernels(self, vendor: str) -> list[Kernel]:
        if vendor != self.vendor:
            return []
        return [Kernel(s.name, f"probe_{s.name}", self.source, vendor, self.evidence(s))
                for s in self.shapes]

    def stimulus(self) -> xr.Dataset:
        return lane_id.stimulus(self.shapes, self.trials, self.seed)

    def launch(self, stimulus: xr.Dataset) -> Launch:
        w = lane_id.waves(stimulus)
        lanes = self.size.lanes
        inputs = {"params": np.array([w["a"].shape[0]], np.uint32)}
        inputs |= {n: lane_id.to_lane_major(w[n], lanes).view(np.uint32) for n in "abc"}
        waves = w["a"].shape[0]
        return Launch(inputs=inputs, outputs={"d": waves * w["c"].shape[1] * 2},
                      threads=waves * lanes, block=self.block)

    def assemble(self, stimulus: xr.Dataset,
                 outputs: Mapping[str, Mapping[str, np.ndarray]]) -> xr.Dataset:
        size = self.size
        raw = {s.name: np.ascontiguousarray(outputs[s.name]["d"], np.uint32).view(np.float64)
               .reshape(-1, size.lanes, size.d_regs) for s in self.shapes}
        return lane_id.assemble(stimulus, self.shapes, raw)

    def hidden_layout(self, shape: Shape) -> Layout:
        if shape.name not in self.sim_layouts:
            rng = np.random.default_rng([self.seed, self.shapes.index(shape)])
            self.sim_layouts[shape.name] = lane_id.random_layout(shape, rng, self.size)
        return self.sim_layouts[shape.name]

    def simulate(self, kernel: Kernel, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        shape = next(s for s in self.shapes if s.name == kernel.name)
        size = self.size
        waves = int(inputs["params"][0])
        slots = {n: lane_id.from_lane_major(np.ascontiguousarray(inputs[n], np.uint32)
                                            .view(np.float64).reshape(waves, size.lanes, -1))
                 for n in "abc"}
        d = lane_id.multiply(self.hidden_layout(shape), slots["a"], slots["b"], slots["c"], shape)
        return {"d": lane_id.to_lane_major(d, size.lanes).view(np.uint32).reshape(-1)}
