"""Restate the lane-id files that hand-type their fragment maps as `[layout]` versions.

    python scripts/restate_layouts.py [--dry-run] [PROBE ...]

A sealed file of the repeated lane-id form (the same_row / same_k / same_col / c_src
predictions over lets `a_m, a_k`, `b_n, b_k`, `d_m, d_n`) states each register fragment as
an index expression typed by hand. This writes, beside it, `<id>-as-layout.toml`: the same
claim with each such fragment given as the smallest CuTe layout (thread, value) -> index
(A m + M*k, B n + N*k, D m + M*n, CuTe's MMA-atom convention), else as an F2-linear layout,
found from the file's own tables on its probe's stimulus (probelab.lanemaps), and the
sentinels, guards and every other line kept. Nothing is written unless the new file gives
every table of the old one hash-for-hash on that stimulus (its sealed table_sha256): a
restatement, declared so (`parent`, and `agrees_with` the parent and the files the parent
restates: declared, or with its very tables; never a rival the stimulus is blind to, which
the output names: seal those with --allow-blind). Memory tiles (wgmma B in shared
memory: lets over `o`, `sk`, `sn`) are left as written. Seal the files with
`probelab prereg seal`; sealed after the data, they are POST-HOC on today's datasets.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np

from probelab.errors import LabError
from probelab.hypothesis import Evaluations, helper_values, parse_hypothesis
from probelab.lanemaps import LaneMap, cute_of, linear_of
from probelab.layouts import Cute, Linear
from probelab.paths import lab_root
from probelab.prereg import sealed_hypotheses
from probelab.probe import get_probe, supports
from probelab.rivals import blind_at_seal

PREDICTED = {"same_row", "same_k", "same_col", "c_src"}
# operand: (row let, col let, the coordinate giving the extent of the index's fastest axis)
OPERANDS = {"a": ("a_m", "a_k", "M"), "b": ("b_n", "b_k", "N"), "d": ("d_m", "d_n", "M")}
GUARD = re.compile(r"^(?P<body>.+?)(?: if (?P<op>[abd])_reg < (?P=op)_regs else (?P<none>-\d+))?$")


def candidates(probes: set[str]) -> list[tuple[dict, Path]]:
    """Ledger entries of the repeated form, in ledger order."""
    out = []
    for line in (lab_root() / "preregistrations" / "LEDGER.jsonl").read_text().splitlines():
        entry = json.loads(line)
        path = lab_root() / entry["path"]
        doc = tomllib.loads(path.read_text())
        if probes and entry["probe"] not in probes:
            continue
        restated = path.with_name(f"{path.stem}-as-layout.toml").exists()  # never rewritten
        if set(doc.get("predict", {})) >= PREDICTED and "layout" not in doc and not restated:
            out.append((entry, path))
    return out


def agreements() -> dict[tuple[str, str], set[str]]:
    """{(probe, id): the sealed files it restates or that restate it}: declared with
    agrees_with, or with the same tables (literal and translated) on the same grid."""
    entries = [json.loads(line) for line in
               (lab_root() / "preregistrations" / "LEDGER.jsonl").read_text().splitlines()]
    out: dict[tuple[str, str], set[str]] = {}
    for e in entries:
        said = tomllib.loads((lab_root() / e["path"]).read_text()).get("agrees_with", [])
        for other in entries:
            if other["probe"] == e["probe"] and other["hypothesis"] != e["hypothesis"] and (
                    other["hypothesis"] in said or (other["grid_sha256"], other["table_sha256"])
                    == (e["grid_sha256"], e["table_sha256"])):
                out.setdefault((e["probe"], e["hypothesis"]), set()).add(other["hypothesis"])
                out.setdefault((e["probe"], other["hypothesis"]), set()).add(e["hypothesis"])
    return out


def blind_to(path: Path) -> set[str]:
    """The sealed files the file cannot be told from on its probe's stimulus though no one
    declared it a restatement: rivals its stimulus is blind to (sealed with --allow-blind,
    or before seals were checked for it). Its restatement is blind to them too: never
    declared as agreeing (that would hide the blindness from every verdict), it is sealed
    with --allow-blind, as its parent was."""
    h = parse_hypothesis(path, path.read_bytes())
    probe = get_probe(h.probe)
    others = [o for o in sealed_hypotheses(probe.id) if o.id != h.id]
    return {pair.b for pair in blind_at_seal(probe, h, others) if pair.kind == "rivals"}


def fragment(h, grid, op: str, linear_first: bool) -> tuple[dict, list[tuple[str, str]]] | str:
    """([layout.<op>_idx] table, the lets replacing the operand's two) or why not."""
    row, col, extent = OPERANDS[op]
    lets = dict(h.lets)
    guards = [GUARD.match(lets.get(name, "")) for name in (row, col)]
    if any(g and g["none"] is None and " if " in g["body"] for g in guards):
        return f"{row}/{col} are guarded otherwise (a memory tile's lets)"
    if not all(guards) or guards[0]["none"] != guards[1]["none"] or \
            guards[0]["op"] not in (op, None):
        return f"{row}/{col} are not fragment lets"
    # the grid's dims in the fragment vocabulary; the text written keeps the parents' names
    # (`a_reg`, `a_regs`: alias coordinates of today's grids, the archive's own names)
    dims = ("kernel", f"{op}_lane", f"{op}_value")
    values = helper_values(h, grid, {row: dims, col: dims})
    counts = grid[f"{op}_values"].values
    widest = int(np.argmax(counts))
    n = int(counts[widest])
    rows, cols = values[row][widest, :, :n], values[col][widest, :, :n]
    if op == "b":  # LaneMap keeps B as (k, n): its index is n + N*k
        rows, cols = cols, rows
    m = LaneMap("", op, rows, cols, "")
    # the widest kernel's tile: a narrower kernel's map, where it is that map's prefix (its
    # table hash says), is the same layout read on fewer values
    extent = int(grid[extent].values[widest])
    if m.shape[0 if op != "b" else 1] != extent:
        return f"{op}: the map's extent is not {OPERANDS[op][2]}"
    none = guards[0]["none"]
    guard = f" if {op}_reg < {op}_regs else {none}" if none else ""
    cute = cute_of(m)
    if isinstance(cute, Cute) and not (linear_first and isinstance(linear_of(m), Linear)):
        table = {"cute": cute.text(), "of": [f"{op}_lane", f"{op}_reg"]}
        return table, [(row, f"{op}_idx % {extent}{guard}"),
                       (col, f"{op}_idx // {extent}{guard}")]
    linear = linear_of(m)
    if isinstance(linear, Linear):
        of = {"register": f"{op}_reg", "lane": f"{op}_lane % 32", "warp": f"{op}_lane // 32"}
        first, second = (f"{op}_lin_row", f"{op}_lin_col")
        table = {"linear": {dim: [list(v) for v in vectors] for dim, vectors in linear.bases},
                 "of": {dim: of[dim] for dim in linear.dims}, "out": [first, second]}
        if op == "b":
            first, second = second, first
        return table, [(row, f"{first}{guard}"), (col, f"{second}{guard}")]
    return f"{op}: {cute}; {linear}"


def restated(entry: dict, path: Path, grid, claims: Evaluations, same: list[str]
             ) -> str | tuple[str, str]:
    """(the new file's name, its text), or why there is none: CuTe layouts first, else
    (kernels of several shapes, whose maps share no index) F2-linear ones. `same`: the
    sealed files with the parent's very tables, which it restates too."""
    found = _restated(entry, path, grid, claims, same, False)
    return _restated(entry, path, grid, claims, same, True) if isinstance(found, str) else found


def _restated(entry: dict, path: Path, grid, claims: Evaluations, same: list[str],
              linear_first: bool) -> str | tuple[str, str]:
    h = parse_hypothesis(path, path.read_bytes())
    doc = tomllib.loads(path.read_text())
    probe = get_probe(h.probe)
    if foreign := [t for t in h.targets or () if not supports(probe, t)]:
        return f"claims {foreign}, which {h.probe} does not target: it could never be scored"
    layouts, replaced, said = {}, {}, []
    for op in OPERANDS:
        found = fragment(h, grid, op, linear_first)
        if isinstance(found, str):
            said.append(found)
            continue
        layouts[f"{op}_idx"] = found[0]
        replaced |= dict(found[1])
    if not layouts:
        return "; ".join(said)
    new_id = f"{h.id}-as-layout"
    forms = ", ".join(f"{op[0].upper()} {'a CuTe' if 'cute' in t else 'an F2-linear'} layout"
                      for op, t in layouts.items())
    kept = "; ".join(said)
    claim = textwrap.fill(
        f"{h.id} (sealed {entry['sealed_at']}) restated with its register fragments "
        f"written as layouts ({forms}), each the smallest form reproducing {h.id}'s own "
             "tables on the probe's stimulus (found by scripts/restate_layouts.py, issue 36), "
             f"checked to give every table of {h.id} hash-for-hash there"
             + (f"; left as written: {kept}" if kept else "") + ". Sealed after the datasets "
             "it is scored on (POST-HOC there: the parent's verdicts are the evidence); "
             "evidence for measurements taken after it.", 92, break_on_hyphens=False) + \
        f"\n\n{h.id}'s claim:\n{doc['claim'].strip()}\n"
    out = {"schema": doc["schema"], "id": new_id, "probe": h.probe, "claim": claim,
           "coordinates": doc["coordinates"], "parent": h.id,
           "agrees_with": sorted({*same, h.id})}
    for key in ("kernels", "targets", "where"):
        if key in doc:
            out[key] = doc[key]
    out["layout"] = layouts
    out["let"] = {name: replaced.get(name, source) for name, source in doc.get("let", {}).items()
                  if not (name in {"a_idx", "b_idx", "d_idx"} and name in layouts)}
    for key in ("predict", "translations", "near_misses"):
        if key in doc:
            out[key] = doc[key]
    text = toml(out)
    try:
        child = parse_hypothesis(path.with_name(f"{new_id}.toml"), text.encode())
        _, want = claims.probe_digest(h, probe)
        _, got = claims.probe_digest(child, probe)
    except LabError as exc:
        return f"the restatement does not evaluate: {exc}"
    if want != entry["table_sha256"] or got != want:
        return f"tables differ (sealed {entry['table_sha256'][:12]}, restated {got[:12]})"
    return f"{new_id}.toml", text


def toml(doc: dict) -> str:
    """The few TOML forms a hypothesis file uses, in `doc`'s order."""
    lines: list[str] = []
    tables = {k: v for k, v in doc.items() if isinstance(v, dict)}
    for key, value in doc.items():
        if key not in tables:
            lines.append(f"{key} = {_value(value, key == 'claim')}")
    for key, value in tables.items():
        nested = {k: v for k, v in value.items() if isinstance(v, dict)}
        if len(nested) < len(value):
            lines += ["", f"[{key}]"] + [f"{k} = {_value(v)}" for k, v in value.items()
                                         if k not in nested]
        for name, table in nested.items():
            lines += ["", f"[{key}.{name}]"]
            for k, v in table.items():
                if isinstance(v, dict):
                    inner = ", ".join(f"{d} = {_value(x)}" for d, x in v.items())
                    lines.append(f"{k} = {{ {inner} }}")
                else:
                    lines.append(f"{k} = {_value(v)}")
    return "\n".join(lines) + "\n"


def _value(value: object, long: bool = False) -> str:
    if long:
        assert '"""' not in str(value) and "\\" not in str(value)
        return f'"""\n{value}"""'
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("probes", nargs="*")
    parser.add_argument("--dry-run", action="store_true", help="write nothing")
    args = parser.parse_args()
    claims, grids = Evaluations(), {}
    written = skipped = 0
    agree = agreements()
    done: dict[str, set[str]] = {}  # restatements written, per probe: sealed in this order
    for entry, path in candidates(set(args.probes)):
        probe, own = entry["probe"], entry["hypothesis"]
        friends = agree.get((probe, own), set())
        twins = friends | {f"{f}-as-layout" for f in friends} & done.setdefault(probe, set())
        if entry["probe"] not in grids:
            grids[entry["probe"]] = get_probe(entry["probe"]).stimulus()
        found = restated(entry, path, grids[entry["probe"]], claims,
                         sorted(twins))
        if isinstance(found, str):
            skipped += 1
            print(f"skip {entry['path']}: {found}", file=sys.stderr)
            continue
        name, text = found
        done[probe].add(name.removesuffix(".toml"))
        if blind := blind_to(path):
            print(f"  blind, as its parent, to {sorted(blind)}: seal it with --allow-blind")
        target = path.with_name(name)
        print(f"{'would write' if args.dry_run else 'wrote'} {target.relative_to(lab_root())}")
        if not args.dry_run:
            target.write_text(text)
        written += 1
    print(f"{written} restated, {skipped} left", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
