"""The fleet on a real local Ray cluster: several worker nodes (raylets of their own), each
advertising other targets, run the sim backend and a static probe. Tasks go where their
target is served; a node killed mid-task loses nothing saved and its task runs again on
another node, or is reported lost where no other serves it; a node at another commit
refuses; the datasets are those local sweeps make."""

import os
import shutil
import socket
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from toylab import TOY_PROBE, copy_probe, git, invoke, make_toylab

pytestmark = pytest.mark.slow  # a Ray cluster of five raylets, nodes killed: about 70 s
ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

from probelab import dataset, fleet  # noqa: E402
from probelab.notary.problems import from_wire  # noqa: E402
from probelab.notary.rules import Finding, Rule  # noqa: E402
from probelab.probe import catalog  # noqa: E402
from probelab.sweep import run_sweep  # noqa: E402

# a toy probe whose simulated unit naps once per node (the first launch of a task there),
# long enough to kill the node under it; the node writes its id down first
SIMULATE = ("    def simulate(self, kernel: Kernel, inputs: Mapping[str, np.ndarray])"
            " -> dict[str, np.ndarray]:\n")
NAP_PROBE = TOY_PROBE.replace('id = "toy"', 'id = "nap"').replace(SIMULATE, SIMULATE + """\
        import os, time
        import ray
        marks = Path(os.environ["PROBELAB_ROOT"]) / "napping"
        me = marks / ray.get_runtime_context().get_node_id()
        if marks.is_dir() and not me.exists():
            me.write_text(str(os.getpid()))
            time.sleep(6)
""")
assert NAP_PROBE.count("napping") == 1
NODES = {  # name -> the probelab resources its raylet advertises
    "a": {"probelab:sim:sm_80": 1, "probelab:sim:sm_90": 1, "probelab:static:gfx1201": 1,
          "probelab:toolchain:clang-22": 1},
    "b": {"probelab:sim:sm_90": 1, "probelab:sim:sm_89": 1},
    "c": {"probelab:sim:sm_89": 1},
    "d": {"probelab:sim:sm_87": 1},
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A lab (toy, nap and builtin-modifiers, committed) and a Ray cluster whose workers
    run in it: a head with no probelab resources and the four nodes of NODES."""
    root = tmp_path_factory.mktemp("fleet") / "lab"
    root.mkdir()
    saved = {k: os.environ.get(k) for k in ("PROBELAB_ROOT", "PROBELAB_CACHE")}
    os.environ["PROBELAB_ROOT"] = str(root)
    os.environ["PROBELAB_CACHE"] = str(root.parent / ".cache")
    for var in ("PROBELAB_GIT_HEAD", "PROBELAB_GIT_DIRTY"):
        os.environ.pop(var, None)
    cwd = os.getcwd()
    os.chdir(root)
    make_toylab(root)
    (root / "probes" / "nap").mkdir()
    (root / "probes" / "nap" / "probe.py").write_text(NAP_PROBE)
    shutil.copy(root / "probes" / "toy" / "toy.cu", root / "probes" / "nap" / "toy.cu")
    copy_probe(root, "builtin_modifiers")
    (root / ".gitignore").write_text("/sim-data/\n__pycache__/\n/napping/\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "fleet lab")
    forget = ("probelab_probe_toy_probe", "probelab_probe_nap_probe",
              "probelab_probe_builtin_modifiers_probe")
    for name in forget:  # probe modules are cached by folder name: load this lab's copies
        sys.modules.pop(name, None)
    catalog.cache_clear()
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    nodes = {name: c.add_node(num_cpus=1, resources=res) for name, res in NODES.items()}
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False)
    yield c, nodes, root
    ray.shutdown()
    c.shutdown()
    os.chdir(cwd)
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    for name in forget:
        sys.modules.pop(name, None)
    catalog.cache_clear()


def node_of(nodes, node_id: str) -> str:
    return next(name for name, n in nodes.items() if n.node_id == node_id)


SAME = ("probe", "probe_version", "target", "backend", "device", "repeats", "simulated",
        "static", "blind_pairs", "git_head", "git_dirty", "observables", "retired", "kernels",
        "grid_sha256")  # what a fleet dataset must share with a local one (not time, host)


def same_data(a: Path, b: Path) -> bool:
    """The two datasets hold the same grid, the same variables and the same provenance but
    for when, where and by which command they were made."""
    x, y = dataset.load(a), dataset.load(b)
    px, py = dataset.stored_provenance(a), dataset.stored_provenance(b)
    return (sorted(x.data_vars) == sorted(y.data_vars) and
            all(np.array_equal(x[v].values, y[v].values) for v in x.data_vars) and
            all(px.get(k) == py.get(k) for k in SAME) and
            px.get("toolchain", {}).get("name") == py.get("toolchain", {}).get("name"))


def test_tasks_go_where_their_target_is_and_match_local_sweeps(cluster) -> None:
    _, nodes, root = cluster
    planned = fleet.plan(["toy"], ray.cluster_resources(), "sim")
    assert sorted(t.target for t in planned.tasks) == ["sm_80", "sm_87", "sm_89", "sm_90"]
    outcomes = fleet.sweep([t for t in planned.tasks if t.target in ("sm_80", "sm_90")])
    by_target = {o.task.target: o for o in outcomes}
    assert all(o.status == "saved" for o in outcomes), [o.detail for o in outcomes]
    assert node_of(nodes, by_target["sm_80"].node["node_id"]) == "a"  # only a serves sm_80
    assert node_of(nodes, by_target["sm_90"].node["node_id"]) in ("a", "b")
    for target, o in by_target.items():
        assert o.path.is_relative_to(root / "sim-data" / "toy" / target)
        local = run_sweep("toy", "sim", target=target, repeats=3,
                          out_root=root.parent / "local")
        assert same_data(o.path, local.path)
        prov = dataset.stored_provenance(o.path)
        assert prov["git_head"] == git(root, "rev-parse", "HEAD") and prov["simulated"]


def test_a_static_probe_runs_on_the_node_with_the_toolchain(cluster) -> None:
    from probelab.vendors.amd import toolchain as amdgpu

    try:
        amdgpu.find_clang()
    except Exception as exc:  # any missing toolchain: the test cannot run
        pytest.skip(f"no AMDGPU clang: {exc}")
    _, nodes, root = cluster
    planned = fleet.plan(["builtin-modifiers"], ray.cluster_resources(), patterns=["gfx1201"])
    (o,) = fleet.sweep(planned.tasks)
    assert o.status == "saved" and node_of(nodes, o.node["node_id"]) == "a", o.detail
    assert o.path.is_relative_to(root / "data" / "builtin-modifiers" / "gfx1201")
    pins = (root / "data" / "MANIFEST.jsonl").read_text()
    assert o.path.name in pins  # measured on a compiler: pinned in the driver's archive
    local = run_sweep("builtin-modifiers", target="gfx1201", out_root=root.parent / "local")
    assert same_data(o.path, local.path)
    said = invoke("fleet", "sweep", "builtin-modifiers", "--targets", "gfx1201", "--no-check")
    assert said.exit_code == 0, said.stderr  # the command line says what the archive gained
    assert said.stdout.splitlines()[-1].startswith(
        "added to the archive: 1 dataset in data/builtin-modifiers/gfx1201/, pinned")


def test_a_pair_no_node_serves_is_reported_and_nothing_runs(cluster) -> None:
    planned = fleet.plan(["toy"], ray.cluster_resources(), "sim", patterns=["sm_70"])
    assert planned.tasks == [] and "toy: no node serves it" in planned.unserved[0]
    result = invoke("fleet", "sweep", "toy", "--backend", "sim", "--targets", "sm_70")
    assert result.exit_code == 4 and "no node serves it" in result.stderr


def test_the_command_line_saves_says_and_prints_json(cluster) -> None:
    import json

    _, _, root = cluster
    result = invoke("fleet", "sweep", "toy", "--backend", "sim", "--targets", "sm_80",
                    "--json", "--no-check")
    assert result.exit_code == 0, result.stderr
    (task,) = json.loads(result.stdout)["tasks"]
    assert task["status"] == "saved" and Path(task["path"]).is_relative_to(root / "sim-data")
    checked = invoke("fleet", "sweep", "toy", "--backend", "sim", "--targets", "sm_80", "--json")
    assert checked.exit_code == 1 and json.loads(checked.stdout)["tasks"][0]["verdicts"] == {}
    said = invoke("fleet", "sweep", "toy", "--backend", "sim", "--targets", "sm_80")
    assert said.exit_code == 1  # simulated data: never evidence, as `sweep --check` says
    assert "fleet: toy@sm_80: saved" in said.stderr and "SIMULATED" in said.stderr


def test_a_node_at_another_commit_refuses(cluster) -> None:
    task = fleet.Task("toy", "sm_80", "sim")
    (o,) = fleet.sweep([task], commit="0" * 40)
    assert o.status == "failed" and "not the driver's" in o.detail and o.path is None
    assert o.code == 3


def test_status_names_each_node_and_what_it_could_run(cluster) -> None:
    result = invoke("fleet", "status", "--json")
    assert result.exit_code == 0, result.stderr
    import json

    rows = json.loads(result.stdout)
    offers = sorted(o for r in rows if r["alive"] for o in r["offers"])
    assert offers.count("sim:sm_90") == 2 and "static:gfx1201" in offers
    row = next(r for r in rows if "static:gfx1201" in r["offers"])
    assert "builtin-modifiers" in row["could_run"]["static:gfx1201"]
    assert "toy" in row["could_run"]["sim:sm_80"] and row["toolchains"] == ["clang-22"]


def _kill_the_napper(c, nodes, root: Path) -> str:
    """Wait for a node to start napping on a task, then kill it: its name."""
    marks = root / "napping"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if found := list(marks.iterdir()):
            name = node_of(nodes, found[0].name)
            c.remove_node(nodes[name], allow_graceful=False)
            return name
        time.sleep(0.1)
    raise AssertionError("no node started the task")


def test_a_node_killed_mid_task_is_replaced_by_another(cluster) -> None:
    """b and c both serve sm_89: kill whichever runs the task; Ray runs it again on the
    other, which saves it; nothing half-written is left."""
    c, nodes, root = cluster
    (root / "napping").mkdir(exist_ok=True)
    outcomes: list = []
    run = threading.Thread(target=lambda: outcomes.extend(
        fleet.sweep([fleet.Task("nap", "sm_89", "sim")])))
    run.start()
    killed = _kill_the_napper(c, nodes, root)
    run.join(timeout=300)
    (o,) = outcomes
    assert o.status == "saved", o.detail
    assert node_of(nodes, o.node["node_id"]) == ({"b", "c"} - {killed}).pop()
    assert len(list((root / "sim-data" / "nap" / "sm_89").glob("*.nc"))) == 1
    assert same_data(o.path, run_sweep("nap", "sim", target="sm_89", repeats=3,
                                       out_root=root.parent / "local").path)


def _napping(root: Path, target: str) -> tuple[threading.Thread, list]:
    """A fresh napping mark folder, and a nap task on `target` sweeping in the background:
    the thread and the list its outcomes arrive in."""
    shutil.rmtree(root / "napping", ignore_errors=True)
    (root / "napping").mkdir()
    outcomes: list = []
    run = threading.Thread(target=lambda: outcomes.extend(
        fleet.sweep([fleet.Task("nap", target, "sim")])))
    run.start()
    return run, outcomes


def test_a_task_whose_only_node_dies_is_reported_lost(cluster) -> None:
    c, nodes, root = cluster
    run, outcomes = _napping(root, "sm_87")
    assert _kill_the_napper(c, nodes, root) == "d"
    run.join(timeout=300)
    (o,) = outcomes
    assert o.status == "lost" and o.path is None and o.code == 4, o.detail
    assert "no node offers probelab:sim:sm_87" in o.detail
    assert not (root / "sim-data" / "nap" / "sm_87").exists()


def test_the_driver_keeps_only_what_is_the_tasks_own_dataset(cluster, monkeypatch) -> None:
    """A reply naming another place, holding another dataset, bytes edited in transit, a
    dataset of another commit or of another backend is not saved (store reads the arrived
    file's own provenance and content hash); nothing is left behind."""
    import h5py

    from probelab.errors import IntegrityError

    _, _, root = cluster
    commit = git(root, "rev-parse", "HEAD")
    local = run_sweep("toy", "sim", target="sm_80", repeats=2, out_root=root.parent / "x")
    reply = {"node": {"node_id": "n1", "host": "node-1"},
             "relpath": f"toy/sm_80/{local.path.name}", "bytes": local.path.read_bytes(),
             "provenance": local.provenance}
    task = fleet.Task("toy", "sm_80", "sim")
    before = sorted((root / "sim-data").rglob("*.nc"))

    def refused(match: str, changed: dict, on: fleet.Task = task) -> None:
        with pytest.raises(IntegrityError, match=match):
            fleet.store(on, reply | changed, commit)

    for relpath in ("toy/sm_80/../../../x.nc", "toy/sm_90/a.nc", "nap/sm_80/a.nc", "a.nc"):
        refused("not a dataset of the task", {"relpath": relpath})
    nap = run_sweep("nap", "sim", target="sm_80", repeats=2, out_root=root.parent / "x")
    refused("holding nap@sm_80, not a dataset of the task", {"bytes": nap.path.read_bytes()})
    edited = root.parent / "edited.nc"
    shutil.copy(local.path, edited)
    with h5py.File(edited, "r+") as handle:
        handle["value"][0, 0, 0] = handle["value"][0, 0, 0] + 1
    refused("edited in transit", {"bytes": edited.read_bytes()})
    time.sleep(1.1)  # another sweep of the same task: another time, so another content hash
    again = run_sweep("toy", "sim", target="sm_80", repeats=2, out_root=root.parent / "y")
    refused("content hashes differ", {"bytes": again.path.read_bytes()})
    monkeypatch.setenv("PROBELAB_GIT_HEAD", "1" * 40)
    monkeypatch.setenv("PROBELAB_GIT_DIRTY", "0")
    elsewhere = run_sweep("toy", "sim", target="sm_80", repeats=2, out_root=root.parent / "z")
    monkeypatch.delenv("PROBELAB_GIT_HEAD")
    refused("not at the driver's commit", {"bytes": elsewhere.path.read_bytes(),
                                           "provenance": elsewhere.provenance,
                                           "relpath": f"toy/sm_80/{elsewhere.path.name}"})
    refused("for a cuda task", {}, fleet.Task("toy", "sm_80", "cuda"))  # simulated as measured
    assert sorted((root / "sim-data").rglob("*.nc")) == before
    assert fleet.store(task, reply, commit).read_bytes() == local.path.read_bytes()


def test_a_node_says_what_it_serves(cluster) -> None:
    """`fleet resources` on this machine: the sim targets asked for, every static target of
    the default toolchain (where one is found), its toolchains by name; no GPU here."""
    import json

    result = invoke("fleet", "resources", "--sim", "sm_90", "--sim", "gfx1201")
    assert result.exit_code == 0, result.stderr
    offered = json.loads(result.stdout)
    assert {"probelab:sim:sm_90", "probelab:sim:gfx1201"} <= set(offered)
    assert all(fleet.parse_resource(r) or r.startswith("probelab:toolchain:") for r in offered)
    from probelab.vendors.amd import toolchain as amdgpu

    try:
        default = amdgpu.find_clang()
    except Exception:  # no AMDGPU toolchain: no static targets either
        assert not any(r.startswith("probelab:static:") for r in offered)
        return
    assert f"probelab:toolchain:{default.name}" in offered
    static = {r.split(":")[2] for r in offered if r.startswith("probelab:static:")}
    assert static and static <= amdgpu.supported_targets(default)


def test_a_killed_worker_process_is_replaced(cluster) -> None:
    """Kill the worker process running a task (not its node): Ray runs the task again."""
    import signal

    _, nodes, root = cluster
    run, outcomes = _napping(root, "sm_80")
    deadline = time.monotonic() + 120
    while not (marks := list((root / "napping").iterdir())) or not marks[0].read_text():
        assert time.monotonic() < deadline, "no node started the task"
        time.sleep(0.1)
    os.kill(int(marks[0].read_text()), signal.SIGKILL)
    run.join(timeout=300)
    (o,) = outcomes
    assert o.status == "saved" and node_of(nodes, o.node["node_id"]) == "a", o.detail


def test_fleet_verify_gives_the_local_result_and_takes_only_the_drivers_lab(cluster) -> None:
    """The archive's probes checked on the nodes give exactly what a local verify gives;
    a node's result that read another ledger, or judged other bytes, is not taken for it."""
    from toylab import ToyLab

    from probelab import fleet_verify, prereg
    from probelab.errors import IntegrityError
    from probelab.verify import verify_archive
    from probelab.verify_unit import Unit

    _, _, root = cluster
    lab = ToyLab(root)
    prereg.seal(lab.write_hyp("sum", "a + b"))
    for hours in (1, 2):  # distinct measurements (distinct contents), after the seal
        when = datetime.now(UTC) + timedelta(hours=hours)
        lab.as_measured(lab.sim_dataset(), utc=when.isoformat(timespec="seconds"))
    lab.git("add", "-A")
    lab.git("commit", "-q", "-m", "measurements")
    local = verify_archive(jobs=1)
    assert not local["problems"] and len(local["checks"]) >= 2, local["problems"]
    assert {row["verdict"] for row in local["checks"]} == {"CONFIRMED"}
    assert verify_archive(runner=fleet_verify.runner()) == local
    result = invoke("fleet", "verify", "--address", ray.get_runtime_context().gcs_address)
    assert result.exit_code == 0 and "all intact" in result.stdout, result.stderr
    name = local["checks"][0]["dataset"]
    reply = fleet_verify.check_unit(Unit("toy", (name,), ()), lab.head())
    mine = fleet_verify._records()
    assert fleet_verify._vouched(Unit("toy", (name,), ()), reply, mine)[0]["datasets"][name][
        "problems"] == []
    other = reply | {"records": mine | {"LEDGER.jsonl": "0" * 64}}
    with pytest.raises(IntegrityError, match=r"another LEDGER\.jsonl"):
        fleet_verify._vouched(Unit("toy", (name,), ()), other, mine)
    reply["unit"]["datasets"][name]["file_sha256"] = "1" * 64
    taken, _ = fleet_verify._vouched(Unit("toy", (name,), ()), reply, mine)
    (problem,) = map(from_wire, taken["datasets"][name]["problems"])
    assert problem.at == name
    assert problem.findings == (Finding(Rule.OTHER_BYTES, socket.gethostname()),)


def test_one_malformed_reply_fails_its_task_only(cluster, monkeypatch) -> None:
    """A node answers one task of a sweep with its dataset named `..nc` (a hidden file): that
    task fails, said in one line, with nothing of it written; the other task is saved, and
    the sweep exits with the failed task's code."""
    _, _, root = cluster

    def forging(task, commit, repeats, command):  # runs on the node: pickled by value
        from probelab import fleet as on_node

        reply = on_node.run_task(task, commit, repeats, command)
        if task.target == "sm_90":
            reply["relpath"] = f"{task.probe}/{task.target}/..nc"
        return reply

    monkeypatch.setattr(fleet, "run_task", forging)
    before = sorted((root / "sim-data").rglob("*"))
    result = invoke("fleet", "sweep", "toy", "--backend", "sim", "--targets", "sm_80",
                    "--targets", "sm_90", "--no-check")
    assert result.exit_code == 3, result.stderr
    (failed,) = [line for line in result.stderr.splitlines() if "toy@sm_90" in line
                 and "submitted" not in line]
    assert failed.startswith("fleet: toy@sm_90: failed: malformed reply: it names "
                             "'toy/sm_90/..nc'")
    assert "fleet: toy@sm_80: saved" in result.stderr
    new = sorted(set((root / "sim-data").rglob("*")) - set(before))
    assert [p.relative_to(root / "sim-data").parent.as_posix() for p in new
            if p.is_file()] == ["toy/sm_80"]
    assert not [p for p in (root / "sim-data").rglob(".*")]


def test_status_joins_the_cluster_from_a_process_of_its_own(cluster) -> None:
    """A fresh driver process joins within its bound (the join runs in a thread of its own)."""
    import json
    import subprocess

    c, _, _ = cluster
    done = subprocess.run([sys.executable, "-m", "probelab", "fleet", "status", "--json",
                           "--address", c.address], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr

    def by_node(rows: list[dict]) -> list[dict]:
        return sorted(rows, key=lambda row: row["node_id"])

    assert by_node(json.loads(done.stdout)) == by_node(fleet.status())  # this driver's view
    assert any("sim:sm_80" in row["offers"] for row in fleet.status() if row["alive"])
