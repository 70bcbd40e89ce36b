"""A fleet: the ordinary sweep, run on whichever machine of a Ray cluster can serve it.

Each node says what it can run as Ray custom resources (`node_resources`, printed by
`probelab fleet resources` for `ray start --resources`): `probelab:<backend>:<target>`,
where backend is cuda, hip, sim or static (a static probe on a local toolchain). The driver
plans one task per (probe, target) that some node advertises, and each task runs
`run_sweep` on its node, unchanged: the same evidence gate, repeats, guards. The node
returns the dataset's bytes; the driver saves them into its own archive (atomically, never
over a file; a measured one through probelab.merge, as `probelab import` lands a device
run's), and runs the checks.

Ray does the scheduling and the retries: a task whose node dies is resubmitted to another
node that has the resource. A pair no node advertises is reported before anything runs; a
task whose resource vanished from the cluster with its last node is reported lost. The
order proof still holds: the driver sends its commit, and a node whose checkout is at
another commit, or dirty, refuses (its dataset would name code the driver does not have).
"""

from __future__ import annotations

import contextlib
import fnmatch
import math
import os
import reprlib
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probelab import vendors
from probelab.errors import Exit, IntegrityError, LabError, Unavailable, UsageError
from probelab.limits import FLEET_CONNECT_S

PREFIX = "probelab"
RETRIES = 3  # resubmissions of a task whose worker or node died
POLL_S = 0.5
WAIT_S = 24 * 3600.0  # a task with no result this long after submission is reported lost
# what a failed task's reply may ask the driver to exit with: a lab error's code
FAILURE_CODES = frozenset({Exit.USAGE, Exit.INTEGRITY, Exit.NO_DEVICE})
_said = reprlib.Repr()  # a reply's value in a message: whole enough to read, never huge
_said.maxstring = _said.maxother = 160


def resource(backend: str, target: str) -> str:
    """The custom resource a node advertises for (backend, target), e.g. probelab:hip:gfx942."""
    return f"{PREFIX}:{backend}:{target}"


def parse_resource(name: str) -> tuple[str, str] | None:
    """(backend, target) of a probelab resource name, None for any other resource."""
    parts = name.split(":")
    if len(parts) == 3 and parts[0] == PREFIX and parts[1] in vendors.fleet_backends():
        return parts[1], parts[2]
    return None


def node_resources(sim_targets: Iterable[str] = ()) -> dict[str, float]:
    """What this machine can serve: its GPU's target per GPU backend that opens one; every
    AMD target that the toolchain a static sweep here uses (the default one) builds, for
    the static probes; the sim targets asked for; and, for `fleet status`, the names of its
    toolchains."""
    from probelab import backends
    from probelab.probe import catalog, info

    out: dict[str, float] = {}
    for name in vendors.device_backends():
        with contextlib.suppress(LabError):  # no such device here: `probelab doctor` says why
            out[resource(name, backends.module(name).make(None, None).device().target)] = 1
    static = {t for p in catalog().probes.values() if info(p).static
              for t in p.targets}
    for vendor in vendors.VENDORS.values():  # its toolchains, and targets they build here
        if (machine := vendor.machine_module()) is not None:
            toolchains, built = machine.resources(static)
            out |= {f"{PREFIX}:toolchain:{name}": 1 for name in toolchains}
            out |= {resource(vendors.STATIC, t): 1 for t in built}
    out |= {resource(vendors.SIM, t): 1 for t in sim_targets}
    return out


@dataclass(frozen=True)
class Task:
    probe: str
    target: str
    backend: str  # cuda, hip, sim or static

    @property
    def name(self) -> str:
        return f"{self.probe}@{self.target}"

    @property
    def resource(self) -> str:
        return resource(self.backend, self.target)


@dataclass
class Plan:
    tasks: list[Task] = field(default_factory=list)
    unserved: list[str] = field(default_factory=list)  # why a probe asked for runs nowhere


