"""The fleet driver without a cluster: a `fleet` command gives up joining an address that
no Ray cluster answers at within its bound (exit 4, one line), and the driver refuses a
node's reply that is not well formed with one line, writing nothing (a cluster's sweep
with one such reply is in test_fleet.py)."""

import contextlib
import math
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from quick import quick_first

from probelab import dataset, fleet
from probelab.errors import IntegrityError
from probelab.limits import FLEET_CONNECT_S
from probelab.sweep import run_sweep


def fleet_cli(*args: str, timeout: float) -> subprocess.CompletedProcess:
    """`probelab fleet ARGS` as a process of its own (one that does not end is killed
    after `timeout` seconds, failing the test)."""
    return subprocess.run([sys.executable, "-m", "probelab", "fleet", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("command", quick_first([["status"], ["sweep", "toy"], ["verify"]]),
                         ids=["status", "sweep", "verify"])
def test_an_address_nothing_listens_at_is_said_at_once(toylab, command) -> None:
    pytest.importorskip("ray")
    started = time.monotonic()
    done = fleet_cli(*command, "--address", "127.0.0.1:1", timeout=FLEET_CONNECT_S + 60)
    assert time.monotonic() - started < FLEET_CONNECT_S
    assert done.returncode == 4 and done.stdout == "", done.stderr
    (line,) = done.stderr.splitlines()
    assert "no Ray cluster at 127.0.0.1:1" in line and "ray start --head" in line


# 127.0.0.1: Ray connects to this machine's own address instead, where nothing answers;
# 127.0.0.2 (Linux): Ray takes the address as it is and meets the silent server itself
@pytest.fixture(params=["127.0.0.1", "127.0.0.2"])
def silent_address(request) -> Iterator[str]:
    """HOST:PORT on loopback where something accepts connections and never says a word."""
    try:
        server = socket.create_server((request.param, 0))
    except OSError as exc:
        pytest.skip(f"cannot listen on {request.param}: {exc}")
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):  # the server shut down
            while True:
                held.append(server.accept()[0])

    waiter = threading.Thread(target=accept, daemon=True)
    with server:
        waiter.start()
        yield f"{request.param}:{server.getsockname()[1]}"
        server.shutdown(socket.SHUT_RDWR)  # wakes accept()
        waiter.join(timeout=10)
    for conn in held:
        conn.close()


@pytest.mark.slow
def test_an_address_that_listens_but_is_no_ray_cluster_ends_within_the_bound(
        toylab, silent_address) -> None:
    pytest.importorskip("ray")
    started = time.monotonic()
    done = fleet_cli("status", "--address", silent_address, "--connect-timeout", "2",
                     timeout=120)  # unbounded, ray.init tries for about 12 minutes
    assert time.monotonic() - started < 60
    assert done.returncode == 4 and done.stdout == "", done.stderr
    (line,) = done.stderr.splitlines()  # nothing of Ray's own retries
    assert f"no Ray cluster answered at {silent_address} within 2 s" in line
    assert "--connect-timeout" in line


STAMP = "20261203T162814Z"
DROP = object()  # as a changed value: the field is left out


def changed(**fields: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda reply: {k: v for k, v in (reply | fields).items() if v is not DROP}


MALFORMED = {  # what a node's reply may be instead of a dataset's, and what is said of it
    "not a dict": (lambda reply: list(reply), "it is a list, not a dict"),
    "provenance not a dict": (changed(provenance="{}"), "its provenance is a str, not a dict"),
    "provenance missing": (changed(provenance=DROP), "its provenance is a NoneType"),
    "bytes missing": (changed(bytes=DROP), "its bytes are a NoneType, not a dataset's"),
    "bytes as text": (changed(bytes="HDF"), "its bytes are a str, not a dataset's"),
    "no bytes": (changed(bytes=b""), "its bytes are 0 bytes, not a dataset's"),
    "oversized bytes": (lambda reply: reply | {"bytes": bytes(dataset.MAX_NEW_FILE_BYTES + 1)},
                        f"its bytes are {dataset.MAX_NEW_FILE_BYTES + 1:,} bytes"),
    "relpath None": (changed(relpath=None), "it names None, not a dataset of the task"),
    "relpath missing": (changed(relpath=DROP), "it names None, not a dataset of the task"),
    "name ..nc": (changed(relpath="toy/sm_80/..nc"), "it names 'toy/sm_80/..nc'"),
    "hidden name": (changed(relpath=f"toy/sm_80/.{STAMP}.nc"), "not a dataset of the task"),
    "name with a slash": (changed(relpath=f"toy/sm_80//{STAMP}.nc"),
                          "not a dataset of the task"),
    "name ending in a slash": (changed(relpath=f"toy/sm_80/{STAMP}.nc/"),
                               "not a dataset of the task"),
    "name through .": (changed(relpath=f"toy/sm_80/./{STAMP}.nc"), "not a dataset of the task"),
    "name with a backslash": (changed(relpath=f"toy/sm_80/..\\{STAMP}.nc"),
                              "not a dataset of the task"),
    "name not TIME": (changed(relpath="toy/sm_80/a.nc"), "not a dataset of the task"),
    "non-string name": (changed(relpath=["toy", "sm_80", f"{STAMP}.nc"]),
                        "it names ['toy', 'sm_80', '20261203T162814Z.nc']"),
    "node not a dict": (changed(node="node-1"), "its node is 'node-1'"),
    "node without a host": (changed(node={"node_id": "n1"}), "not the node's host and id"),
    "seconds as text": (changed(seconds="1.5"), "its seconds are '1.5', not a duration"),
    "negative seconds": (changed(seconds=-1.0), "its seconds are -1.0, not a duration"),
    "bytes not a dataset": (changed(bytes=b"not a dataset"),
                            "the file sent is not a probelab dataset"),
}


@pytest.fixture
def node_reply(toylab) -> dict[str, Any]:
    """A node's reply to the task toy@sm_80 (sim), as run_task makes it, at the lab's
    commit, clean."""
    made = run_sweep("toy", "sim", target="sm_80", repeats=2,
                     out_root=toylab.root.parent / "node")
    return {"node": {"node_id": "n1", "host": "node-1"},
            "relpath": f"toy/sm_80/{made.path.name}", "bytes": made.path.read_bytes(),
            "provenance": made.provenance, "seconds": 1.5}


def files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if ".git" not in p.relative_to(root).parts)


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_reply_is_refused_with_one_line_and_nothing_written(
        toylab, node_reply, case) -> None:
    change, said = MALFORMED[case]
    task, before = fleet.Task("toy", "sm_80", "sim"), files(toylab.root)
    with pytest.raises(IntegrityError) as refused:
        fleet.store(task, change(node_reply), toylab.head())
    assert said in str(refused.value) and "nothing kept" in str(refused.value)
    assert len(str(refused.value).splitlines()) == 1
    assert files(toylab.root) == before


def test_a_well_formed_reply_is_kept_under_its_time_and_toolchain(toylab, node_reply) -> None:
    """The refusals above are of the fields: the same reply, well formed, is saved, under
    the driver's own numbering of the node's TIME (its -n is the node's)."""
    stamp = node_reply["relpath"].rsplit("/", 1)[1].removesuffix(".nc")
    reply = node_reply | {"relpath": f"toy/sm_80/{stamp}-7.nc"}
    first = fleet.store(fleet.Task("toy", "sm_80", "sim"), reply, toylab.head())
    second = fleet.store(fleet.Task("toy", "sm_80", "sim"), reply, toylab.head())
    assert (first.name, second.name) == (f"{stamp}.nc", f"{stamp}-2.nc")
    assert first.parent == toylab.root / "sim-data" / "toy" / "sm_80"
    assert first.read_bytes() == node_reply["bytes"]


NODE = {"node_id": "n1", "host": "node-1"}


@pytest.mark.parametrize(("reply", "said"), [
    ({"node": NODE, "code": 0, "error": "x"}, "its exit code is 0, not a lab error's"),
    ({"node": NODE, "code": 1, "error": "x"}, "its exit code is 1"),
    ({"node": NODE, "code": True, "error": "x"}, "its exit code is True"),
    ({"node": NODE, "code": "3", "error": "x"}, "its exit code is '3'"),
    ({"node": NODE, "code": 3.0, "error": "x"}, "its exit code is 3.0, not a lab error's "
                                                "(2, 3, 4)"),
    ({"node": NODE, "error": "x"}, "its exit code is None"),
    ({"node": NODE, "code": 3, "error": None}, "its error is a NoneType, not text"),
    ({"node": NODE, "code": 3, "error": "x", "seconds": math.nan}, "its seconds are nan"),
    ({"node": NODE, "code": 3, "error": "x", "seconds": True}, "its seconds are True"),
    ({"node": {"host": "h", "node_id": 1}, "code": 3, "error": "x"}, "its node is"),
    ({"code": 3, "error": "x"}, "its node is None"),
    ({"node": NODE, "code": 3, "error": "x"}, None),  # a refusal without its seconds: as old
    ({"node": NODE, "code": 4, "error": "x", "seconds": 2}, None),  # nodes send it
], ids=["code 0", "code 1", "code True", "code text", "code float", "no code", "error None",
        "seconds nan", "seconds True", "node id not text", "no node", "no seconds", "ok"])
def test_a_failure_reply_carries_a_lab_errors_code_and_text(reply, said) -> None:
    """A failed task's reply sets the run's exit code: never 0 or 1 (ok, refuted) from a
    node, never anything but a lab error's."""
    problem = fleet.reply_problem(fleet.Task("toy", "sm_80", "sim"), reply)
    assert problem is None if said is None else said in problem


def test_a_malformed_fleet_verify_reply_is_refused_with_one_line(toylab, monkeypatch) -> None:
    """A node's verify result is checked for its form before any of it is used (a reply of
    another shape was an internal error): refused with one line, nothing of it taken.
    check_unit called off a node joins no cluster (Ray's auto-init once followed a dead
    cluster's address left in /tmp/ray and hung CI for 13 minutes)."""
    import copy

    import ray

    from probelab import fleet_verify, prereg
    from probelab.verify_unit import Unit

    def no_cluster(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("check_unit off a node called ray.init")

    monkeypatch.setattr(ray, "init", no_cluster)

    prereg.seal(toylab.write_hyp("sum", "a + b"))
    data = toylab.as_measured(toylab.sim_dataset())
    toylab.git("add", "-A")
    toylab.git("commit", "-q", "-m", "measured")
    name = data.relative_to(toylab.root).as_posix()
    unit = Unit("toy", (name,), (1,))
    reply, mine = fleet_verify.check_unit(unit, toylab.head()), fleet_verify._records()
    assert fleet_verify._vouched(unit, copy.deepcopy(reply), mine)[0]["datasets"][name]

    def spoiled(change: Callable[[dict], Any]) -> dict:
        bad = copy.deepcopy(reply)
        change(bad)
        return bad

    for bad in ([], {"node": "n"}, spoiled(lambda r: r.update(error=7)),
                spoiled(lambda r: r.pop("records")), spoiled(lambda r: r.update(unit=[])),
                spoiled(lambda r: r["unit"].update(datasets={})),
                spoiled(lambda r: r["unit"]["datasets"].update(other={})),
                spoiled(lambda r: r["unit"]["datasets"][name].update(problems=None)),
                spoiled(lambda r: r["unit"]["datasets"][name].update(notes=[1])),
                spoiled(lambda r: r["unit"]["datasets"][name].update(file_sha256=5)),
                # a problem under a rule this lab does not know, or of another form
                spoiled(lambda r: r["unit"]["datasets"][name].update(
                    problems=[[name, False, [["TRUST_ME", "", "", []]]]])),
                spoiled(lambda r: r["unit"]["datasets"][name].update(problems=["words"])),
                spoiled(lambda r: r["unit"]["datasets"][name].update(
                    problems=[[name, False, [["UNPINNED", "", None, []]]]])),
                spoiled(lambda r: r["unit"]["datasets"][name].update(
                    problems=[[name, False, []]])),
                spoiled(lambda r: r["unit"]["seals"][0]["findings"].append(
                    ["p.toml", True, [["__class__", "", "", []]]])),
                spoiled(lambda r: r["unit"]["seals"][0].pop("findings")),
                # a check whose outcome is none the summary counts
                spoiled(lambda r: r["unit"]["datasets"][name]["checks"][0].update(
                    outcome="FINE")),
                spoiled(lambda r: r["unit"]["datasets"][name]["checks"][0].update(
                    outcome=["CONFIRMED"]))):
        with pytest.raises(IntegrityError, match=r"^toy: a malformed reply \(.*\); nothing "):
            fleet_verify._vouched(unit, bad, mine)
