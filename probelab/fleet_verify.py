"""`probelab fleet verify`: the archive's units (probelab.verify_unit) checked on the nodes of
a Ray cluster, for an archive that outgrows one machine; the result is the local one.

Each unit (a probe's datasets and sealed files) is one task, run by any node on its own
checkout of the lab: that checkout must be at the driver's commit and clean, and hold the
same ledger, manifest and retirements (their bytes' sha256 come back and are compared), and
every dataset a node judged must be the driver's file byte for byte (each dataset's sha256
comes back too): a node that checked other data is never taken for the archive. What spans
units (flips, toolchains, stray verdicts) is judged on the driver, as a local verify does.
Nothing is recorded on nodes: `--write` is for a local verify.
"""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from probelab import bounded
from probelab.errors import IntegrityError, LabError, Unavailable, UsageError
from probelab.notary.problems import Malformed, at, from_wire
from probelab.notary.rules import Finding, Outcome, Rule
from probelab.verify_unit import Unit

RETRIES = 3  # resubmissions of a unit whose worker or node died
POLL_S = 0.5


def _records() -> dict[str, str]:
    """sha256 of the files every unit's result depends on besides the datasets."""
    from probelab import manifest, retirement
    from probelab.paths import ledger_path

    return {str(p.name): hashlib.sha256(bounded.read_regular(p, bounded.MAX_CHAIN_BYTES))
            .hexdigest() if p.is_file() else ""
            for p in (ledger_path(), manifest.manifest_path(), retirement.retired_path())}


def check_unit(unit: Unit, commit: str) -> dict[str, Any]:
    """On a node: the unit checked against this node's checkout (which must be the driver's
    commit, clean), with the sha256 of the records it read."""
    from probelab import gitinfo, manifest
    from probelab.prereg import Record
    from probelab.verify_unit import run_unit

    node = {"host": socket.gethostname()}
    try:
        import ray

        # get_runtime_context() joins a cluster when none is joined (Ray's auto-init): off
        # a node (a test, a local call) that would start one, or hang on a dead one's address
        if ray.is_initialized():
            node["node_id"] = ray.get_runtime_context().get_node_id()
    except ImportError:
        pass
    head, dirty = gitinfo.head()
    if head != commit or dirty:
        where = "has uncommitted changes" if head == commit else f"is at {head}"
        return {"node": node, "error": f"this node's checkout {where}, not the driver's "
                f"commit {commit}, clean"}
    try:
        record = Record.read()
        try:
            pins = manifest.read()
        except IntegrityError:
            pins = None  # each dataset says so, as locally
        return {"node": node, "records": _records(),
                "unit": run_unit(unit, record, pins, False)}
    except LabError as exc:
        return {"node": node, "error": f"{type(exc).__name__}: {exc}"}


def runner(retries: int = RETRIES) -> Callable[..., list[dict[str, Any]]]:
    """A `verify_archive` runner that sends each unit to the connected Ray cluster."""
    def run(units: list[Unit], record: Any, pins: list[dict[str, Any]] | None, write: bool,
            step: Callable[[str], None]) -> list[dict[str, Any]]:
        import ray

        from probelab import gitinfo

        if write:
            raise UsageError("fleet verify records no verdict (nodes would write them on "
                             "their disks): run `probelab verify --write` here")
        commit, dirty = gitinfo.head()
        if commit is None or dirty:
            raise UsageError("the driver's checkout is not a clean commit: nodes could not "
                             "prove they check the same lab")
        mine = _records()
        remote = ray.remote(num_cpus=1, max_retries=retries)(check_unit)
        pending = {remote.remote(unit, commit): unit for unit in units}
        results: dict[Unit, dict[str, Any]] = {}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_S)
            for ref in done:
                unit = pending.pop(ref)
                results[unit], host = _taken(unit, ref, mine)
                step(f"verify: {len(results)}/{len(units)} probes ({unit.probe}, on {host})")
        return [results[unit] for unit in units]

    return run


