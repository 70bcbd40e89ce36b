"""A bit-op probe, built from declarations: axes (the grid), ops (one kernel each) and the
generated kernel source.

The grid is the product of the axes, in order; each axis carries one or more coordinates
along its dimension (operand words and their pattern names, selectors, shift amounts, ...).
`inputs` names the coordinates every kernel reads, one word per cell each, in its argument
order. An `unrolled` axis (the last) holds compile-time values: a kernel runs one
instruction per value on the same loaded words and stores them side by side, so the launch
covers the other axes only. Per-kernel facts (a mode number, clamp or wrap) become
coordinates along `kernel`, so one sealed expression can name every kernel of a family.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from probelab.kits import Declared
from probelab.kits.bitops.recipe import buffers, record
from probelab.probe import Evidence, Kernel, Launch

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr

__all__ = ["Axis", "BitOpProbe", "Op", "word_pairs"]

Model = Callable[..., np.ndarray]


def word_pairs(words: Mapping[str, int], seed: int, n_random: int
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, names): each named 64-bit word split into its low (a) and high (b) 32 bits,
    then `n_random` seeded random pairs named random0, random1, ...: what the structured
    words of a grid miss."""
    rand = np.random.default_rng([seed, 1]).integers(0, 1 << 32, (n_random, 2), np.uint64)
    a = [w & 0xFFFFFFFF for w in words.values()] + [int(x) for x, _ in rand]
    b = [w >> 32 for w in words.values()] + [int(y) for _, y in rand]
    return (np.array(a, np.uint32), np.array(b, np.uint32),
            np.array([*words, *(f"random{k}" for k in range(n_random))]))


@dataclass(frozen=True)
class Axis:
    dim: str
    coords: Mapping[str, np.ndarray]  # name -> values along `dim` (the first is the index)
    attrs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    @classmethod
    def numbered(cls, dim: str, coords: Mapping[str, object],
                 attrs: Mapping[str, Mapping[str, str]] | None = None) -> Axis:
        """An axis of operand words numbered 0, 1, ... by its own index, `coords` (the
        words and their pattern names) beside it."""
        n = len(next(iter(coords.values())))
        return cls(dim, {dim: np.arange(n, dtype=np.uint32), **coords}, attrs or {})

    @classmethod
    def operands(cls, dim: str, pattern: Sequence[str], **words: tuple[object, str]) -> Axis:
        """Operand words numbered along `dim` (`numbered`), each name -> (its values, what it
        is; shown in hex), and the `pattern` name of each beside them."""
        return cls.numbered(dim, {**{n: v for n, (v, _) in words.items()}, "pattern": pattern},
                            {n: {"description": about, "display": "hex"}
                             for n, (_, about) in words.items()})


@dataclass(frozen=True)
class Op:
    name: str  # the kernel's name in datasets; its entry point is probe_<name>
    evidence: Evidence
    # The PTX (or CUDA) reading as numpy, over uint64 arrays named as the grid's
    # coordinates: what the simulated device computes. Never evidence.
    model: Model
    facts: Mapping[str, int] = field(default_factory=dict)  # coordinates along `kernel`
    inputs: tuple[str, ...] | None = None  # the coordinates it reads; None: the probe's


@dataclass
class BitOpProbe(Declared):
    axes: tuple[Axis, ...]
    ops: tuple[Op, ...]
    inputs: tuple[str, ...]  # grid coordinates fed to every kernel, one word per cell each
    unrolled: str | None = None  # the last axis's dim when its values are immediates
    # kernel name -> the model the simulated device follows instead of the op's (tests swap
    # in a near miss to show that the sealed reading refutes it). Never evidence.
    sim_models: dict[str, Model] = field(default_factory=dict)
    plots: Mapping[str, Callable[..., object]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        dims = tuple(a.dim for a in self.axes)
        if self.unrolled is not None and dims[-1] != self.unrolled:
            raise ValueError(f"{self.id}: the unrolled axis must be the last, not {dims}")
        facts = {tuple(sorted(op.facts)) for op in self.ops}
        if len(facts) > 1:
            raise ValueError(f"{self.id}: every op must declare the same facts, not {facts}")
        self.observables = {"value": ("kernel", *dims)}

    @property
    def launched(self) -> tuple[Axis, ...]:
        return self.axes[:-1] if self.unrolled else self.axes

    @property
    def values(self) -> np.ndarray | None:
        """The unrolled axis's compile-time values, in kernel order."""
        if self.unrolled is None:
            return None
        axis = self.axes[-1]
        return np.asarray(next(iter(axis.coords.values())), np.uint64)

    def kernels(self, vendor: str) -> list[Kernel]:
        return self.kernels_of(vendor, self.ops, lambda op: op.evidence)

    def stimulus(self) -> xr.Dataset:
        import xarray as xr

        coords: dict[str, tuple] = {
            "kernel": ("kernel", np.array([op.name for op in self.ops]))}
        for fact in sorted(self.ops[0].facts):
            coords[fact] = ("kernel", np.array([op.facts[fact] for op in self.ops], np.uint32))
        for axis in self.axes:
            for name, values in axis.coords.items():
                coords[name] = (axis.dim, np.asarray(values), dict(axis.attrs.get(name, {})))
        return xr.Dataset(coords=coords)

    @property
    def stimulus_facts(self) -> dict[str, object]:
        """What its datasets record of the stimulus beyond the grid (recipe.record)."""
        return record(self.inputs, [a.dim for a in self.launched], self.unrolled)

    def launch(self, stimulus: xr.Dataset) -> Launch:
        inputs = buffers(stimulus, self.inputs, [a.dim for a in self.launched])
        cells = int(inputs["params"][0])
        width = 1 if self.values is None else len(self.values)
        return Launch(inputs=inputs, outputs={"out": cells * width}, threads=cells)

    def assemble(self, stimulus: xr.Dataset,
                 outputs: Mapping[str, Mapping[str, np.ndarray]]) -> xr.Dataset:
        dims = tuple(a.dim for a in self.axes)
        shape = tuple(stimulus.sizes[d] for d in dims)
        ran = [str(k) for k in stimulus["kernel"].values if str(k) in outputs]
        ds = stimulus.sel(kernel=ran)
        values = np.stack([np.asarray(outputs[k]["out"], np.uint32).reshape(shape)
                           for k in ran])
        ds["value"] = (("kernel", *dims), values, {
            "description": "raw 32-bit result of each kernel at each cell; cells in C order "
                           "of the launched axes, one per thread (lane = thread % 32)"})
        return ds

    def simulate(self, kernel: Kernel, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        op = next(o for o in self.ops if o.name == kernel.name)
        model = self.sim_models.get(op.name, op.model)
        args = {name: np.asarray(inputs[name], np.uint64) for name in self.inputs}
        args |= {k: np.uint64(v) for k, v in op.facts.items()}
        if self.values is not None:
            args = {k: (v[:, None] if np.ndim(v) else v) for k, v in args.items()}
            args[next(iter(self.axes[-1].coords))] = self.values[None, :]
        out = np.asarray(model(**args), np.uint64) & np.uint64(0xFFFFFFFF)
        cells = int(inputs["params"][0])
        width = 1 if self.values is None else len(self.values)
        return {"out": np.broadcast_to(out, (cells, width) if width > 1 else (cells,))
                .reshape(-1).astype(np.uint32)}
