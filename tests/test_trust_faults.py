"""Trust under attack, part 3: faults during a write (a full disk, SIGTERM, SIGKILL, Ctrl-C)
leave no trace and the message tells the truth about what was written."""

import errno
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from quick import quick_first
from toylab import ToyLab, invoke

from probelab import cache, storage


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def _limit_file_size() -> None:  # runs in the child, before it execs
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
    resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))


def test_a_disk_that_fills_during_the_save_is_a_clean_error_not_a_crash(
        toylab: ToyLab) -> None:
    """A real OS-level write failure (file size limit) in a real process: HDF5 used to crash
    the process on it (exit 139); the dataset is now serialised in memory and the write
    fails as a plain error (exit 2), leaving nothing."""
    run = subprocess.run([sys.executable, "-m", "probelab", "sweep", "toy", "--backend", "sim"],
                         cwd=toylab.root, capture_output=True, text=True,
                         preexec_fn=_limit_file_size, env=os.environ | {"COLUMNS": "200"})
    assert run.returncode == 2, (run.returncode, run.stderr)
    assert "File too large" in run.stderr and "nothing was written" in run.stderr
    assert _files(toylab.root / "sim-data") == []
    assert _files(toylab.root / storage.STAGING) == []


def test_sigterm_during_the_save_leaves_no_temp_file(toylab: ToyLab, monkeypatch) -> None:
    real = storage._write_all
    seen: list[Path] = []

    def terminated_midway(path: Path, data: bytes) -> None:
        if ".nc." not in path.name:  # a cache entry: only the dataset's write is stopped
            return real(path, data)
        real(path, data[:100])
        seen.extend(_files(toylab.root / storage.STAGING))  # the half-written temp file
        os.kill(os.getpid(), signal.SIGTERM)  # the CLI's handler raises Terminated here
        real(path, data)

    monkeypatch.setattr(storage, "_write_all", terminated_midway)
    result = invoke("sweep", "toy", "--backend", "sim")
    assert [p.suffix for p in seen] == [".tmp"], seen  # the signal came inside the write
    assert result.exit_code == 143 and "interrupted; nothing was written" in result.stderr
    assert _files(toylab.root / "sim-data") == []
    assert _files(toylab.root / storage.STAGING) == []
    assert signal.getsignal(signal.SIGTERM) is not None  # the previous handler is back


# A writer that stops inside a dataset's write: it writes part of the temp file, says where
# on stdout, and waits for the test's signal there (a hook in the child, so the window the
# signal must land in is seen from outside, not assumed).
SLOW_WRITER = """
import sys, time
from probelab import storage
real = storage._write_all
def slow(path, data):
    if ".nc." not in path.name:  # a cache entry, say: only a dataset's write is stopped
        return real(path, data)
    real(path, data[:10])
    print("IN-WRITE", path, flush=True)
    time.sleep(60)
    real(path, data)
storage._write_all = slow
"""


