"""A lane-id probe for one family of dense matrix instructions, built from declarations.

A probe folder declares its shapes (with their element codec), its kernel source and what
the evidence gate must see; `LaneIdProbe` does the rest with the kit's engine: one launch
per kernel covers every wave; lane l of wave w reads its fragment registers from
a[w][l][0..), b and c likewise (buffers strided for the widest shape, elements packed as
`probelab.kits.elements.pack` lays them out), and writes its D registers to d[w][l][0..).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from probelab.kits import SEPARATION_FLOOR, Declared, lazy_figures
from probelab.kits.elements import Codec, words
from probelab.kits.lane_id import engine, recipe
from probelab.kits.lane_id.engine import Layout, Shape, Sizes
from probelab.probe import Evidence, Kernel, Launch

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr

__all__ = ["LaneIdProbe", "Shape", "warp_shapes"]


def warp_shapes(prefix: str, rows: tuple[tuple[str, int, int, int, int, int, int], ...],
                codec: Codec) -> tuple[Shape, ...]:
    """One warp-wide (32-lane) family's shapes, named `<prefix>_<shape>`, from rows
    (shape, M, N, K, A values, B values, D values per lane)."""
    return tuple(Shape(f"{prefix}_{name}", m, n, k, 32, a_values=a, b_values=b, d_values=d,
                       codec=codec) for name, m, n, k, a, b, d in rows)


@dataclass
class LaneIdProbe(Declared):
    separation_floor: ClassVar[int] = SEPARATION_FLOOR
    shapes: tuple[Shape, ...]
    evidence: Callable[[Shape], Evidence]
    seed: int
    trials: int = 4
    block: int = 256
    excluded: Mapping[str, str] = field(default_factory=dict)  # target pattern -> why not
    options: Mapping[str, object] = field(default_factory=dict)  # compiler options per kernel
    # The simulated unit's layout per kernel: hidden (random, seeded) unless a test swaps in
    # another. Never documentation, never evidence.
    sim_layouts: dict[str, Layout] = field(default_factory=dict)
    # the waves (engine.BOTH: every slot named twice; engine.APART: wide shapes, C apart)
    design: str = engine.BOTH
    observables: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # the design's
    # store the kit's compact form (probelab.kits.lane_id.storage): the same numbers in a
    # fraction of the bytes; a probe that switches bumps its version (its datasets change form)
    compact: bool = False
    plots: Mapping[str, Callable[..., object]] = field(
        default_factory=lambda: {"lanemap": lazy_figures("probelab.kits.lane_id.figures",
                                                         "lane_map_figures")})

    def __post_init__(self) -> None:
        self.codec = engine.codec_of(self.shapes)  # one codec: the kernels share buffers
        if not self.observables:
            self.observables = dict(engine.OBSERVABLES_APART if self.design == engine.APART
                                    else engine.OBSERVABLES)

    @property
    def size(self) -> Sizes:
        return Sizes.widest(self.shapes)

    def kernels(self, vendor: str) -> list[Kernel]:
        return self.kernels_of(vendor, self.shapes, self.evidence, options=self.options)

    def stimulus(self) -> xr.Dataset:
        return engine.stimulus(self.shapes, self.trials, self.seed, self.design)

    @property
    def stimulus_facts(self) -> dict[str, object]:
        """What its datasets record of the stimulus beyond the grid (recipe.record)."""
        return recipe.record(self.shapes, self.seed, self.trials, self.design)

    def launch(self, stimulus: xr.Dataset) -> Launch:
        w = engine.waves(stimulus, self.codec)
        lanes, waves = self.size.lanes, w["a"].shape[0]
        inputs = {"params": np.array([waves], np.uint32)}
        inputs |= {n: engine.registers(self.codec, n, w[n], lanes) for n in "abc"}
        return Launch(inputs=inputs, outputs={"d": waves * lanes * self._d_words},
                      threads=waves * lanes, block=self.block)

    def assemble(self, stimulus: xr.Dataset,
                 outputs: Mapping[str, Mapping[str, np.ndarray]]) -> xr.Dataset:
        lanes = self.size.lanes
        raw = {s.name: np.asarray(outputs[s.name]["d"], np.uint32).reshape(-1, lanes,
                                                                              self._d_words)
               for s in self.shapes}
        return engine.assemble(stimulus, self.shapes, raw, self.compact)

    def declared_bytes(self, stimulus: xr.Dataset) -> int:
        """What its datasets declare decoded, known before a unit runs (the sweep refuses a
        probe whose dataset could not be saved before any kernel runs)."""
        return engine.declared_bytes(stimulus, self.compact)

    @property
    def _d_words(self) -> int:
        return words(self.codec.accumulator, self.size.d_values)

    def hidden_layout(self, shape: Shape) -> Layout:
        if shape.name not in self.sim_layouts:
            rng = np.random.default_rng([self.seed, self.shapes.index(shape)])
            self.sim_layouts[shape.name] = engine.random_layout(shape, rng, self.size)
        return self.sim_layouts[shape.name]

    def simulate(self, kernel: Kernel, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        shape = next(s for s in self.shapes if s.name == kernel.name)
        size, waves = self.size, int(inputs["params"][0])
        counts = {"a": size.a_values, "b": size.b_values, "c": size.d_values}
        slots = {n: engine.numbers(self.codec, n, np.asarray(inputs[n], np.uint32).reshape(
            waves, size.lanes, -1), counts[n]) for n in "abc"}
        d = engine.multiply(self.hidden_layout(shape), slots["a"], slots["b"], slots["c"], shape)
        return {"d": engine.registers(self.codec, "d", d, size.lanes).reshape(-1)}