def _taken(unit: Unit, ref: Any, mine: dict[str, str]) -> tuple[dict[str, Any], str]:
    """A node's result for `unit`, once it is shown to be of the driver's lab, and the node's
    host."""
    import ray

    try:
        reply = ray.get(ref)
    except ray.exceptions.RayError as exc:
        raise Unavailable(f"{unit.probe}: no node could check it, every attempt's worker "
                          f"or node died ({type(exc).__name__})") from None
    return _vouched(unit, reply, mine)


def _vouched(unit: Unit, reply: dict[str, Any], mine: dict[str, str]
             ) -> tuple[dict[str, Any], str]:
    """`reply`'s unit result, refused unless the node read the driver's records, and with a
    problem for every dataset whose bytes it judged are not the driver's file."""
    from probelab import manifest
    from probelab.paths import lab_root

    if why := reply_problem(unit, reply):
        raise IntegrityError(f"{unit.probe}: a malformed reply ({why}); nothing of it taken")
    host = reply["node"].get("host", "?")
    if "error" in reply:
        raise IntegrityError(f"{unit.probe}: node {host} refused: {reply['error']}")
    if reply["records"] != mine:
        differ = sorted(k for k in mine if reply["records"].get(k) != mine[k])
        raise IntegrityError(f"{unit.probe}: node {host} reads another {', '.join(differ)} "
                             "than the driver's")
    out = reply["unit"]
    for name, said in out["datasets"].items():
        path: Path = lab_root() / name
        ours = manifest.file_sha256(path) if path.is_file() else None
        if said["file_sha256"] is not None and said["file_sha256"] != ours:
            said["problems"].append(at(name, Finding(Rule.OTHER_BYTES, str(host))).wire())
    return out, host


_LISTS = ("problems", "notes", "checks", "counted", "accounted")  # what a dataset's result holds


def reply_problem(unit: Unit, reply: object) -> str | None:
    """What is wrong with the form of a node's reply for `unit` (None: nothing), checked
    before any of it is used: a node's refusal, or the records it read and a result for
    exactly the unit's datasets, each in the form `verify_unit.run_unit` gives: every problem
    a finding's wire form under a rule this lab knows (probelab.notary.problems), every check
    an outcome."""
    if not isinstance(reply, dict) or not isinstance(reply.get("node"), dict) or \
            not all(isinstance(v, str) for v in reply["node"].values()):
        return "not a reply with its node"
    if "error" in reply:
        return None if isinstance(reply["error"], str) else "an error that is no text"
    records, out = reply.get("records"), reply.get("unit")
    if not isinstance(records, dict) or not all(isinstance(v, str) for v in records.values()):
        return "no records' hashes"
    if not isinstance(out, dict) or not isinstance(out.get("seals"), list) or \
            not isinstance(out.get("datasets"), dict):
        return "no unit result"
    if set(out["datasets"]) != set(unit.datasets):
        return "a result for other datasets than the unit's"
    if not all(isinstance(row, dict) and isinstance(row.get("findings"), list)
               for row in out["seals"]):
        return "a seal row without its findings"
    for said in out["datasets"].values():
        if not isinstance(said, dict) or not all(isinstance(said.get(k), list) for k in _LISTS) \
                or not all(isinstance(t, str) for k in ("notes", "accounted") for t in said[k]) \
                or not (said.get("file_sha256") is None or isinstance(said["file_sha256"], str)):
            return "a dataset's result of another form"
        if not all(isinstance(row, dict) and isinstance(row.get("outcome"), str)
                   and row["outcome"] in set(Outcome) for row in said["checks"]):
            return "a check without a known outcome"
    try:
        for wire in [w for row in out["seals"] for w in row["findings"]] + \
                [w for said in out["datasets"].values() for w in said["problems"]]:
            from_wire(wire)
    except Malformed as exc:
        return f"a problem of another form: {exc}"
    return None