def _stopped_inside_the_write(lab: ToyLab, code: str, signum: int
                              ) -> tuple[subprocess.CompletedProcess, Path]:
    """Run `code` after SLOW_WRITER in a process of its own, send it `signum` once it is
    inside a write, and return how it ended and the temp file it was writing."""
    child = subprocess.Popen([sys.executable, "-c", SLOW_WRITER + code], cwd=lab.root,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        assert line.startswith("IN-WRITE "), (line, child.stderr.read())
        tmp = Path(line.split(" ", 1)[1].strip())
        assert tmp.parent == lab.root / storage.STAGING and tmp.suffix == ".tmp"
        assert tmp.is_file() and tmp.read_bytes()  # half written, where the signal lands
        child.send_signal(signum)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    return subprocess.CompletedProcess(child.args, child.returncode, out, err), tmp


def test_sigkill_during_a_write_leaves_nothing_in_the_archive(toylab: ToyLab) -> None:
    """SIGKILL cannot be handled: the temp file lives in the lab's staging folder, never in
    data/, and the next write there removes what the dead process left."""
    target = toylab.data / "toy" / "sm_90" / "20261201T000000Z.nc"
    code = (f"from pathlib import Path\n"
            f"storage.atomic_write_bytes(Path({str(target)!r}), b'x' * 100, exclusive=True)\n")
    run, tmp = _stopped_inside_the_write(toylab, code, signal.SIGKILL)
    assert run.returncode == -signal.SIGKILL
    assert _files(toylab.data) == []
    assert _files(toylab.root / storage.STAGING) == [tmp]  # what the dead process left
    assert tmp.name.startswith(f".{target.name}.")
    storage.atomic_write_text(toylab.data / "other.txt", "x")
    assert _files(toylab.root / storage.STAGING) == []


def test_an_interrupt_after_the_save_says_the_dataset_was_written(toylab: ToyLab,
                                                                   monkeypatch) -> None:
    def interrupted(path):
        raise KeyboardInterrupt

    monkeypatch.setattr("probelab.check.check_all", interrupted)
    result = invoke("sweep", "toy", "--backend", "sim", "--check")
    (saved,) = _files(toylab.root / "sim-data")
    assert result.exit_code == 130
    assert "nothing was written" not in result.stderr
    assert f"written before that: {saved.relative_to(toylab.root)}" in result.stderr


def test_a_full_compile_cache_only_costs_a_recompile(toylab: ToyLab, monkeypatch) -> None:
    real = storage.tempfile.mkstemp

    def full(*args, dir=None, **kwargs):
        if Path(dir).is_relative_to(toylab.root.parent / ".cache"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(storage.tempfile, "mkstemp", full)
    built = []
    payload, hit = cache.cached_bytes("cubin", "k" * 64, lambda: built.append(1) or b"code")
    assert (payload, hit, built) == (b"code", False, [1])


def test_a_cache_entry_is_not_fsynced_and_one_torn_by_a_crash_is_made_again(
        toylab: ToyLab, monkeypatch) -> None:
    """Results are fsynced before they are named; a cache entry is not (a cold verify files
    thousands): one a crash left short fails its tag, a miss, and is built again."""
    assert cache.lookup("answer", "k" * 64) is None  # the cache's secret made (and synced)
    synced = []
    monkeypatch.setattr(storage.os, "fsync", lambda fd: synced.append(fd))
    cache.store("answer", "k" * 64, b"payload")
    assert synced == [] and cache.lookup("answer", "k" * 64) == b"payload"
    storage.atomic_write_bytes(toylab.root / "data" / "result.bin", b"x")
    assert len(synced) == 1
    entry = next((toylab.root.parent / ".cache").rglob("answer/*.bin"))
    entry.write_bytes(entry.read_bytes()[:-3])  # the end never reached the disk
    assert cache.cached_bytes("answer", "k" * 64, lambda: b"payload") == (b"payload", False)


def test_a_sim_data_folder_linked_into_data_is_refused(toylab: ToyLab) -> None:
    (toylab.root / "sim-data").symlink_to(toylab.data, target_is_directory=True)
    result = invoke("sweep", "toy", "--backend", "sim")
    assert result.exit_code == 2 and "never go under data/" in result.stderr
    assert _files(toylab.data) == []


@pytest.mark.parametrize("signum", quick_first([signal.SIGTERM, signal.SIGINT]))
def test_a_real_process_stopped_mid_sweep_leaves_no_dataset_and_says_so(
        toylab: ToyLab, signum: int) -> None:
    """A whole process, stopped by a signal from outside while it writes its dataset (the
    half-written temp file seen first): nothing half-written anywhere."""
    code = ("from probelab.cli import main\n"
            "sys.argv = ['probelab', 'sweep', 'toy', '--backend', 'sim']\n"
            "main()\n")
    run, tmp = _stopped_inside_the_write(toylab, code, signum)
    assert run.returncode == 128 + signum, run.stderr
    assert "interrupted; nothing was written" in run.stderr
    assert not tmp.exists()
    assert _files(toylab.root / "sim-data") == []
    assert _files(toylab.root / storage.STAGING) == []
