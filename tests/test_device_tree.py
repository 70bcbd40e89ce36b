"""scripts/device_tree.sh: a light work tree for a device run that leaves the index's entries
and HEAD alone, so a commit made while light still holds the whole archive."""

import shutil
import subprocess
from pathlib import Path

from toylab import git

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "device_tree.sh"


def test_light_keeps_the_archive_in_every_commit_and_restore_brings_it_back(
        tmp_path: Path) -> None:
    repo = tmp_path / "lab"
    (repo / "data" / "toy" / "sm_90").mkdir(parents=True)
    (repo / "docs" / "figures").mkdir(parents=True)
    (repo / "probelab").mkdir()
    (repo / "data" / "toy" / "sm_90" / "a.nc").write_bytes(b"x" * 4096)
    (repo / "data" / "MANIFEST.jsonl").write_text("{}\n")
    (repo / "docs" / "figures" / "f.png").write_bytes(b"p" * 4096)
    (repo / "probelab" / "core.py").write_text("x = 1\n")
    shutil.copy(SCRIPT, repo / "device_tree.sh")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@x", "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "lab")

    def run(arg: str) -> subprocess.CompletedProcess:
        return subprocess.run(["bash", "device_tree.sh", arg], cwd=repo, capture_output=True,
                              text=True)

    assert run("light").returncode == 0
    assert not (repo / "data" / "toy").exists() and not (repo / "docs" / "figures").exists()
    assert (repo / "data" / "MANIFEST.jsonl").is_file() and (repo / "probelab").is_dir()
    assert git(repo, "status", "--porcelain") == ""  # nothing reads as deleted
    (repo / "probelab" / "core.py").write_text("x = 2\n")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qam", "while light")
    tree = git(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    assert "data/toy/sm_90/a.nc" in tree and "docs/figures/f.png" in tree
    assert run("restore").returncode == 0
    assert (repo / "data" / "toy" / "sm_90" / "a.nc").read_bytes() == b"x" * 4096
    assert git(repo, "status", "--porcelain") == ""
    (repo / "probelab" / "core.py").write_text("x = 3\n")
    refused = run("light")
    assert refused.returncode == 2 and "uncommitted" in refused.stderr