def plan(probe_ids: Iterable[str], offered: Iterable[str], backend: str | None = None,
         patterns: Iterable[str] = ()) -> Plan:
    """One task per (probe, target) that an offered resource serves: a static probe on
    `static`, any other on `backend` (cuda, hip or sim; default: the measuring backend of
    the target's vendor), targets limited to `patterns` where given."""
    devices = vendors.device_backends()
    if backend not in (None, *devices, vendors.SIM):
        raise UsageError(f"--backend {backend}: the fleet runs {', '.join(devices)} or "
                         f"{vendors.SIM} (static probes run on a toolchain by themselves)")
    from probelab.probe import get_probe, info, supports

    served = [parsed for name in offered if (parsed := parse_resource(name))]
    patterns = list(patterns)
    out = Plan()
    for probe_id in dict.fromkeys(probe_ids):  # a probe named twice is one set of tasks
        probe = get_probe(probe_id)
        static = info(probe).static  # on a toolchain, whatever `backend` says
        want = vendors.STATIC if static else backend
        found = sorted({t for b, t in served if supports(probe, t)
                        and b == (want or vendors.measuring(t))})
        chosen = [t for t in found if not patterns
                  or any(fnmatch.fnmatchcase(t, p) for p in patterns)]
        out.tasks += [Task(probe_id, t, want or vendors.measuring(t) or "") for t in chosen]
        how = f"backend {want or '/'.join(devices)}"
        if not chosen:
            out.unserved.append(f"{probe_id}: no node serves it (targets "
                                f"{', '.join(probe.targets)}"
                                + (f", limited to {', '.join(patterns)}" if patterns else "")
                                + f", {how})")
        out.unserved += [f"{probe_id}: no node serves {p} ({how})" for p in patterns
                         if chosen and not any(fnmatch.fnmatchcase(t, p) for t in chosen)]
    return out


# ---- on the node ----

def run_task(task: Task, commit: str, repeats: int | None,
             command: list[str]) -> dict[str, Any]:
    """The ordinary sweep of one task, on this node, from this node's checkout at the
    driver's commit: the dataset's bytes, where it goes in the archive, and its provenance.
    A lab error (refused commit, failed evidence, a guard hit) comes back as `error`."""
    import ray

    from probelab import gitinfo
    from probelab.sweep import run_sweep

    node = {"node_id": ray.get_runtime_context().get_node_id(), "host": socket.gethostname()}
    head, dirty = gitinfo.head()
    if head != commit or dirty:
        where = ("has uncommitted changes" if head == commit else
                 f"is at {head}, not the driver's {commit}")
        return {"node": node, "code": int(Exit.INTEGRITY), "error": f"this node's checkout "
                f"{where}: it would measure with other code than the driver records (check "
                "out the driver's commit, clean)"}
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="probelab-fleet-") as tmp:
            result = run_sweep(task.probe, None if task.backend == "static" else task.backend,
                               target=task.target, out_root=Path(tmp),
                               repeats=None if task.backend == "static" else repeats,
                               command=command)
            return {"node": node, "relpath": result.path.relative_to(tmp).as_posix(),
                    "bytes": result.path.read_bytes(), "provenance": result.provenance,
                    "seconds": time.monotonic() - started}
    except LabError as exc:  # the worker process ends after every task (max_calls=1), so a
        # kernel that timed out cannot share a process with the next task
        return {"node": node, "code": int(exc.code), "error": f"{type(exc).__name__}: {exc}",
                "seconds": time.monotonic() - started}


# ---- on the driver ----

