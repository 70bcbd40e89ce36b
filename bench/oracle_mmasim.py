"""Benchmark and survey: MMA-Sim (`probelab oracle mmasim`) on every numerics dataset of the
archive, per dataset: the instruction it models (or why it models none), its agreement with
the measured D per case, and the time it took against a bare floor in the same run.

    python bench/oracle_mmasim.py --json results.json [--markdown table.md]

Needs `pip install 'probelab[oracles]'` in the interpreter that runs it. The floor is the
least the oracle must do: read the dataset and its inputs (a_bits, b_bits, c_bits and the
measured D). The Markdown table, one row per probe (every dataset of it summed), is the one
docs/numerics.md shows.
"""

import argparse
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from timing import ROOT, report

sys.path.insert(0, str(ROOT))

from probelab import dataset, manifest, retirement
from probelab.oracle import measured_bits, run


def floor(path: Path) -> float:
    """Seconds to read a dataset and the values the oracle compares."""
    start = time.perf_counter()
    ds = dataset.load(path)
    for name in ("a_bits", "b_bits", "c_bits"):
        ds[name].values  # noqa: B018 (read, not used)
    for kernel in ds["kernel"].values:
        measured_bits(ds, str(kernel))
    return time.perf_counter() - start


def survey(path: Path) -> dict[str, Any]:
    base = {"dataset": path.relative_to(ROOT).as_posix(), "floor_s": floor(path)}
    start = time.perf_counter()
    reports, unmodelled = run("mmasim", path)
    took = time.perf_counter() - start
    if unmodelled:  # a numerics dataset is one kernel: modelled whole or not at all
        return {**base, "model": None, "why": "; ".join(u.why for u in unmodelled),
                "oracle_s": took}
    families = [f for r in reports for f in r.families]
    return {**base, "model": "; ".join(r.instruction for r in reports), "oracle_s": took,
            "simulated": any(r.simulated for r in reports),
            "cases": sum(f.cases for f in families), "agree": sum(f.agree for f in families),
            "nan_payload": sum(f.nan_payload for f in families),
            "disagree": sum(f.disagree for f in families),
            "integrity": [w for r in reports if (w := r.standing.words())]}


def table(rows: list[dict[str, Any]]) -> str:
    """One line per probe: its datasets, what MMA-Sim models, cases and agreement summed
    (a simulated dataset never counts)."""
    probes: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        probes.setdefault(row["dataset"].split("/")[1], []).append(row)
    lines = ["| probe | datasets | MMA-Sim's model | cases | agree | NaN bits differ | "
             "disagree |", "|---|---|---|---|---|---|---|"]
    for probe, mine in sorted(probes.items()):
        modelled = [r for r in mine if r["model"] and not r["simulated"]]
        if not modelled:
            lines.append(f"| {probe} | {len(mine)} | none: {mine[0]['why']} | | | | |")
            continue
        total = {k: sum(r[k] for r in modelled) for k in ("cases", "agree", "nan_payload",
                                                          "disagree")}
        lines.append(f"| {probe} | {len(modelled)} | {modelled[0]['model']} | "
                     f"{total['cases']:,} | {total['agree']:,} | {total['nan_payload']:,} | "
                     f"{total['disagree']:,} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the results here too")
    parser.add_argument("--markdown", type=Path, help="write the per-probe table here")
    args = parser.parse_args()
    retired = {e["path"] for e in retirement.read()}
    paths = sorted(p for p in (ROOT / "data").glob("numerics-*/*/*.nc")
                   if manifest.archive_relative(p) not in retired)
    rows = []
    for i, path in enumerate(paths, 1):
        rows.append(survey(path))
        print(f"[{i}/{len(paths)}] {rows[-1]['dataset']}: "
              f"{rows[-1].get('disagree', 'no model')}", file=sys.stderr)
    floor_s, oracle_s = (sum(r[k] for r in rows) for k in ("floor_s", "oracle_s"))
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                          capture_output=True).stdout.strip()
    results = {"command": " ".join(["python", *sys.argv]), "commit": head,
               "utc": datetime.now(UTC).isoformat(timespec="seconds"),
               "machine": f"{platform.node()} {platform.processor() or platform.machine()}",
               "datasets": len(rows), "floor_s": floor_s, "oracle_s": oracle_s,
               "ratio": oracle_s / floor_s if floor_s else None, "rows": rows}
    if args.markdown:
        args.markdown.write_text(table(rows))
    report(results, args.json)


if __name__ == "__main__":
    main()
