"""Hypothesis files: declarative TOML, validated strictly, evaluated without running code.

    schema = 1
    id = "cuda-contract"                 # unique within the probe
    probe = "byte-perm"
    claim = "..."                        # what is claimed, in words
    coordinates = "raw"                  # the coordinate system the prediction is stated in
    kernels = ["byte_perm"]              # optional: the kernels the claim is about (default all)
    targets = ["gfx12*"]                 # optional: the ISA targets it is about (default all)
    where = "family == 0"                # optional: the cells it is about (default all)
    parent = "old-id"                    # optional: this file amends a sealed one
    [layout.a_idx]                       # optional: layouts in CuTe's, Triton's or a table's
    cute = "((4,8),(2,2)):((32,1),(16,8))"  # own notation (probelab.layouts), each made a
    of = ["a_lane", "a_reg"]             # helper (or `out = [...]`, several) before [let]
    [let]                                # optional helper definitions, in order
    src = "(y << 32) | x"
    [predict]                            # observable = expression over stimulus coordinates
    value = "..."
    [translations.name]                  # optional: coordinate = expression over raw coordinates
    x = "y"                              # (a key naming an observable renames its predicted
                                         # value instead: value = "value ^ 1")
    [near_misses.name]                   # optional: a plausible wrong variant, for power checks
    value = "..."                        # (the observables it changes; the rest are the claim's)
    agrees_with = ["other-id"]           # optional: sealed hypotheses this one restates on the
                                         # cells both claim (a pair no stimulus should separate)
    [power]                              # optional: the fewest cells a pair with this file must
    floor = 8                            # part on, lower than its probe's (prereg power), and
    reason = "..."                       # why (recorded: K = 4 leaves 6 pairs of k, ...)
    fitted_from = ["data/p/t/T.nc"]      # optional: the archived datasets the law was read
                                         # from: CONFIRMED only on a stimulus new to them all
                                         # (probelab.notary.freshness)

Predictions are taken modulo 2**32: observables are 32-bit registers.
"""

import ast
import contextlib
import fnmatch
import functools
import hashlib
import json
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from probelab import bounded, layouts
from probelab.blocks import blocks
from probelab.errors import UsageError
from probelab.expr import ExprError, Program, compile_program
from probelab.numerics import spec as numerics_spec
from probelab.text import UNPRINTABLE
from probelab.tomlguard import structure_problem

if TYPE_CHECKING:  # the probe protocol imports nothing of this module's at run time
    from probelab.dataset import GridPrint
    from probelab.probe import Probe

MAX_FILE_BYTES = 1 << 20
MEMO_FILES, MEMO_BYTES = 1024, 1 << 16  # parsed files kept per process: at most 64 MiB
MAX_VARIANTS = 8  # translations, and near misses, per file
# What evaluating one file may cost over a grid, bounded before any of it runs: node-cells
# (syntax nodes x cells, summed over observables and scorings: time) and values alive per
# cell (definitions and temporaries: memory). A table is computed a block at a time, each
# block sized so that at most PIECE_VALUES values are alive (the language is elementwise),
# so memory stays bounded whatever the grid.
MAX_WORK = 1 << 33  # a few s on one core (syntax nodes x the cells each definition spans)
PIECE_VALUES = 1 << 24  # 128 MiB of int64 per block at most; smaller blocks cost more calls
MAX_ALIVE = 64  # values alive per cell; the largest sealed file keeps 24
LITERAL = "literal"
_REQUIRED = {"schema": int, "id": str, "probe": str, "claim": str, "coordinates": str,
             "predict": dict}
_OPTIONAL = {"kernels": list, "targets": list, "where": str, "parent": str, "let": dict,
             "translations": dict, "near_misses": dict, "agrees_with": list, "model": dict,
             "layout": dict, "power": dict, "fitted_from": list}
MODEL = "model"  # the name expressions read a [model]'s prediction by


@dataclass(frozen=True)
class Hypothesis:
    path: Path
    raw: bytes
    id: str
    probe: str
    claim: str
    coordinates: str
    predict: Mapping[str, str]
    lets: tuple[tuple[str, str], ...] = ()
    translations: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    kernels: tuple[str, ...] | None = None
    targets: tuple[str, ...] | None = None
    where: str | None = None
    parent: str | None = None
    near_misses: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    agrees_with: tuple[str, ...] = ()
    # a numeric model the lab evaluates (probelab.numerics.spec): {"family": ..., params}
    model: Mapping[str, object] | None = None
    # [power] floor: the fewest cells a pair with this file must part on (None: the probe's)
    floor: int | None = None
    # the archived datasets (data/PROBE/TARGET/NAME.nc) the law was read from
    fitted_from: tuple[str, ...] = ()
    # the constant tables [layout]'s explicit tables are read from (as NAME[i, ..., output]);
    # their [layout]s are in `lets`, first; the tables are pinned by sha256 in `raw`
    tables: Mapping[str, np.ndarray] = field(default_factory=dict, compare=False)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.raw).hexdigest()

    def about_target(self, target: str) -> bool:
        return self.targets is None or any(fnmatch.fnmatchcase(target, t) for t in self.targets)

    def scorings(self) -> list[str]:
        return [LITERAL, *sorted(self.translations)]

    def near_miss(self, name: str) -> "Hypothesis":
        """The declared near miss `name` as a hypothesis of its own: its predictions, the
        claim's helpers, kernels, targets and scope; no translations."""
        return replace(self, id=f"{self.id}~{name}", predict=self.near_misses[name],
                       translations={}, near_misses={})


def is_plain_id(text: str) -> bool:
    return re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}", text) is not None


def _strings(table: object, what: str) -> dict[str, str]:
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise UsageError(f"[{what}] must be a table of strings (expressions)")
    return dict(table)


