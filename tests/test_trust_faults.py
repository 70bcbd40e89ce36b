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

    def terminated_midway(path: Path, data: bytes) -> None:
        real(path, data[:100])
        os.kill(os.getpid(), signal.SIGTERM)  # the CLI's handler raises Terminated here
        real(path, data)

    monkeypatch.setattr(storage, "_write_all", terminated_midway)
    result = invoke("sweep", "toy", "--backend", "sim")
    assert result.exit_code == 143 and "interrupted; nothing was written" in result.stderr
    assert _files(toylab.root / "sim-data") == []
    assert _files(toylab.root / storage.STAGING) == []
    assert signal.getsignal(signal.SIGTERM) is not None  # the previous handler is back


def test_sigkill_during_a_write_leaves_nothing_in_the_archive(toylab: ToyLab) -> None:
    """SIGKILL cannot be handled: the temp file lives in the lab's staging folder, never in
    data/, and the next write there removes what the dead process left."""
    target = toylab.data / "toy" / "sm_90" / "20261201T000000Z.nc"
    code = (f"from pathlib import Path; import os, signal; from probelab import storage\n"
            f"with storage.atomic_path(Path({str(target)!r}), exclusive=True) as tmp:\n"
            f"    tmp.write_bytes(b'half'); os.kill(os.getpid(), signal.SIGKILL)\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=toylab.root)
    assert run.returncode == -signal.SIGKILL
    assert _files(toylab.data) == []
    (left,) = _files(toylab.root / storage.STAGING)
    assert left.name.startswith(f".{target.name}.")
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


def test_a_sim_data_folder_linked_into_data_is_refused(toylab: ToyLab) -> None:
    (toylab.root / "sim-data").symlink_to(toylab.data, target_is_directory=True)
    result = invoke("sweep", "toy", "--backend", "sim")
    assert result.exit_code == 2 and "never go under data/" in result.stderr
    assert _files(toylab.data) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_real_process_stopped_mid_sweep_leaves_no_dataset_and_says_so(
        toylab: ToyLab, signum: int) -> None:
    """A whole process, stopped by a signal while it works: nothing half-written anywhere."""
    code = ("import os, signal, sys\n"
            "from probelab import storage\n"
            "real = storage._write_all\n"
            "def stop(path, data):\n"
            f"    real(path, data[:10]); os.kill(os.getpid(), {int(signum)}); real(path, data)\n"
            "storage._write_all = stop\n"
            "from probelab.cli import main\n"
            "sys.argv = ['probelab', 'sweep', 'toy', '--backend', 'sim']\n"
            "main()\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=toylab.root, capture_output=True,
                         text=True)
    assert run.returncode == 128 + signum, run.stderr
    assert "interrupted; nothing was written" in run.stderr
    assert _files(toylab.root / "sim-data") == []
    assert _files(toylab.root / storage.STAGING) == []
