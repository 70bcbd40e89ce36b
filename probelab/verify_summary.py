"""What `probelab verify` prints by default: one screen, whatever the archive's size.

Counts per probe (datasets, checks, and how they came out), how many notes and retired
datasets there are (`--verbose` lists them); the problems are printed in full after this,
by the command itself.
"""

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from probelab.notary.rules import Outcome

# the order a summary counts them in
OUTCOMES = tuple(o.value for o in (Outcome.CONFIRMED, Outcome.REFUTED, Outcome.NOT_EVIDENCE,
                                   Outcome.POST_HOC, Outcome.TAMPERED))


def summary_lines(result: dict[str, Any], width: int | None = None) -> list[str]:
    """The summary of a verify result, in columns that fit `width` (the terminal's)."""
    width = width or shutil.get_terminal_size((100, 24)).columns
    per: dict[str, Counter] = {}
    datasets: dict[str, set[str]] = {}
    for row in result["checks"]:
        probe = Path(row["dataset"]).parts[1]
        per.setdefault(probe, Counter())[row["outcome"]] += 1
        datasets.setdefault(probe, set()).add(row["dataset"])
    total = Counter()
    for counts in per.values():
        total.update(counts)
    seals = result["seals"]
    intact = sum(1 for s in seals if s["ok"])
    retired = len(result.get("retired", []))
    lines = [f"{result.get('datasets', len({r['dataset'] for r in result['checks']}))} "
             f"datasets{f' ({retired} retired)' if retired else ''}, {len(seals)} sealed "
             f"hypotheses ({intact} intact), "
             f"{len(result['checks'])} checks: "
             + ", ".join(f"{total[o]} {o}" for o in OUTCOMES if total[o])]
    cells = [f"{probe} {len(datasets[probe])}/{sum(c.values())}: "
             + " ".join(f"{c[o]}{o[0]}" for o in OUTCOMES if c[o])
             for probe, c in sorted(per.items())]
    if cells:
        lines.append("per probe, datasets/checks: C confirmed, R refuted, N not evidence, "
                     "P post-hoc, T tampered")
        lines += _columns(cells, width)
    if retired:
        lines.append(f"{retired} retired datasets (superseded by re-measurements; "
                     "--verbose lists them, --retired checks them in full)")
    if changes := [r for r in result["toolchains"] if not r["same"]]:
        lines.append(f"{len(changes)} verdicts change with the compiler (--verbose)")
    if result["notes"]:
        lines.append(f"{len(result['notes'])} notes (--verbose lists them)")
    return lines


def _columns(cells: list[str], width: int) -> list[str]:
    """Cells laid out column by column, as many columns as fit."""
    wide = max(len(c) for c in cells) + 2
    count = max(1, width // wide)
    rows = -(-len(cells) // count)
    return ["".join(cells[r + k * rows].ljust(wide) for k in range(count)
                    if r + k * rows < len(cells)).rstrip() for r in range(rows)]