def _control_character(doc: object) -> str | None:
    """The first control character in any string (or key) of a parsed document, as U+XXXX;
    iterative, so a deeply nested document cannot exhaust the stack."""
    stack = [doc]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if bad := UNPRINTABLE.search(value):
                return f"U+{ord(bad.group()):04X}"
        elif isinstance(value, dict):
            stack += [*value.keys(), *value.values()]
        elif isinstance(value, list):
            stack += value
    return None


def parse_hypothesis(path: Path, raw: bytes) -> Hypothesis:
    """A hypothesis file's bytes, parsed and validated (UsageError where they are not one);
    the same small file's bytes at the same path are parsed once per process (a Hypothesis is
    frozen; what is kept is bounded: MEMO_FILES files of at most MEMO_BYTES)."""
    return (_parsed if len(raw) <= MEMO_BYTES else _parse)(path, raw)


def _parse(path: Path, raw: bytes) -> Hypothesis:
    if len(raw) > MAX_FILE_BYTES:
        raise UsageError(f"{path}: {len(raw)} bytes; hypothesis files are at most {MAX_FILE_BYTES}")
    try:
        text = raw.decode("utf-8")
        if why := structure_problem(text):  # bounded before the parser sees it
            raise UsageError(f"{path}: refused before parsing: {why}")
        doc = tomllib.loads(text)
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from exc
    except (RecursionError, MemoryError) as exc:
        raise UsageError(f"{path}: too deeply structured to parse ({type(exc).__name__})") from exc
    if bad := _control_character(doc):  # a claim must not drive the terminal that shows it
        raise UsageError(f"{path}: contains the control character {bad}; write text only")
    unknown = set(doc) - set(_REQUIRED) - set(_OPTIONAL)
    if unknown:
        raise UsageError(f"{path}: unknown keys {sorted(unknown)}")
    for key, kind in _REQUIRED.items():
        if not isinstance(doc.get(key), kind) or isinstance(doc.get(key), bool):
            raise UsageError(f"{path}: '{key}' is required and must be a {kind.__name__}")
    for key, kind in _OPTIONAL.items():
        if key in doc and not isinstance(doc[key], kind):
            raise UsageError(f"{path}: '{key}' must be a {kind.__name__}")
    if doc["schema"] != 1:
        raise UsageError(f"{path}: schema {doc['schema']} is not supported (1 is)")
    for key in ("id", "probe", "parent"):
        if key in doc and not is_plain_id(doc[key]):
            raise UsageError(f"{path}: {key} {doc[key]!r} must be a plain name (letters, "
                             "digits, '-' and '_'; it names files)")
    translations = doc.get("translations", {})
    if not all(isinstance(t, dict) for t in translations.values()):
        raise UsageError(f"{path}: each [translations.NAME] must be a table")
    if LITERAL in translations:
        raise UsageError(f"{path}: a translation may not be called {LITERAL!r}")
    if not all(is_plain_id(name) for name in translations):
        raise UsageError(f"{path}: translation names are plain names (letters, digits, '-', "
                         "'_')")
    for key in ("translations", "near_misses"):
        if len(doc.get(key, {})) > MAX_VARIANTS:
            raise UsageError(f"{path}: at most {MAX_VARIANTS} {key}")
    for key in ("kernels", "targets"):
        if key in doc and not all(isinstance(k, str) for k in doc[key]):
            raise UsageError(f"{path}: '{key}' must be a list of strings")
    agrees = doc.get("agrees_with", [])
    if not all(isinstance(a, str) and is_plain_id(a) and a != doc["id"] for a in agrees):
        raise UsageError(f"{path}: 'agrees_with' must list other hypotheses' ids")
    near = doc.get("near_misses", {})
    for name, table in near.items():
        if not is_plain_id(name) or not isinstance(table, dict) or not table:
            raise UsageError(f"{path}: each [near_misses.NAME] must be a plain name with a "
                             "non-empty table of predictions")
    kernels, targets = doc.get("kernels"), doc.get("targets")
    floor = _floor(path, doc.get("power"))
    fitted = _fitted_from(path, doc)
    if "model" in doc:
        try:
            numerics_spec.model_of(doc["model"])
        except ValueError as exc:
            raise UsageError(f"{path}: {exc}") from exc
        if doc["coordinates"] != "raw" or translations:
            raise UsageError(f"{path}: a [model] predicts in the grid's own coordinates: "
                             "coordinates = \"raw\" and no translations")
    predict = _strings(doc["predict"], "predict")
    if not predict:
        raise UsageError(f"{path}: [predict] names no observable")
    lets = tuple(_strings(doc.get("let", {}), "let").items())
    tables: dict[str, np.ndarray] = {}
    if "layout" in doc:  # helpers every [let] and [predict] may use
        try:
            layout_lets, tables = layouts.expand(doc["layout"], path.parent,
                                                 {name for name, _ in lets})
        except UsageError as exc:
            raise UsageError(f"{path}: {exc}") from None
        lets = (*layout_lets, *lets)
    return Hypothesis(
        path=path, raw=raw, id=doc["id"], probe=doc["probe"], claim=doc["claim"],
        coordinates=doc["coordinates"], predict=predict,
        lets=lets,
        translations={k: _strings(v, f"translations.{k}") for k, v in translations.items()},
        kernels=tuple(kernels) if kernels is not None else None,
        targets=tuple(targets) if targets is not None else None, where=doc.get("where"),
        parent=doc.get("parent"),
        near_misses={k: _strings(v, f"near_misses.{k}") for k, v in near.items()},
        agrees_with=tuple(agrees), model=doc.get("model"), tables=tables, floor=floor,
        fitted_from=fitted,
    )


