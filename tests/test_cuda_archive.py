"""The archive's trust path on a real GPU: a measured sweep into data/ is pinned by the
manifest, records the code that decoded it, and its verdicts count; edited afterwards, it
no longer does. Skipped cleanly without an NVIDIA GPU."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from toolchains import cuda_device
from toylab import copy_probe

cuda_device()

pytestmark = pytest.mark.cuda
REPO = Path(__file__).resolve().parents[1]


def _git(lab: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=lab, check=True, capture_output=True,
                          text=True).stdout.strip()


def _probelab(lab: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROBELAB_GIT")}
    env |= {"PROBELAB_ROOT": str(lab), "PROBELAB_CACHE": str(lab.parent / "cache")}
    return subprocess.run([sys.executable, "-m", "probelab", *args], cwd=lab, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    """A lab of its own holding the byte-perm probe and its two CUDA hypotheses, sealed."""
    root = tmp_path / "lab"
    copy_probe(root, "byte_perm")
    (root / "data").mkdir()
    (root / ".gitignore").write_text("__pycache__/\n/.probelab-staging/\n")
    _git(root, "init", "-q", "-b", "main")
    for key, value in (("user.name", "GPU Tester"), ("user.email", "gpu@example.invalid"),
                       ("commit.gpgsign", "false")):
        _git(root, "config", key, value)
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "byte-perm lab")
    folder = root / "preregistrations" / "byte-perm"
    folder.mkdir(parents=True)
    for name in ("cuda-contract.toml", "ptx-prmt-default.toml"):
        shutil.copy(REPO / "preregistrations" / "byte-perm" / name, folder / name)
        sealed = _probelab(root, "prereg", "seal", str(folder / name))
        assert sealed.returncode == 0, sealed.stderr
    return root


def test_a_measured_sweep_is_pinned_and_counts_until_edited(lab: Path) -> None:
    run = _probelab(lab, "sweep", "byte-perm", "--repeats", "2", "--check")
    assert run.returncode == 0, run.stderr
    path = Path(run.stdout.splitlines()[0])
    assert path.parent == lab / "data" / "byte-perm" / path.parent.name
    *said, last = run.stdout.splitlines()[1:]  # the verdicts, then what the sweep added
    assert last.startswith("added to the archive: 1 dataset"), run.stdout
    verdicts = [line.split(":")[1].split()[0] for line in said]
    assert sorted(verdicts) and set(verdicts) <= {"CONFIRMED", "REFUTED"}, run.stdout
    (pin,) = [json.loads(line) for line in
              (lab / "data" / "MANIFEST.jsonl").read_text().splitlines()]
    assert pin["path"] == path.relative_to(lab).as_posix() and pin["probe"] == "byte-perm"
    _git(lab, "add", "-A")
    _git(lab, "commit", "-q", "-m", "measurement")
    verified = _probelab(lab, "verify")
    assert verified.returncode == 0, verified.stderr
    with open(path, "r+b") as handle:  # one byte of the file, as a hand would change it
        handle.seek(-64, os.SEEK_END)
        byte = handle.read(1)
        handle.seek(-64, os.SEEK_END)
        handle.write(bytes([byte[0] ^ 1]))
    hypothesis = lab / "preregistrations" / "byte-perm" / "cuda-contract.toml"
    assert _probelab(lab, "check", str(hypothesis), str(path)).returncode in (2, 3)
    assert _probelab(lab, "verify").returncode == 3