def connect(address: str, timeout_s: float = FLEET_CONNECT_S) -> None:
    """Join the Ray cluster at `address` (auto, HOST:PORT or ray://HOST:PORT) as its driver,
    or raise Unavailable within `timeout_s`. ray.init retries an address that does not
    answer for many minutes, inside Ray's C++ core where no signal reaches it: so a
    HOST:PORT is first tried with a plain TCP connect (nothing listening is said at once),
    and ray.init runs in a daemon thread, given up on (it ends with the process) when it
    has not joined in time."""
    hint = ("start one there (`ray start --head --port PORT`), or give --address a running "
            "head's HOST:PORT")
    deadline = time.monotonic() + timeout_s
    if (where := _host_port(address)) is not None:
        try:
            socket.create_connection(where, timeout=timeout_s).close()
        except OSError as exc:
            raise Unavailable(f"no Ray cluster at {address}: {exc.strerror or exc} "
                              f"({hint})") from None
    import ray

    failed: list[Exception] = []

    def join() -> None:
        try:
            ray.init(address=address, log_to_driver=False, logging_level="ERROR")
        except Exception as exc:  # raised again by the waiting thread
            failed.append(exc)

    joining = threading.Thread(target=join, name="probelab-fleet-connect", daemon=True)
    # Ray's core logs each failed attempt on stderr; one given up on may still log a line
    # after this (its next comes seconds later, and the command ends at once)
    with _quiet_stderr():
        joining.start()
        joining.join(max(0.0, deadline - time.monotonic()))
    if joining.is_alive():
        raise Unavailable(f"no Ray cluster answered at {address} within {timeout_s:g} s "
                          f"(is it a Ray head's port? {hint}; --connect-timeout to wait "
                          "longer)")
    if failed:
        exc = failed[0]
        if not isinstance(exc, ConnectionError | RuntimeError | ValueError | ImportError):
            raise exc  # not how ray.init refuses an address: a bug, the CLI's internal error
        said = str(exc).strip() or type(exc).__name__
        raise Unavailable(f"no Ray cluster at {address}: {said.splitlines()[0]} ({hint})")


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of HOST:PORT or ray://HOST:PORT ([::1]:PORT for IPv6); None for auto
    (Ray looks that up) or anything else (ray.init says what is wrong with it)."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    return (host.strip("[]"), int(port)) if host and port.isdigit() else None


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 (what a C++ library writes to) pointed at /dev/null meanwhile."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@dataclass
class Outcome:
    task: Task
    status: str  # saved, failed, lost
    detail: str
    node: dict[str, str] = field(default_factory=dict)
    path: Path | None = None
    seconds: float = 0.0  # the task's own run on its node
    code: int = 0  # the exit code it calls for (a failure: its error's; lost: 4)

    def to_dict(self) -> dict[str, Any]:
        return {"probe": self.task.probe, "target": self.task.target,
                "backend": self.task.backend, "status": self.status, "detail": self.detail,
                "node": self.node, "path": str(self.path) if self.path else None,
                "seconds": round(self.seconds, 3), "code": self.code}


def reply_problem(task: Task, reply: object) -> str | None:
    """What is wrong with the form of a node's reply to `task`, or None: every field the
    driver reads, of its type and form, before any is used (a reply crosses the network
    from a node the driver does not control). A dataset's reply names
    PROBE/TARGET/TIME[-n][.TOOLCHAIN].nc of the task and holds at most the bytes a sweep
    may write; a failure's carries its lab error's exit code."""
    from probelab import dataset

    if not isinstance(reply, dict):
        return f"it is a {type(reply).__name__}, not a dict"
    node, seconds = reply.get("node"), reply.get("seconds", 0.0)
    if not (isinstance(node, dict) and all(isinstance(node.get(k), str)
                                           for k in ("host", "node_id"))
            and all(isinstance(k, str) and isinstance(v, str) for k, v in node.items())):
        return f"its node is {_said.repr(node)}, not the node's host and id"
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or \
            not math.isfinite(seconds) or seconds < 0:
        return f"its seconds are {_said.repr(seconds)}, not a duration"
    if "error" in reply:
        if not isinstance(reply["error"], str):
            return f"its error is a {type(reply['error']).__name__}, not text"
        if not isinstance(code := reply.get("code"), int) or code not in FAILURE_CODES:
            return (f"its exit code is {_said.repr(code)}, not a lab "
                    f"error's ({', '.join(map(str, sorted(FAILURE_CODES)))})")
        return None
    relpath, data, prov = reply.get("relpath"), reply.get("bytes"), reply.get("provenance")
    folder, _, name = relpath.rpartition("/") if isinstance(relpath, str) else ("", "", "")
    if folder != f"{task.probe}/{task.target}" or not dataset.DATASET_NAME.fullmatch(name):
        return (f"it names {_said.repr(relpath)}, not a dataset of the task "
                f"({task.probe}/{task.target}/TIME[-n][.TOOLCHAIN].nc)")
    if not isinstance(data, bytes) or not 0 < len(data) <= dataset.MAX_NEW_FILE_BYTES:
        return ("its bytes are " + (f"{len(data):,} bytes" if isinstance(data, bytes) else
                                    f"a {type(data).__name__}")
                + f", not a dataset's 1 to {dataset.MAX_NEW_FILE_BYTES:,}")
    if not isinstance(prov, dict):
        return f"its provenance is a {type(prov).__name__}, not a dict"
    return None


