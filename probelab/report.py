"""Verdicts as Markdown, ready to paste into a review; each recorded verdict re-derived
from its sealed file and dataset first, so a forged or stale verdict file is never shown as
if it held."""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probelab import bounded
from probelab.check import check, verdict_words
from probelab.errors import LabError, UsageError
from probelab.notary.verdict_files import render_json
from probelab.paths import lab_root, shown
from probelab.records import Verdict


@dataclass
class Rechecked:
    path: Path  # the recorded verdict file
    doc: Verdict | None  # the re-check; None where none could be made
    warnings: list[str] = field(default_factory=list)  # why the file is not to be trusted

    def render(self) -> str:
        if self.doc is None:  # nothing of the file is shown as if it held
            return "\n".join([f"### `{shown(self.path)}` — **NOT RE-VERIFIED**", "",
                              *(f"**⚠ {w}**" for w in self.warnings), ""])
        return render(self.doc, self.warnings)

    def to_dict(self) -> dict[str, Any]:
        return (self.doc or {"path": shown(self.path)}) | {"report_warnings": self.warnings}


def verdict_files(paths: list[Path]) -> tuple[list[Path], list[Path]]:
    """(verdict files as given, and for each dataset the verdicts recorded beside it; the
    datasets that have none). Only when nothing at all is found is it a usage error."""
    files, bare = [], []
    for path in paths:
        if not path.is_file():
            raise UsageError(f"no such file: {path}" if not path.exists() else
                             f"{path} is not a regular file")
        if path.suffix not in (".nc", ".json"):
            raise UsageError(f"{path} is neither a dataset (.nc) nor a verdict (.verdict.json)")
        found = sorted(path.parent.glob(f"{path.stem}.*.verdict.json")) \
            if path.suffix == ".nc" else [path]
        files += found
        bare += [] if found else [path]
    if not files:
        raise UsageError(f"no recorded verdicts for {', '.join(map(str, paths))}; run "
                         "`probelab check` first")
    return files, bare


def recheck(path: Path) -> Rechecked:
    try:
        recorded = bounded.loads(bounded.read_regular(path, bounded.MAX_VERDICT_BYTES))
        hypothesis = lab_root() / str(recorded["hypothesis"]["path"])
        data = lab_root() / str(recorded["dataset"]["path"])
    except ValueError as exc:  # unreadable, not JSON, nested too deep
        raise UsageError(f"cannot read verdict {path}: {exc}") from exc
    except (KeyError, TypeError) as exc:
        raise UsageError(f"{path} is not a probelab verdict (no {exc})") from exc
    try:
        fresh = check(hypothesis, data)
    except LabError as exc:
        return Rechecked(path, None, [f"it cannot be re-checked from its sealed file and "
                                      f"dataset ({exc}); what it records is not shown"])
    if json.loads(render_json(fresh)) == recorded:
        return Rechecked(path, fresh)
    return Rechecked(path, fresh, [f"{shown(path)} says {recorded.get('verdict')}, but "
                                   "re-checked from its sealed file and dataset it is "
                                   f"{fresh['verdict']} (shown: the re-check); the file is "
                                   "forged or stale"])


def _count(score: dict[str, Any]) -> str:
    return f"{score['matches']:,} / {score['cells']:,}"


def _mismatch_table(rows: list[dict[str, Any]]) -> list[str]:
    keys = [k for k in rows[0] if k not in ("predicted", "observed")] + ["predicted", "observed"]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for row in rows:
        cells = [f"{row[k]:#x}" if isinstance(row[k], int) and k in ("x", "y", "selector")
                 else str(row[k]) for k in keys]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render(doc: Verdict, warnings: list[str] | None = None) -> str:
    h, d = doc["hypothesis"], doc["dataset"]
    out = [f"### {h['probe']} · `{h['id']}` — **{verdict_words(doc)}**", ""]
    out += [f"**⚠ {warning}**" for warning in warnings or []] + ([""] if warnings else [])
    out += ["> " + line for line in h["claim"].splitlines()] + [""]
    for reason in doc.get("reasons", []):
        out.append(f"- ⚠ {reason}")
    if changed := h.get("code_changed_since_seal"):
        out.append(f"- ⚠ the probe's code changed between the seal and the measurement, in "
                   f"{len(changed)} files ({', '.join(f'`{c}`' for c in changed[:6])}"
                   f"{', ...' if len(changed) > 6 else ''}): judge whether the decode was "
                   "fitted to the data")
    kernels = doc.get("kernels", {})
    if kernels:
        scorings = list(next(iter(kernels.values()))["scores"])
        out += ["", "| kernel | in claim | " + " | ".join(scorings) + " | result |",
                "|---|---|" + "---|" * len(scorings) + "---|"]
        for name, k in kernels.items():
            result = k["status"] + (f" ({k['via']})" if k["via"] else "")
            if not k["in_claim"]:  # scored for information; the verdict ignores it
                result = f"not claimed (would be {result})"
            cells = [_count(k["scores"][s]) for s in scorings]
            out.append(f"| `{name}` | {'yes' if k['in_claim'] else 'no'} | "
                       + " | ".join(cells) + f" | {result} |")
        for name, k in kernels.items():
            literal = k["scores"]["literal"]
            if literal["first_mismatches"]:
                out += ["", f"First literal mismatches, `{name}`:", ""]
                out += _mismatch_table(literal["first_mismatches"])
    out += ["", f"Dataset `{d['path']}`: {d['device']} ({d['target']}), commit "
            f"`{(d.get('git_head') or '?')[:12]}`, {d['utc']}"
            + (", **simulated**" if d["simulated"] else "") + ".",
            f"Seal: ledger `{h.get('ledger_hash', '?')[:16]}`, commit "
            f"`{(h.get('seal_commit') or '?')[:12]}`, sealed {h.get('sealed_at', '?')}.", ""]
    return "\n".join(out)