def _floor(path: Path, power: dict | None) -> int | None:
    """[power]'s floor: a whole number of cells, at least 1, with the reason it is lower
    than the probe's (a floor without a reason would be a silent way out of the check)."""
    if power is None:
        return None
    floor, reason = power.get("floor"), power.get("reason")
    if set(power) != {"floor", "reason"} or not isinstance(floor, int) or \
            isinstance(floor, bool) or not 1 <= floor <= 1 << 20 or \
            not isinstance(reason, str) or not reason.strip():
        raise UsageError(f"{path}: [power] takes floor (cells, a whole number from 1) and "
                         "reason (why the probe's floor does not hold for this file), both")
    return floor


def _fitted_from(path: Path, doc: dict) -> tuple[str, ...]:
    """`fitted_from`: the datasets of the file's own probe the law was read from, each once,
    as the manifest names them (data/PROBE/TARGET/NAME.nc; `prereg seal` holds each to a
    pin)."""
    named = doc.get("fitted_from")
    if named is None:
        return ()
    form = rf"data/{re.escape(doc['probe'])}/[A-Za-z0-9][A-Za-z0-9_.:+-]*/" \
        r"[A-Za-z0-9][A-Za-z0-9_.+-]*\.nc"
    if not named or len(set(map(str, named))) != len(named) or not all(
            isinstance(n, str) and re.fullmatch(form, n) for n in named):
        raise UsageError(f"{path}: 'fitted_from' lists the datasets the law was read from, "
                         f"each once, as data/{doc['probe']}/TARGET/NAME.nc")
    return tuple(named)


_parsed = lru_cache(maxsize=MEMO_FILES)(_parse)


def read_capped(path: Path) -> bytes | None:
    """The bytes of a hypothesis file, or None when it holds more than MAX_FILE_BYTES (never
    more is read, whatever its size says). A device, FIFO or folder is a UsageError: only a
    regular file is a hypothesis (a link to /dev/zero must not exhaust memory)."""
    try:
        return bounded.read_regular(path, MAX_FILE_BYTES)
    except bounded.TooLarge:
        return None
    except bounded.Unreadable as exc:
        raise UsageError(str(exc)) from None


def load_hypothesis(path: Path) -> Hypothesis:
    raw = read_capped(path)
    if raw is None:
        raise UsageError(f"{path}: hypothesis files are at most {MAX_FILE_BYTES} bytes")
    return parse_hypothesis(path, raw)


def _integer_coords(grid: xr.Dataset) -> dict[str, xr.Variable]:
    """The grid's integer coordinates, as variables (a DataArray per coordinate costs more
    than reading it)."""
    found = {str(name): grid.variables[name] for name in grid.coords}
    return {name: var for name, var in found.items() if var.dtype.kind in "iub"}


def _grid_names(grid: xr.Dataset, dims: tuple[str, ...]) -> list[str]:
    """The integer coordinates that live on `dims`."""
    return [name for name, var in _integer_coords(grid).items() if set(var.dims) <= set(dims)]


