"""Verdicts as Markdown, ready to paste into a review."""

from typing import Any

from probelab.check import verdict_words


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


def render(doc: dict[str, Any]) -> str:
    h, d = doc["hypothesis"], doc["dataset"]
    out = [f"### {h['probe']} · `{h['id']}` — **{verdict_words(doc)}**", ""]
    out += ["> " + line for line in h["claim"].splitlines()] + [""]
    for reason in doc.get("reasons", []):
        out.append(f"- ⚠ {reason}")
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