def store(task: Task, reply: dict[str, Any], commit: str) -> Path:
    """A node's dataset into the driver's archive: data/ (pinned, through `merge.land`, the
    one path by which a dataset made elsewhere joins the archive) or sim-data/ as the file's
    own provenance says, at PROBE/TARGET/NAME (a new name where that one is taken), written
    atomically and never over a file. Nothing is kept unless the reply is well formed
    (`reply_problem`) and the file is the task's own: its probe, target and backend, made
    at the driver's commit from a clean checkout, its content hash holding, and (measured)
    every check an import makes."""
    from probelab import dataset, merge, storage
    from probelab.paths import lab_root, sim_data_dir

    if problem := reply_problem(task, reply):
        raise IntegrityError(f"{task.name}: malformed reply: {problem}; nothing kept")
    with tempfile.TemporaryDirectory(prefix="probelab-fleet-") as tmp:
        arrived = Path(tmp) / "arrived.nc"
        arrived.write_bytes(reply["bytes"])
        try:
            read = dataset.read_summarised(arrived)
        except UsageError as exc:  # not a dataset this code can read: the node's fault
            raise IntegrityError(f"{task.name}: {str(exc).replace(str(arrived), 'the file sent')}"
                                 "; nothing kept") from None
        prov, content = read.prov, read.summary.content
        if problem := _not_the_tasks(task, reply, prov, content, commit):
            raise IntegrityError(f"{task.name}: {problem}; nothing kept")
        probe, target = task.probe, task.target
        named = dataset.DATASET_NAME.fullmatch(reply["relpath"].rpartition("/")[2])
        assert named is not None  # reply_problem said so
        # the node's -n numbered its own folder: here the name is numbered anew
        for n in range(1, 1000):
            free = dataset.dataset_name(named["time"], n, named["toolchain"] or "")
            try:
                if dataset.simulated(prov):  # never pinned, never under data/
                    path = sim_data_dir() / probe / target / free
                    storage.atomic_write_bytes(path, reply["bytes"], exclusive=True)
                    return path
                rel = f"data/{probe}/{target}/{free}"
                merge.land([merge.arrival(arrived, rel, prov)])
                return lab_root() / rel
            except (FileExistsError, merge.Taken):
                continue
    raise UsageError(f"{probe}/{target}: no free dataset name")


def _not_the_tasks(task: Task, reply: dict[str, Any], prov: dict[str, Any], content: str,
                   commit: str) -> str | None:
    """Why an arrived dataset is not the one the task asked for, or None."""
    from probelab import dataset

    backend = {"static": "toolchain"}.get(task.backend, task.backend)
    if (prov.get("probe"), prov.get("target")) != (task.probe, task.target):
        return (f"the node returned {reply['relpath']!r} holding "
                f"{prov.get('probe')}@{prov.get('target')}, not a dataset of the task")
    if content != prov.get(dataset.CONTENT_KEY):
        return ("the file's values and provenance do not hash to the content hash it "
                "carries (edited in transit?)")
    if content != reply["provenance"].get(dataset.CONTENT_KEY):
        return "the bytes are not the dataset the node reported (content hashes differ)"
    if (prov.get("git_head"), prov.get("git_dirty")) != (commit, False):
        return (f"it was made at {prov.get('git_head')} (dirty: {prov.get('git_dirty')}), "
                f"not at the driver's commit {commit}, clean")
    if prov.get("backend") != backend or dataset.simulated(prov) != (task.backend == "sim"):
        return (f"it says backend {prov.get('backend')!r}, simulated "
                f"{prov.get('simulated')!r}, for a {task.backend} task")
    if found := dataset.contradictions(prov):
        return "it says " + "; ".join(found)
    return None