def _grid_env(grid: xr.Dataset, dims: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Every integer coordinate that lives on `dims`, broadcast to the full grid (a
    read-only numpy view: xarray's broadcast_like costs more than the evaluation)."""
    shape = tuple(grid.sizes[d] for d in dims)
    env = {}
    for name, var in _integer_coords(grid).items():
        if not set(var.dims) <= set(dims):
            continue
        own = [d for d in dims if d in var.dims]  # its dims, in the grid's order
        values = var.transpose(*own).values.reshape(
            [grid.sizes[d] if d in own else 1 for d in dims])
        env[name] = np.broadcast_to(values, shape)
    return env


def predict(h: Hypothesis, grid: xr.Dataset, observables: Mapping[str, tuple[str, ...]]
            ) -> dict[str, dict[str, np.ndarray]]:
    """{scoring: {observable: uint32 prediction over the observable's grid dims}}."""
    return evaluate_claim(h, grid, observables)[0]


Tables = dict[str, dict[str, np.ndarray]]


def helper_values(h: Hypothesis, grid: xr.Dataset, helpers: Mapping[str, tuple[str, ...]]
                  ) -> dict[str, np.ndarray]:
    """Some of a file's [let] helpers evaluated over the grid, each over the dims named
    with it, in the file's own coordinates (literal, no translation), as int64 (negative
    values survive): e.g. the row and k a documented table gives each slot, so a figure can
    be numbered as the table a verdict confirmed."""
    if missing := set(helpers) - {name for name, _ in h.lets}:
        raise UsageError(f"{h.path}: has no helper {sorted(missing)} in [let]")
    asked = replace(h, predict={name: name for name in helpers}, translations={}, where=None,
                    near_misses={})
    tables = predict(asked, grid, helpers)["literal"]
    return {name: tables[name].view(np.int32).astype(np.int64) for name in helpers}


@dataclass(frozen=True)
class Piece:
    """One block of one table (`stream_claim`): the scoring and observable it belongs to, the
    whole table's shape, where the block sits in it (a slice per axis; () for a table that is
    one value), the uint32 predictions there and, where the file has a `where`, the claimed
    cells."""

    scoring: str
    observable: str
    shape: tuple[int, ...]
    index: tuple[slice, ...]
    values: np.ndarray
    scope: np.ndarray | None


@dataclass(frozen=True)
class _Plan:
    observable: str
    dims: tuple[str, ...]
    program: Program
    steps: dict[str, tuple[dict[str, Program], Program | None]]  # scoring -> (moves, rename)
    alive: int  # values alive per cell while it is evaluated


def evaluate_claim(h: Hypothesis, grid: xr.Dataset, observables: Mapping[str, tuple[str, ...]]
                   ) -> tuple[Tables, Tables | None]:
    """(predictions, scopes): {scoring: {observable: uint32 values}} and the same shape of
    bool masks of the cells the claim is about (None when it is about all of them), whole:
    `stream_claim`'s blocks put together (a check streams them instead).

    A translation rebinds coordinates (e.g. x = "y") before prediction and scope are
    evaluated."""
    tables: Tables = {s: {} for s in h.scorings()}
    scopes: Tables = {s: {} for s in h.scorings()}
    for piece in stream_claim(h, grid, observables):
        if not piece.index:  # one value: kept unbroadcast, as it was sealed
            tables[piece.scoring][piece.observable] = piece.values
            if piece.scope is not None:
                scopes[piece.scoring][piece.observable] = piece.scope
            continue
        table = tables[piece.scoring].setdefault(piece.observable,
                                                 np.empty(piece.shape, np.uint32))
        table[piece.index] = piece.values
        if piece.scope is not None:
            scopes[piece.scoring].setdefault(piece.observable, np.empty(piece.shape, bool))[
                piece.index] = piece.scope
    order = {s: {o: tables[s][o] for o in h.predict} for s in h.scorings()}  # file order
    if h.where is None:
        return order, None
    return order, {s: {o: scopes[s][o] for o in h.predict} for s in h.scorings()}


@dataclass(frozen=True)
class Block:
    """A block of a claim's tables before it is computed (`claim_blocks`): where it sits,
    known without evaluating anything, and `compute`, which evaluates it."""

    scoring: str
    observable: str
    shape: tuple[int, ...]
    index: tuple[slice, ...]
    compute: Callable[[], Piece] = field(repr=False, compare=False)


def stream_claim(h: Hypothesis, grid: xr.Dataset, observables: Mapping[str, tuple[str, ...]],
                 values: int | None = None) -> Iterator[Piece]:
    """The claim's tables in blocks, in the order their hash reads them (scorings and then
    observables sorted, each table's blocks in C order along its leading axes), each block
    computed with at most `values` values alive (PIECE_VALUES): memory stays bounded however
    large the grid, and blocks that fit in the processor's caches are faster too. Refused,
    before anything runs, as `evaluate_claim` is (unknown names, cost, values alive)."""
    return (block.compute() for block in claim_blocks(h, grid, observables, values))


def claim_blocks(h: Hypothesis, grid: xr.Dataset, observables: Mapping[str, tuple[str, ...]],
                 values: int | None = None) -> Iterator[Block]:
    """`stream_claim`'s blocks, each computed only when asked (`Block.compute`, before the
    next is taken): a scorer can walk several claims side by side, each block where the
    observed values it is compared with are already read."""
    grid, plans = _plan_claim(h, grid, observables)
    budget = values or PIECE_VALUES
    for scoring in sorted(h.scorings()):
        for observable in sorted(plans):
            plan = plans[observable]
            moves, rename = plan.steps[scoring]
            env = _grid_env(grid, plan.dims)  # broadcast views: no copies
            shape = table_shape(grid, plan.dims, env)
            cells = max(1, budget // plan.alive)
            with _refusal(h):
                whole = _moved_whole(grid, env, shape, moves, cells)
            moves = {c: m for c, m in moves.items() if c not in whole}
            for index in blocks(shape, cells) if env else iter([()]):
                part = {name: view[index] for name, view in (env | whole).items()}
                yield Block(scoring, observable, shape, index, functools.partial(
                    _piece, h, scoring, observable, shape, index, part, plan.program, moves,
                    rename))


@contextlib.contextmanager
def _refusal(h: Hypothesis) -> Iterator[None]:
    try:
        yield
    except ExprError as exc:
        raise UsageError(f"{h.path}: {exc}") from exc


def _piece(h: Hypothesis, scoring: str, observable: str, shape: tuple[int, ...],
           index: tuple[slice, ...], part: dict[str, np.ndarray], program: Program,
           moves: dict[str, Program], rename: Program | None) -> Piece:
    with _refusal(h):
        predicted, scope = _evaluate_piece(h, observable, part, program, moves, rename)
    size = tuple(s.stop - s.start for s in index)
    if index:  # a constant comes back unbroadcast: give it its block's shape
        predicted = np.broadcast_to(predicted, size)
        scope = None if scope is None else np.broadcast_to(scope, size)
    return Piece(scoring, observable, shape, index, predicted, scope)


def _moved_whole(grid: xr.Dataset, env: dict[str, np.ndarray], shape: tuple[int, ...],
                 moves: dict[str, Program], cells: int) -> dict[str, np.ndarray]:
    """The translated coordinates that span at most `cells` cells, computed once over the
    whole grid (as broadcast views) rather than once per block; the rest per block."""
    if not env:
        return {}
    axes = {name: set(grid.variables[name].dims) for name in env}
    return {coord: np.broadcast_to(m.evaluate(env, compact=True)["translated"], shape)
            for coord, m in moves.items()
            if np.prod([grid.sizes[d] for d in _support(m, axes)["translated"]]) <= cells}


def table_shape(grid: xr.Dataset, dims: tuple[str, ...], env: Mapping[str, np.ndarray]
                ) -> tuple[int, ...]:
    """A table's shape: its dims' sizes, () where no coordinate lives on them (one value)."""
    return tuple(grid.sizes[d] for d in dims) if env else ()


def table_shapes(h: Hypothesis, grid: xr.Dataset, observables: Mapping[str, tuple[str, ...]]
                 ) -> dict[str, tuple[int, ...]]:
    """The shape of each table the claim predicts, in the file's order, without evaluating."""
    grid, plans = _plan_claim(h, grid, observables)
    return {o: table_shape(grid, plans[o].dims, _grid_env(grid, plans[o].dims))
            for o in h.predict}


def retired_observables(h: Hypothesis) -> list[str]:
    """What a hypothesis predicts that its probe declares retired (`Probe.retired`:
    observables an earlier version had): it was sealed for that version. The seal stays
    valid; the claim no longer applies. An observable that is simply gone, undeclared, is
    not retired: evaluating the claim then fails, and `prereg verify` says so.

    A probe may retire only what it no longer observes (UsageError otherwise, from its
    `ProbeInfo`): retiring a live observable would turn every verdict on it into a note."""
    from probelab.probe import get_probe, info

    return sorted(set(h.predict) & set(info(get_probe(h.probe)).retired))


def unobserved(h: Hypothesis, observables: Mapping[str, tuple[str, ...]]) -> str | None:
    """Why a file cannot be evaluated on a probe with `observables`, in the words seal and
    check both use: it predicts an observable the probe does not have (a typo, or one gone
    from the probe); None where it predicts none such."""
    if unknown := sorted(set(h.predict) - set(observables)):
        return f"predicts {unknown}, but the probe observes {sorted(observables)}"
    return None


def _plan_claim(h: Hypothesis, grid: xr.Dataset, observables: Mapping[str, tuple[str, ...]]
                ) -> tuple[xr.Dataset, dict[str, _Plan]]:
    """The grid (with the file's model) and, per observable, what evaluating it runs; every
    refusal (unknown names, an expression that does not compile, cost, values alive) is
    raised here, before anything is evaluated."""
    if why := unobserved(h, observables):
        raise UsageError(f"{h.path}: {why}")
    grid = _with_model(h, grid)
    known = set(_integer_coords(grid))
    for name, mapping in h.translations.items():
        if missing := set(mapping) - known - set(observables):
            raise UsageError(f"{h.path}: translation {name!r} maps {sorted(missing)}, which "
                             "are neither coordinates of the grid nor observables")
        if unpredicted := (set(mapping) & set(observables)) - set(h.predict) - known:
            raise UsageError(f"{h.path}: translation {name!r} renames {sorted(unpredicted)}, "
                             "which the file does not predict")
    _validate(h, known)
    plans: dict[str, _Plan] = {}
    work = 0
    try:
        for observable, source in h.predict.items():
            dims = observables[observable]
            env = _grid_names(grid, dims)  # the grid itself is broadcast once bounded
            cells = int(np.prod([grid.sizes[d] for d in dims]))
            axes = {name: set(grid.variables[name].dims) for name in env}
            extra = [("in_scope", h.where)] if h.where is not None else []
            targets = [("predicted", source), *extra]
            program = compile_program([*_needed(h.lets, targets), *targets], env, h.tables)
            steps, programs = {}, [program]
            for scoring in h.scorings():
                mapping = h.translations.get(scoring, {})
                # right-hand sides are evaluated over the raw coordinates, all at once (a
                # swap works); only the coordinates this observable's grid has are rebound
                moves = {coord: compile_program([("translated", src)], env)
                         for coord, src in mapping.items()
                         if coord not in observables and coord in env}
                rename = compile_program([("renamed", mapping[observable])],
                                         [*env, observable]) if observable in mapping else None
                moved = {c: _support(m, axes)["translated"] for c, m in moves.items()}
                work += sum(_cost(m, axes, grid) for m in moves.values())
                work += _cost(program, axes | moved, grid) + cells * len(targets)
                if rename is not None:
                    work += _cost(rename, axes | moved | {observable: set(dims)}, grid) + cells
                used = [program, *moves.values(), *([rename] if rename else [])]
                steps[scoring] = moves, rename
                programs += used
            plans[observable] = _Plan(observable, dims, program, steps,
                                      _alive(h, observable, len(env), programs))
        if work > MAX_WORK:
            raise UsageError(f"{h.path}: too costly to evaluate: {work:,} node-cells (syntax "
                             f"nodes x grid cells, over observables and scorings); at most "
                             f"{MAX_WORK:,}")
        return grid, plans
    except ExprError as exc:
        raise UsageError(f"{h.path}: {exc}") from exc


class Evaluations:
    """Claims evaluated once per run: a verify evaluates each sealed file on its probe's grid,
    and scores it on every dataset of that grid. What is kept is each claim's table hash,
    under everything its evaluation reads (`key`): in memory for the run and on disk across
    runs (probelab.cache); the tables themselves are streamed (`stream_claim`), never kept, so
    memory stays bounded however many claims a run evaluates."""

    def __init__(self) -> None:
        self._memo: dict[tuple[str, str], bytes] = {}
        self._printed: dict[str, tuple[GridPrint, str]] = {}
        self._grids: dict[str, tuple[xr.Dataset, str]] = {}

    def grid(self, probe: "Probe") -> tuple[xr.Dataset, str]:
        """The probe's stimulus and its hash, made once per run: every sealed file of a
        probe is evaluated on the same grid (a stimulus is a pure function of the probe)."""
        if probe.id not in self._grids:
            from probelab.dataset import grid_sha256

            grid = probe.stimulus()
            self._grids[probe.id] = grid, grid_sha256(grid)
        return self._grids[probe.id]

    def printed(self, probe: "Probe") -> tuple["GridPrint", str]:
        """The print and hash of the probe's stimulus, without making it where a run
        already did for the same probe code: kept on disk under every file of the probe's
        folder and the probelab code they import (a stimulus is a function of them)."""
        from probelab import depends
        from probelab.cache import cache_key
        from probelab.dataset import GridPrint, grid_sha256

        if probe.id in self._printed:
            return self._printed[probe.id]
        if probe.id in self._grids:
            grid, grid_hash = self._grids[probe.id]
            self._printed[probe.id] = GridPrint.of(grid), grid_hash
            return self._printed[probe.id]
        folder = _folder_of(probe)
        if folder is None:  # not a folder of this lab's catalogue: made, never kept
            grid, grid_hash = self.grid(probe)
            return GridPrint.of(grid), grid_hash
        key = cache_key(probe=probe.id, files=depends.files_digest(folder),
                        code=depends.digest_folder(folder, "probelab.probe", __name__))

        def made() -> bytes:
            grid, _ = self.grid(probe)
            return json.dumps([grid_sha256(grid), GridPrint.of(grid).to_list()]).encode()

        try:
            grid_hash, raw = bounded.loads(self.cached("grids", key, made))
            printed = GridPrint.from_list(raw)
        except (ValueError, TypeError):  # not what this code writes: made again, never trusted
            grid_hash, raw = bounded.loads(self.cached("grids", key, made, fresh=True))
            printed = GridPrint.from_list(raw)
        self._printed[probe.id] = printed, grid_hash
        return self._printed[probe.id]

    def probe_digest(self, h: Hypothesis, probe: "Probe") -> tuple[str, str]:
        """(the probe's grid hash, the claim's table hash on it): the stimulus is made only
        where neither answer is kept (`printed`, `digest`)."""
        printed, grid_hash = self.printed(probe)

        def streamed() -> bytes:
            grid, _ = self.grid(probe)
            return _streamed_hash(h, grid, probe.observables)

        return grid_hash, self.cached("tables", self.key(h, printed, probe.observables),
                                      streamed).decode()

    @staticmethod
    def key(h: Hypothesis, grid: "xr.Dataset | GridPrint",
            observables: Mapping[str, tuple[str, ...]]) -> str:
        """What an answer about the claim is kept on disk under: everything its evaluation
        reads (`_claim_key`, with the file's name for its path, which only its error messages
        use: the same claim in another checkout of the lab is the same answer) and the code
        that evaluates it (this module and what it imports)."""
        from probelab import depends

        pathless = replace(h, path=Path(h.path.name))
        return hashlib.sha256(repr((_claim_key(pathless, grid, observables),
                                    depends.digest(__name__))).encode()).hexdigest()

    def digest(self, h: Hypothesis, grid: xr.Dataset,
               observables: Mapping[str, tuple[str, ...]]) -> str:
        """The claim's table hash: from this run, or the on-disk cache where a run already
        evaluated it under this key (a corrupt entry is recomputed), or streamed now."""
        return self.cached("tables", self.key(h, grid, observables),
                           lambda: _streamed_hash(h, grid, observables)).decode()

    def remember(self, key: str, digest: str) -> None:
        """A table hash worked out while scoring (the same stream), kept as `digest` keeps
        its own."""
        self.cached("tables", key, digest.encode)

    def has(self, kind: str, key: str) -> bool:
        """Whether this run or the on-disk cache holds an answer under `key` (nothing is
        built)."""
        try:
            self.cached(kind, key, _absent)
        except _Absent:
            return False
        return True

    def cached(self, kind: str, key: str, build: Callable[[], bytes],
               fresh: bool = False) -> bytes:
        """An answer of this run (tables' hashes, scores: small), else the on-disk cache's
        (probelab.cache), else `build`'s, kept in both. `fresh` builds it anew (an answer
        kept that does not read as this code writes it)."""
        from probelab.cache import cached_bytes

        if fresh or (kind, key) not in self._memo:
            self._memo[kind, key] = cached_bytes(kind, key, build, fresh)[0]
        return self._memo[kind, key]


def _streamed_hash(h: Hypothesis, grid: xr.Dataset,
                   observables: Mapping[str, tuple[str, ...]]) -> bytes:
    hasher = TableHash(h.where is not None)
    for piece in stream_claim(h, grid, observables):
        hasher.feed(piece)
    return hasher.hexdigest().encode()


def _folder_of(probe: "Probe") -> Path | None:
    """The folder of this lab's catalogue that defines the probe, if any."""
    from probelab.probe import catalog

    found = catalog()
    entry = next((e for e in found.entries() if e.id == probe.id), None)
    return None if entry is None else found.base / entry.folder


class _Absent(Exception):
    """No answer was kept (`Evaluations.has`)."""


def _absent() -> bytes:
    raise _Absent


def _with_model(h: Hypothesis, grid: xr.Dataset) -> xr.Dataset:
    """The grid with the file's [model] evaluated over its numeric cases as the integer
    coordinate `model` (D's bit patterns per case), so expressions can read it."""
    if h.model is None:
        return grid
    if MODEL in grid.variables:
        raise UsageError(f"{h.path}: the grid already has a coordinate named {MODEL!r}")

    # a model reads only the grid's numeric cases and formats, and runs its family's code
    # (which never changes under a running lab, but may be swapped in: the class itself is
    # part of the key). Keyed on those inputs alone, not on the whole grid: a dataset's grid
    # and the probe's stimulus hash apart where they differ elsewhere, and each made the
    # same model again (half of a cold verify's model time); and on the model's value, not
    # its spelling (a parameter written at its default names the same model).
    family = numerics_spec.FAMILIES.get(str(h.model.get("family")))
    try:
        model = numerics_spec.model_of(h.model)
    except ValueError as exc:
        raise UsageError(f"{h.path}: {exc}") from exc
    key = (model, h.model.get("nan", "quiet"), _model_inputs(grid), id(family))
    if key not in _MODELS:
        try:
            bits = numerics_spec.predicted_bits(h.model, grid)
        except ValueError as exc:
            raise UsageError(f"{h.path}: {exc}") from exc
        bits.flags.writeable = False
        _MODELS[key] = bits
        while sum(b.nbytes for b in _MODELS.values()) > MODELS_BYTES and len(_MODELS) > 1:
            _MODELS.pop(next(iter(_MODELS)))
    return grid.assign_coords({MODEL: (grid["c_bits"].dims, _MODELS[key])})


def _model_inputs(grid: xr.Dataset) -> str:
    """The sha256 of all a [model] reads of a grid (numerics.spec.predicted_bits): its cases
    (name, dims, dtype, shape, values) and its formats; the names missing, as missing."""
    digest = hashlib.sha256()
    for name in (*numerics_spec.GRID, *numerics_spec.FORMAT_COORDS):
        if name not in grid.variables:
            digest.update(f"{name}|missing|".encode())
            continue
        var = grid.variables[name]
        values = np.ascontiguousarray(var.values)
        digest.update(f"{name}|{var.dims}|{values.dtype.str}|{values.shape}|".encode())
        digest.update("\0".join(map(str, values.ravel())).encode()
                      if values.dtype.kind in "OU" else values.tobytes())
    return digest.hexdigest()


# a model's bits per grid, kept per process (a claim reads them many times; a verify
# evaluates ~150 models, each 10 KB on today's grids): the oldest go beyond this
MODELS_BYTES = 64 << 20
_MODELS: dict[tuple[object, object, str, int], np.ndarray] = {}


def _claim_key(h: Hypothesis, grid: "xr.Dataset | GridPrint",
               observables: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    """Everything `evaluate_claim` reads (kept in step with it), unambiguously: the file's
    expressions; of the observables, the dims of those it predicts and which of the names its
    translations map are observables; of the grid (its print: probelab.dataset.GridPrint),
    the sizes of those dims and each integer coordinate's name, dims, dtype, shape and
    values. (Its errors, which name every observable, are never kept.)"""
    from probelab.dataset import GridPrint

    def items(table: Mapping) -> tuple:
        return tuple((k, items(v) if isinstance(v, Mapping) else v) for k, v in table.items())

    fields = (str(h.path), items(h.predict), h.lets, h.where, items(h.translations),
              items(h.near_misses), items(h.model or {}))
    if h.tables:  # a file without a table keeps the key it always had
        fields += (tuple((name, t.shape, hashlib.sha256(t.tobytes()).hexdigest())
                         for name, t in h.tables.items()),)
    names = {*h.predict, *(name for mapping in h.translations.values() for name in mapping)}
    printed = grid if isinstance(grid, GridPrint) else GridPrint.of(grid)
    sizes = dict(printed.sizes)
    # the print is under the archive's names (GridPrint.of): a dim named in the vocabulary
    # is the archive dim its alias coordinate lives on (`a_value` over `a_reg`)
    on = {name: dims for name, dims, _, _ in printed.coords}
    archive = {d: on[d][0] for d in on if d not in sizes and len(on[d]) == 1}
    seen = {n: tuple(archive.get(d, d) for d in observables[n]) if n in observables else None
            for n in names}
    dims = {d for n in h.predict for d in seen[n] or ()}
    header = (sorted(seen.items()), sorted((d, sizes.get(d)) for d in dims), printed.coords)
    return repr(fields), hashlib.sha256(f"{header!r}|{printed.digest}".encode()).hexdigest()


# a let is compared by value (`value_key`) only where it spans at most this many cells
SHARED_LET_CELLS = 1 << 20


def value_key(h: Hypothesis, grid: xr.Dataset,
              observables: Mapping[str, tuple[str, ...]]) -> str | None:
    """What the claim's tables are a function of, with its helpers taken by value: its
    predictions, scope and translations as written, the dims and sizes they span, and the
    value of every [let] (or [layout]) they read under each scoring (over the coordinates
    that scoring's translation moves, as the walk evaluates them), each over its own
    support. Two claims of one grid with one value key have the same tables, however their
    helpers are written: a file restated in another notation (a CuTe layout for a
    hand-typed index) is evaluated once. None where a helper spans more than
    SHARED_LET_CELLS cells, the file has a [model], or anything fails to compile or evaluate
    (a fault included: the claim's own walk says why)."""
    if h.model is not None:
        return None
    lets = {name for name, _ in h.lets}
    digest = hashlib.sha256()
    try:
        for observable, source in h.predict.items():
            dims = observables[observable]
            names = _grid_names(grid, dims)
            axes = {name: set(grid.variables[name].dims) for name in names}
            env = _grid_env(grid, dims)
            read = _names(source) | (_names(h.where) if h.where is not None else set())
            digest.update(repr((observable, source, dims,
                                [grid.sizes[d] for d in dims])).encode())
            for scoring in sorted(h.scorings()):
                moves = {coord: compile_program([("translated", src)], names)
                         for coord, src in h.translations.get(scoring, {}).items()
                         if coord not in observables and coord in env}
                moved = {c: _support(m, axes)["translated"] for c, m in moves.items()}
                scoped = env | {c: m.evaluate(env, compact=True)["translated"]
                                for c, m in moves.items()}
                for let in sorted(read & lets):
                    program = compile_program(
                        [*_needed(h.lets, [("", let)]), ("predicted", let)], names, h.tables)
                    span = _support(program, axes | moved)["predicted"]
                    if np.prod([grid.sizes[d] for d in span]) > SHARED_LET_CELLS:
                        return None
                    value = np.ascontiguousarray(program.evaluate(
                        scoped, ("predicted",), compact=True)["predicted"], "<i8")
                    digest.update(f"|{scoring}|{let}|{value.shape}|".encode() + value.tobytes())
    except (ExprError, KeyError):
        return None
    moved = {name for mapping in h.translations.values() for name in mapping}
    digest.update(repr((h.where, [(k, sorted(v.items())) for k, v in h.translations.items()],
                        sorted((n, observables.get(n)) for n in moved))).encode())
    return digest.hexdigest()


def _validate(h: Hypothesis, known: set[str]) -> None:
    """Every expression of the file compiles (syntax, whitelist, names, limits), used on this
    grid or not: a sealed file must be valid throughout, not only where it is evaluated."""
    checked, helpers = "hypothesis_expression", {name for name, _ in h.lets}
    try:
        # a helper may name any coordinate of the grid, and may share its name with one
        # that only other observables have (where it is used, it is the helper)
        compile_program(h.lets, known - helpers, h.tables)
        with_lets = [*(known - helpers), *helpers]
        sources = [*h.predict.values(), *([h.where] if h.where is not None else []),
                   *(src for table in h.near_misses.values() for src in table.values())]
        for source in sources:
            compile_program([(checked, source)], with_lets)
        for mapping in h.translations.values():
            for name, source in mapping.items():
                compile_program([(checked, source)], [*known, *([name] if name in h.predict
                                                                else [])])
    except ExprError as exc:
        raise UsageError(f"{h.path}: {exc}") from exc


def _alive(h: Hypothesis, observable: str, coordinates: int, programs: list[Program]) -> int:
    """Values alive per cell while the observable is evaluated (coordinates, definitions and
    temporaries), refused before anything runs when there are too many: a block of the grid
    is then sized so that at most PIECE_VALUES are alive (`stream_claim`)."""
    alive = coordinates + max(len(p.definitions) + p.depth for p in programs)
    if alive > MAX_ALIVE:
        raise UsageError(f"{h.path}: too large to evaluate: {observable} keeps about {alive} "
                         f"values per cell alive; at most {MAX_ALIVE} (fewer helpers, or "
                         "shallower nesting)")
    return alive


def _support(program: Program, axes: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """The grid dims each definition spans: those of the coordinates it uses, directly or
    through earlier definitions (what numpy computes it over: broadcast views are compact)."""
    spans = dict(axes)
    for name, source in program.definitions:
        spans[name] = set().union(*(spans.get(n, set()) for n in _names(source)))
    return {name: spans[name] for name, _ in program.definitions}


def _cost(program: Program, axes: Mapping[str, set[str]], grid: xr.Dataset) -> int:
    """Syntax nodes x cells, per definition over the dims it spans."""
    spans = _support(program, axes)
    return sum(nodes * int(np.prod([grid.sizes[d] for d in spans[name]]))
               for (name, _), nodes in zip(program.definitions, program.per_definition,
                                           strict=True))


def _evaluate_piece(h: Hypothesis, observable: str, env: dict[str, np.ndarray],
                    program: Program, moves: dict, rename: Program | None
                    ) -> tuple[np.ndarray, np.ndarray | None]:
    # a translated coordinate stays over the dims its right-hand side spans, like the raw one
    scoped = env | {coord: p.evaluate(env, compact=True)["translated"]
                    for coord, p in moves.items()}
    values = program.evaluate(scoped, ("predicted", "in_scope"))
    predicted = values["predicted"]
    if rename is not None:  # the value itself is named in the other system
        predicted = rename.evaluate(scoped | {observable: predicted})["renamed"]
    scope = values["in_scope"] != 0 if h.where is not None else None
    return predicted.astype(np.uint32), scope  # modulo 2**32, as & MASK: numpy wraps


@functools.lru_cache(maxsize=8192)
def _names(source: str) -> frozenset[str]:
    try:
        return frozenset(n.id for n in ast.walk(ast.parse(source, mode="eval"))
                         if isinstance(n, ast.Name))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()  # compile_program reports it properly


def _needed(lets: tuple[tuple[str, str], ...], targets: list[tuple[str, str]]
            ) -> list[tuple[str, str]]:
    """The helper definitions these expressions use, directly or through each other, in
    file order. A helper only some observables can evaluate (it names a coordinate others do
    not have) is then only compiled where it is used."""
    wanted = set().union(*(_names(source) for _, source in targets))
    for name, source in reversed(lets):  # a helper may use only earlier helpers
        if name in wanted:
            wanted |= _names(source)
    return [(name, source) for name, source in lets if name in wanted]


class TableHash:
    """`table_sha256`, fed a block at a time in `stream_claim`'s order: the same bytes, in
    bounded memory (a table's claimed-cell bits, 1/32 of its values, wait for its end)."""

    def __init__(self, scoped: bool) -> None:
        self._hash, self._scoped = hashlib.sha256(), scoped
        self._table: tuple[str, str] | None = None
        self._bits: list[bytes] = []
        self._carry = np.zeros(0, bool)

    def feed(self, piece: Piece) -> None:
        if (piece.scoring, piece.observable) != self._table:
            self._flush()
            self._table = piece.scoring, piece.observable
            self._hash.update(f"{piece.scoring}|{piece.observable}|{piece.shape}|".encode())
        self._hash.update(np.ascontiguousarray(piece.values, "<u4"))  # its buffer, no copy
        if self._scoped:  # packed as one array would be: whole bytes now, the rest carried
            flat = np.concatenate([self._carry, np.ravel(piece.scope)])
            whole = flat.size - flat.size % 8
            self._bits.append(np.packbits(flat[:whole]).tobytes())
            self._carry = flat[whole:]

    def _flush(self) -> None:
        if self._table is not None and self._scoped:
            self._bits.append(np.packbits(self._carry).tobytes())
            self._hash.update(b"".join(self._bits))
        self._bits, self._carry = [], np.zeros(0, bool)

    def hexdigest(self) -> str:
        self._flush()
        self._table = None
        return self._hash.hexdigest()


def table_sha256(tables: Mapping[str, Mapping[str, np.ndarray]],
                 scopes: Mapping[str, Mapping[str, np.ndarray]] | None = None) -> str:
    """The hash a seal records of a claim's whole tables (`TableHash` streams the same)."""
    hasher = TableHash(scopes is not None)
    for scoring in sorted(tables):
        for observable in sorted(tables[scoring]):
            values = tables[scoring][observable]
            hasher.feed(Piece(scoring, observable, values.shape, (), values,
                              None if scopes is None else scopes[scoring][observable]))
    return hasher.hexdigest()
