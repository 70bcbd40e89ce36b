"""scripts/device_tree.sh: a light working tree for a device call that never changes what
git's index holds. `light` and `restore` flip skip-worktree bits only (a commit made while
light keeps the archive); `worktree` makes a light checkout of its own and leaves this one
untouched."""

import subprocess
from pathlib import Path

import pytest
from toylab import git

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "device_tree.sh"
ARCHIVE = ("data/toy/sm_90/20300101T000000Z.nc", "docs/figures/map.png")
KEPT = ("data/MANIFEST.jsonl", "docs/trust.md", "probelab/core.py", "probes/toy/probe.py")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Toy Tester")
    git(root, "config", "user.email", "toy@example.invalid")
    git(root, "config", "commit.gpgsign", "false")
    for rel in ARCHIVE + KEPT:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(f"{rel}\n".encode() * 100)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "lab")
    return root


def run(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=root, capture_output=True,
                          text=True)


def tagged(root: Path) -> dict[str, str]:
    """`git ls-files -t`: path -> H (in the working tree) or S (skip-worktree)."""
    lines = git(root, "ls-files", "-t").splitlines()
    return {line[2:]: line[0] for line in lines}


def test_light_and_restore_change_no_index_entry_and_a_commit_keeps_the_archive(
        repo: Path) -> None:
    entries, tree = git(repo, "ls-files", "-s"), git(repo, "ls-tree", "-r", "HEAD")
    light = run(repo, "light")
    assert light.returncode == 0, light.stderr
    kept = sum(100 * (len(rel) + 1) for rel in KEPT)  # what is left in the working tree
    assert light.stdout.startswith(f"light: {kept} bytes would travel")
    assert all(not (repo / rel).exists() for rel in ARCHIVE)
    assert all((repo / rel).is_file() for rel in KEPT)
    assert git(repo, "ls-files", "-s") == entries  # every entry, blob and mode as it was
    assert tagged(repo) == {rel: "S" for rel in ARCHIVE} | {rel: "H" for rel in KEPT}
    assert git(repo, "status", "--porcelain") == ""
    (repo / "probelab" / "new.py").write_text("x = 1\n")  # a commit made while light
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "while light")
    now = git(repo, "ls-tree", "-r", "HEAD")
    assert all(line in now.splitlines() for line in tree.splitlines())  # the archive kept
    restore = run(repo, "restore")
    assert restore.returncode == 0, restore.stderr
    assert all((repo / rel).read_bytes() == f"{rel}\n".encode() * 100 for rel in ARCHIVE)
    assert set(tagged(repo).values()) == {"H"} and git(repo, "status", "--porcelain") == ""


def test_light_refuses_a_tree_that_is_not_clean(repo: Path) -> None:
    (repo / "docs" / "trust.md").write_text("edited\n")
    result = run(repo, "light")
    assert result.returncode == 2 and "not clean" in result.stderr
    assert set(tagged(repo).values()) == {"H"}


def test_a_light_worktree_leaves_this_checkout_untouched(repo: Path) -> None:
    index = (repo / ".git" / "index").read_bytes()
    light = repo.parent / "light"
    result = run(repo, "worktree", str(light))
    assert result.returncode == 0, result.stderr
    assert all(not (light / rel).exists() for rel in ARCHIVE)
    assert all((light / rel).read_bytes() == (repo / rel).read_bytes() for rel in KEPT)
    assert tagged(light) == {rel: "S" for rel in ARCHIVE} | {rel: "H" for rel in KEPT}
    assert git(light, "status", "--porcelain") == ""
    assert (repo / ".git" / "index").read_bytes() == index  # this checkout's own index
    assert set(tagged(repo).values()) == {"H"} and all((repo / r).is_file() for r in ARCHIVE)
    git(repo, "worktree", "remove", str(light))