def sweep(tasks: list[Task], *, repeats: int | None = None, commit: str | None = None,
          command: list[str] | None = None, step: Callable[[str], None] = lambda _: None,
          retries: int = RETRIES, wait_s: float = WAIT_S) -> list[Outcome]:
    """Run the tasks on the connected Ray cluster, saving each dataset as it arrives; what
    is saved stays saved whatever happens to the rest. A task with no result `wait_s`
    seconds after it was submitted is cancelled and reported lost."""
    import ray

    from probelab import gitinfo

    if repeats is not None and repeats < 2:  # refused here, not once per node
        raise UsageError("--repeats must be at least 2: repeats alternate the output poison")
    commit = commit or gitinfo.head()[0]
    if commit is None:
        raise UsageError("the driver's checkout names no commit (no git, no "
                         "PROBELAB_GIT_HEAD): a node could not prove it runs the same code")
    remote = ray.remote(max_calls=1)(run_task)  # a fresh worker process per task
    pending = {}
    for task in tasks:
        ref = remote.options(resources={task.resource: 1}, max_retries=retries,
                             num_cpus=0).remote(task, commit, repeats, command or [])
        pending[ref] = (task, time.monotonic())
        step(f"{task.name}: submitted ({task.resource})")
    outcomes = []
    while pending:
        done, _ = ray.wait(list(pending), num_returns=1, timeout=POLL_S)
        for ref in done:
            task, _ = pending.pop(ref)
            outcomes.append(_collect(task, ref, commit, step))
        offered, now = set(ray.cluster_resources()), time.monotonic()
        for ref, (task, since) in list(pending.items()):
            why = (f"no node offers {task.resource} any more (its node left the cluster)"
                   if task.resource not in offered else
                   f"no result {wait_s:g} s after it was submitted" if now - since > wait_s
                   else None)
            if why:
                ray.cancel(ref, force=True)
                del pending[ref]
                outcomes.append(Outcome(task, "lost", why, code=int(Exit.NO_DEVICE)))
                step(f"{task.name}: lost, {why}")
    return outcomes


def _collect(task: Task, ref: Any, commit: str, step: Callable[[str], None]) -> Outcome:
    import ray

    try:
        reply = ray.get(ref)
    except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
            ray.exceptions.ObjectLostError) as exc:  # its retries used up on dying workers
        step(f"{task.name}: lost ({type(exc).__name__})")
        return Outcome(task, "lost", f"{type(exc).__name__}: every attempt's worker or node "
                       "died", code=int(Exit.NO_DEVICE))
    except ray.exceptions.RayError as exc:  # the task itself crashed (not a lab error)
        step(f"{task.name}: failed ({type(exc).__name__})")
        return Outcome(task, "failed", f"{type(exc).__name__}: {exc}".splitlines()[0],
                       code=int(Exit.INTEGRITY))
    if problem := reply_problem(task, reply):  # nothing of it is used, not even its node
        step(f"{task.name}: failed: malformed reply: {problem}")
        return Outcome(task, "failed", f"malformed reply: {problem}", code=int(Exit.INTEGRITY))
    node, seconds = reply["node"], reply.get("seconds", 0.0)
    if "error" in reply:
        step(f"{task.name}: failed on {node['host']}: {reply['error']}")
        return Outcome(task, "failed", reply["error"], node, seconds=seconds,
                       code=reply["code"])
    try:
        path = store(task, reply, commit)
    except Exception as exc:  # a malformed reply is this task's failure, not the run's
        step(f"{task.name}: not saved: {exc}")
        return Outcome(task, "failed", f"not saved: {exc}", node, seconds=seconds,
                       code=int(getattr(exc, "code", Exit.INTEGRITY)))
    step(f"{task.name}: saved {path} (on {node['host']}, {seconds:.1f} s)")
    return Outcome(task, "saved", "ok", node, path, seconds)


def status() -> list[dict[str, Any]]:
    """Every node of the connected cluster: alive or not, what it offers, which probes it
    could run there."""
    import ray

    from probelab.probe import catalog, info, supports

    probes = list(catalog().probes.values())
    rows = []
    for node in ray.nodes():
        offers = sorted(p for name in node.get("Resources", {}) if (p := parse_resource(name)))
        runs = {f"{b}:{t}": sorted(p.id for p in probes if supports(p, t)
                                   and info(p).static == (b == "static"))
                for b, t in offers}
        toolchains = sorted(name.split(":", 2)[2] for name in node.get("Resources", {})
                            if name.startswith(f"{PREFIX}:toolchain:"))
        rows.append({"node_id": node["NodeID"], "address": node.get("NodeManagerAddress"),
                     "alive": bool(node.get("Alive")), "toolchains": toolchains,
                     "offers": [f"{b}:{t}" for b, t in offers], "could_run": runs})
    return rows
