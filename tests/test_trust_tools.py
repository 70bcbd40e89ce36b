"""Trust under attack, part 11: a toolchain's identity is what its tools are. Each dataset
records every tool's real file, sha256 and package (probelab.toolchains.identity); verify
flags a tool that is not its package's file, and one toolchain name whose tools' bytes
differ between datasets. The attacks with real wrappers are in test_toolchains.py."""

import hashlib
import shutil
from pathlib import Path

import pytest
from toylab import ToyLab

from probelab.notary import words
from probelab.notary.problems import Problem, rules
from probelab.notary.rules import Rule
from probelab.toolchains import identity
from probelab.verify import rel, verify_archive

PACKAGE = "clang-22 1:22.1.8-1~deb12u1"


def tool(sha: str, package: str | None = PACKAGE, ok: bool | None = True) -> dict:
    return {"path": "/usr/lib/llvm-22/bin/clang", "sha256": sha * 64, "package": package,
            "package_ok": ok}


def built_by(lab: ToyLab, **tools: dict) -> Path:
    """A committed measurement whose provenance says clang-22 22.1.8 built it with `tools`."""
    path = lab.as_measured(lab.sim_dataset(), toolchain={
        "name": "clang-22", "release": "22.1.8", "compiler": "clang version 22.1.8",
        "tools": tools})
    lab.git("add", "-A")
    lab.git("commit", "-q", "-m", f"measurement {path.name}")
    return path


def lines(found: list, path: Path) -> list[str]:
    """The lines among `found` (notes, or verify's problems said in words) naming `path`."""
    return [line for line in words.lines(found) if path.name in line] if found and \
        isinstance(found[0], Problem) else [line for line in found if path.name in line]


def test_one_toolchain_name_whose_tool_hashes_differ_is_a_problem(toylab: ToyLab) -> None:
    debian = built_by(toylab, clang=tool("a"))
    other = built_by(toylab, clang=tool("b", package=None, ok=None))  # nothing could say
    result = verify_archive()
    assert rules(result["problems"]) == {Rule.TOOLS_DIFFER}
    (problem,) = lines(result["problems"], other)
    assert problem.startswith("clang-22 22.1.8: its clang differs between datasets: ")
    assert f"{'a' * 12} ({PACKAGE}) in {debian.relative_to(toylab.root)}" in problem
    assert f"{'b' * 12} (no package) in {other.relative_to(toylab.root)}" in problem
    assert problem.endswith("one toolchain name, tools that are not the same")


def test_two_intact_builds_of_one_release_are_a_note_not_a_problem(toylab: ToyLab) -> None:
    # Debian rebuilt 22.1.8 (or another architecture's package): both files are their
    # packages' own, so either can be had again; the difference is said, not refused
    built_by(toylab, clang=tool("a"))
    rebuilt = built_by(toylab, clang=tool("b", package="clang-22 1:22.1.8-2"))
    result = verify_archive()
    assert not result["problems"]
    (note,) = lines(result["notes"], rebuilt)
    assert "one release, built more than once" in note


def test_a_tool_outside_its_package_or_edited_in_place_is_a_problem(toylab: ToyLab) -> None:
    wrapper = built_by(toylab, clang=tool("c", package=None, ok=False),
                       **{"llvm-objdump": tool("d", ok=False)})
    problems = verify_archive()["problems"]
    assert {p.at for p in problems} == {rel(wrapper)}
    assert rules(problems) == {Rule.TOOL_NOT_PACKAGED}
    found = lines(problems, wrapper)
    assert any("clang-22's clang (/usr/lib/llvm-22/bin/clang) is from no package: the name "
               "clang-22 is only what the tool says of itself" in line for line in found)
    assert any(f"clang-22's llvm-objdump (/usr/lib/llvm-22/bin/clang) is not the file "
               f"{PACKAGE} installed" in line for line in found)


def test_a_dataset_from_before_tools_were_recorded_stays_valid(toylab: ToyLab) -> None:
    path = toylab.as_measured(toylab.sim_dataset(), toolchain={"name": "clang-22"})
    toylab.git("add", "-A")
    toylab.git("commit", "-q", "-m", "an older measurement")
    built_by(toylab, clang=tool("a"))
    result = verify_archive()
    assert not result["problems"] and not lines(result["notes"], path)


def test_a_file_is_checked_against_its_package_s_own_record(tmp_path: Path) -> None:
    # an edited file inside a package's path: its package names it, its bytes do not match
    clang = Path("/usr/lib/llvm-22/bin/clang")
    if shutil.which("dpkg-query") is None or not clang.is_file():
        pytest.skip("needs Debian's clang-22 (dpkg)")
    md5 = hashlib.md5(clang.read_bytes()).hexdigest()
    package, ok = identity._dpkg(str(clang), md5)
    assert package and package.startswith("clang-22 ") and ok is True
    assert identity._dpkg(str(clang), "0" * 32) == (package, False)
    copy = tmp_path / "clang"  # the very bytes, but no package installed them there
    shutil.copy(clang, copy)
    assert identity.identify(copy) | {"path": ""} == {
        "path": "", "sha256": hashlib.sha256(clang.read_bytes()).hexdigest(),
        "package": None, "package_ok": False}


def test_a_wheel_s_file_is_checked_against_its_record() -> None:
    try:
        from probelab.vendors.nvidia import toolchain as nvidia

        nvdisasm = nvidia.find_nvdisasm()
    except ImportError:
        nvdisasm = None
    if nvdisasm is None or identity._wheel(str(nvdisasm.resolve()), b"") is None:
        pytest.skip("needs the nvidia-cuda-nvdisasm wheel")
    real = str(nvdisasm.resolve())
    digest = hashlib.sha256(Path(real).read_bytes()).digest()
    name, ok = identity._wheel(real, digest)
    assert name.startswith("nvidia-cuda-nvdisasm ") and ok is True
    assert identity._wheel(real, bytes(32)) == (name, False)  # an edited nvdisasm
