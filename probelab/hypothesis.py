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

Predictions are taken modulo 2**32: observables are 32-bit registers.
"""

import ast
import fnmatch
import hashlib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import xarray as xr

from probelab.errors import UsageError
from probelab.expr import ExprError, compile_program

MAX_FILE_BYTES = 1 << 20
MASK = 0xFFFFFFFF
LITERAL = "literal"
_REQUIRED = {"schema": int, "id": str, "probe": str, "claim": str, "coordinates": str,
             "predict": dict}
_OPTIONAL = {"kernels": list, "targets": list, "where": str, "parent": str, "let": dict,
             "translations": dict, "near_misses": dict, "agrees_with": list}


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


def parse_hypothesis(path: Path, raw: bytes) -> Hypothesis:
    if len(raw) > MAX_FILE_BYTES:
        raise UsageError(f"{path}: {len(raw)} bytes; hypothesis files are at most {MAX_FILE_BYTES}")
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML: {exc}") from exc
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
    predict = _strings(doc["predict"], "predict")
    if not predict:
        raise UsageError(f"{path}: [predict] names no observable")
    return Hypothesis(
        path=path, raw=raw, id=doc["id"], probe=doc["probe"], claim=doc["claim"],
        coordinates=doc["coordinates"], predict=predict,
        lets=tuple(_strings(doc.get("let", {}), "let").items()),
        translations={k: _strings(v, f"translations.{k}") for k, v in translations.items()},
        kernels=tuple(kernels) if kernels is not None else None,
        targets=tuple(targets) if targets is not None else None, where=doc.get("where"),
        parent=doc.get("parent"),
        near_misses={k: _strings(v, f"near_misses.{k}") for k, v in near.items()},
        agrees_with=tuple(agrees),
    )


def load_hypothesis(path: Path) -> Hypothesis:
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:  # refuse before reading a byte of a huge file
            raise UsageError(f"{path}: {size} bytes; hypothesis files are at most {MAX_FILE_BYTES}")
        raw = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror}") from exc
    return parse_hypothesis(path, raw)


def _grid_env(grid: xr.Dataset, dims: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Every integer coordinate that lives on `dims`, broadcast to the full grid."""
    env = {}
    for name, coord in grid.coords.items():
        if coord.dtype.kind in "iub" and set(coord.dims) <= set(dims):
            env[str(name)] = coord.broadcast_like(
                xr.DataArray(np.empty([grid.sizes[d] for d in dims]), dims=dims)
            ).transpose(*dims).values
    return env


def predict(h: Hypothesis, grid: xr.Dataset, observables: Mapping[str, tuple[str, ...]]
            ) -> dict[str, dict[str, np.ndarray]]:
    """{scoring: {observable: uint32 prediction over the observable's grid dims}}."""
    return evaluate_claim(h, grid, observables)[0]


Tables = dict[str, dict[str, np.ndarray]]


def evaluate_claim(h: Hypothesis, grid: xr.Dataset, observables: Mapping[str, tuple[str, ...]]
                   ) -> tuple[Tables, Tables | None]:
    """(predictions, scopes): {scoring: {observable: uint32 values}} and the same shape of
    bool masks of the cells the claim is about (None when it is about all of them).

    A translation rebinds coordinates (e.g. x = "y") before prediction and scope are
    evaluated."""
    unknown = set(h.predict) - set(observables)
    if unknown:
        raise UsageError(f"{h.path}: predicts {sorted(unknown)}, but the probe observes "
                         f"{sorted(observables)}")
    known = {str(c) for c, v in grid.coords.items() if v.dtype.kind in "iub"}
    for name, mapping in h.translations.items():
        if missing := set(mapping) - known - set(observables):
            raise UsageError(f"{h.path}: translation {name!r} maps {sorted(missing)}, which "
                             "are neither coordinates of the grid nor observables")
        if unpredicted := (set(mapping) & set(observables)) - set(h.predict) - known:
            raise UsageError(f"{h.path}: translation {name!r} renames {sorted(unpredicted)}, "
                             "which the file does not predict")
    tables: dict[str, dict[str, np.ndarray]] = {s: {} for s in h.scorings()}
    scopes: dict[str, dict[str, np.ndarray]] = {s: {} for s in h.scorings()}
    try:
        for observable, source in h.predict.items():
            env = _grid_env(grid, observables[observable])
            extra = [("in_scope", h.where)] if h.where is not None else []
            targets = [("predicted", source), *extra]
            program = compile_program([*_needed(h.lets, targets), *targets], env)
            for scoring in tables:
                scoped, mapping = dict(env), h.translations.get(scoring, {})
                coords = {k: v for k, v in mapping.items() if k not in observables}
                scoped |= _translate(coords, env)
                values = program.evaluate(scoped)
                predicted = values["predicted"]
                if observable in mapping:  # the value itself is named in the other system
                    rename = compile_program([("renamed", mapping[observable])],
                                             [*env, observable])
                    predicted = rename.evaluate(scoped | {observable: predicted})["renamed"]
                tables[scoring][observable] = (predicted & MASK).astype(np.uint32)
                if h.where is not None:
                    scopes[scoring][observable] = values["in_scope"] != 0
    except ExprError as exc:
        raise UsageError(f"{h.path}: {exc}") from exc
    return tables, (scopes if h.where is not None else None)


def _names(source: str) -> set[str]:
    try:
        return {n.id for n in ast.walk(ast.parse(source, mode="eval")) if isinstance(n, ast.Name)}
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()  # compile_program reports it properly


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


def _translate(mapping: Mapping[str, str], env: Mapping[str, np.ndarray]
               ) -> dict[str, np.ndarray]:
    """Right-hand sides are evaluated over the raw coordinates, all at once (a swap works).
    Only the coordinates this observable's grid has are rebound."""
    return {coord: compile_program([("translated", source)], env).evaluate(env)["translated"]
            for coord, source in mapping.items() if coord in env}


def table_sha256(tables: Mapping[str, Mapping[str, np.ndarray]],
                 scopes: Mapping[str, Mapping[str, np.ndarray]] | None = None) -> str:
    h = hashlib.sha256()
    for scoring in sorted(tables):
        for observable in sorted(tables[scoring]):
            values = np.ascontiguousarray(tables[scoring][observable], "<u4")
            h.update(f"{scoring}|{observable}|{values.shape}|".encode())
            h.update(values.tobytes())
            if scopes is not None:  # the claimed cells are part of what was sealed
                h.update(np.packbits(scopes[scoring][observable]).tobytes())
    return h.hexdigest()
