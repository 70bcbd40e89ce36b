"""AMDGPU toolchains, no ROCm needed: clang >= 19 compiles HIP kernels to raw code objects
(no offload bundle, byte-identical on rebuild) and llvm-objdump disassembles them.

More than one may be installed (Debian's clang-19 and clang-22, ROCm's amdclang): each is a
named `Toolchain` ("clang-19", "clang-22", "rocm-7.2.2"), every dataset records which built
it, and a lowering that changes under a fixed ISA shows up as a difference between two
toolchains' datasets. The default is $PROBELAB_CLANG, else ROCm's, else the newest.

Probe sources are built with -nogpuinc -nogpulib: no HIP headers and no device libraries,
so only compiler builtins reach the code object. A kernel that needs HIP's headers (e.g.
HIP's __byte_perm) is built on the device with hiprtc instead.
"""

import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probelab.cache import cache_key, cached_bytes
from probelab.codeobject import CodeObject
from probelab.errors import Unavailable, UsageError
from probelab.probe import Kernel
from probelab.records import ToolRecord
from probelab.toolchains import identity
from probelab.vendors.amd.disasm import parse_gcn
from probelab.vendors.amd.naming import compiler_name

MIN_MAJOR = 19
INSTALL_HINT = ("apt-get install clang-19 lld-19 llvm-19, or clang-22 lld-22 llvm-22 "
                "(or ROCm's amdclang)")
CANDIDATES = ("clang-22", "clang-21", "clang-20", "clang-19", "amdclang", "clang")
ROCM_CLANG = "/opt/rocm/llvm/bin/clang"
FLAGS = ("-x", "hip", "-nogpuinc", "-nogpulib", "--cuda-device-only", "-O2", "-c",
         "--no-gpu-bundle-output", "-fuse-cuid=none")  # raw object; no random __hip_cuid
# Where a target is newer than the toolchain, say what would build it.
NEWER = {"gfx950": "clang-22 (apt-get install clang-22 lld-22 llvm-22) or ROCm 7's amdclang",
         "gfx1250": "clang-22 (apt-get install clang-22 lld-22 llvm-22) or ROCm 7's amdclang"}
ALL = "all"  # --toolchain all: every toolchain found


@dataclass(frozen=True)
class Toolchain:
    """One AMDGPU compiler with the LLVM tools of its own release beside it."""

    name: str  # what --toolchain calls it: clang-19, clang-22, rocm-7.2.2
    version: str  # the first line of clang --version
    major: int
    path: Path  # clang
    objdump: Path
    origin: str  # "ROCm" or "LLVM"

    @property
    def release(self) -> str:
        """The full release its clang reports ("22.1.8", "19.0.0git")."""
        return release_of(self.version)

    def has(self, name: str) -> bool:
        return _tool(self.path, self.release, name) is not None

    def tool(self, name: str) -> Path:
        """An LLVM tool of this toolchain's own release (llc, llvm-mc, ld.lld), never a
        different LLVM's that happens to be on $PATH."""
        found = _tool(self.path, self.release, name)
        if found is None:
            raise Unavailable(f"{name} of release {self.release} ({self.name}) not found "
                              f"(looked beside {self.path.resolve()} and for "
                              f"{name}-{self.major}): {INSTALL_HINT}")
        return found

    def tools(self, uses: Iterable[str] = ()) -> dict[str, ToolRecord]:
        """What each tool it runs is (identity.identify): clang, llvm-objdump and `uses`."""
        return identity.record({"clang": self.path, "llvm-objdump": self.objdump}
                               | {name: self.tool(name) for name in uses})


def _version(path: str) -> tuple[str, int] | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    first = out.stdout.splitlines()[0] if out.stdout else ""
    m = re.search(r"clang version (\d+)", first)
    return (first.strip(), int(m.group(1))) if m else None


def release_of(version: str) -> str:
    found = re.search(r"version (\d+\.\d+\.\d+\w*)", version)
    return found.group(1) if found else ""


@functools.cache
def _tool(clang: Path, release: str, name: str) -> Path | None:
    """The first `name` beside clang's real file, or `name-MAJOR`, whose --version is of
    clang's very release (Debian's /usr/bin/llc may be another LLVM's; a 22.0.0git clang
    must not borrow 22.1.8's llc)."""
    major = release.split(".")[0]
    for candidate in (clang.resolve().parent / name, shutil.which(f"{name}-{major}")):
        if not release or candidate is None or not Path(candidate).is_file():
            continue
        try:
            out = subprocess.run([candidate, "--version"], capture_output=True, text=True,
                                 timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if re.search(rf"version {re.escape(release)}(?![\w.])", out.stdout + out.stderr):
            return Path(candidate)
    return None


def _probe(name: str) -> Toolchain | None:
    """The toolchain of the clang called `name` (a command or a path), or None where it is
    not a clang >= MIN_MAJOR with the AMDGPU target and its llvm-objdump."""
    path = shutil.which(name)
    if not path or not (seen := _version(path)) or seen[1] < MIN_MAJOR:
        return None
    targets = subprocess.run([path, "-print-targets"], capture_output=True, text=True)
    objdump = _tool(Path(path), release_of(seen[0]), "llvm-objdump")
    if "amdgcn" not in targets.stdout or objdump is None:
        return None
    origin = "ROCm" if "AMD" in seen[0] or path.startswith("/opt/rocm") else "LLVM"
    return Toolchain(compiler_name(seen[0], origin), seen[0], seen[1], Path(path), objdump,
                     origin)


@functools.cache
def toolchains() -> tuple[Toolchain, ...]:
    """Every AMDGPU toolchain found, the default first ($PROBELAB_CLANG, else ROCm's, else
    the newest); one per name."""
    found: dict[str, Toolchain] = {}
    if chosen := os.environ.get("PROBELAB_CLANG"):
        tc = _probe(chosen)
        if tc is None:
            raise Unavailable(f"PROBELAB_CLANG={chosen} is not a clang >= {MIN_MAJOR} with "
                              "the AMDGPU target and its llvm-objdump")
        found[tc.name] = tc
    for name in (ROCM_CLANG, *CANDIDATES):
        tc = _probe(name)
        if tc is not None and tc.name not in found:
            found[tc.name] = tc
    if not found:
        raise Unavailable(f"no clang >= {MIN_MAJOR} with the AMDGPU target and llvm-objdump: "
                          f"{INSTALL_HINT}")
    return tuple(found.values())


def find_clang() -> Toolchain:
    """The default toolchain."""
    return toolchains()[0]


def select(name: str | None) -> list[Toolchain]:
    """The toolchains `--toolchain NAME|all` names (None: the default)."""
    if name is None:
        return [find_clang()]
    found = toolchains()
    if name == ALL:
        return list(found)
    for tc in found:
        if tc.name == name:
            return [tc]
    raise UsageError(f"no toolchain {name!r} here (found: {', '.join(t.name for t in found)}; "
                     f"or {ALL}). To add one: {INSTALL_HINT}")


@functools.cache
def supported_targets(toolchain: Toolchain | None = None) -> frozenset[str]:
    tc = toolchain or find_clang()
    out = subprocess.run([tc.path, "-print-supported-cpus", "--target=amdgcn-amd-amdhsa",
                          "-nogpulib"], capture_output=True, text=True)
    return frozenset(re.findall(r"\bgfx[0-9a-f]+\b", out.stdout + out.stderr))


def check_target(target: str, toolchain: Toolchain | None = None) -> None:
    """Refuse, with what would work, a target this toolchain cannot build."""
    tc = toolchain or find_clang()
    base = target.split(":")[0]
    if base not in supported_targets(tc):
        would = NEWER.get(base, "a newer clang with the AMDGPU target")
        raise Unavailable(f"{tc.name} ({tc.version}) cannot build {base}; {would} can "
                          "(--toolchain, or point PROBELAB_CLANG at it)")


def compile_object(source: str, target: str, defines: dict[str, int] | None = None,
                   fresh: bool = False, toolchain: Toolchain | None = None
                   ) -> tuple[bytes, bool]:
    """Compile HIP source to a raw AMDGPU code object for `target` (e.g. gfx1201, or a full
    target id such as gfx90a:xnack-). Returns (code object, cache hit)."""
    tc = toolchain or find_clang()
    check_target(target, tc)
    flags = [*FLAGS, f"--offload-arch={target}",
             *(f"-D{k}={v}" for k, v in sorted((defines or {}).items()))]
    # keyed by clang's bytes too: another file at the same path, saying the same version,
    # is another compiler, and must not be handed the first one's objects
    key = cache_key(source=source, flags=flags, clang=tc.version, path=str(tc.path),
                    clang_sha256=identity.identify(tc.path)["sha256"])

    def build() -> bytes:
        with tempfile.TemporaryDirectory() as tmp:
            src, out = Path(tmp) / "kernel.hip", Path(tmp) / "kernel.co"
            src.write_text(source)
            run = subprocess.run([tc.path, *flags, "-o", out, src], capture_output=True,
                                 text=True)
            if run.returncode != 0:  # name the file as the probe does, not the temp path
                raise CompileError(run.stderr.replace(str(src), "kernel.hip").strip())
            return out.read_bytes()

    return cached_bytes("amdgpu", key, build, fresh)


class CompileError(Exception):
    """The compiler rejected the source: the message is its diagnostics."""


def disassemble(code_object: bytes, target: str, toolchain: Toolchain | None = None) -> str:
    tc = toolchain or find_clang()
    with tempfile.NamedTemporaryFile(suffix=".co") as handle:
        handle.write(code_object)
        handle.flush()
        out = subprocess.run([tc.objdump, "-d", f"--mcpu={target.split(':')[0]}",
                              handle.name], capture_output=True, text=True)
    if out.returncode != 0:
        raise Unavailable(f"llvm-objdump failed: {out.stderr.strip()}")
    return out.stdout


def describe(toolchain: Toolchain | None = None, uses: tuple[str, ...] = ()) -> dict[str, Any]:
    """The toolchain as a dataset records it; `uses`: the LLVM tools a pipeline probe ran."""
    tc = toolchain or find_clang()
    return {"name": tc.name, "release": tc.release, "compiler": tc.version,
            "compiler_path": str(tc.path), "origin": tc.origin, "disassembler": str(tc.objdump),
            "route": "offline clang (-nogpuinc -nogpulib, raw code object)",
            **{name: str(tc.tool(name)) for name in uses}, "tools": tc.tools(uses)}


def build(kernel: Kernel, target: str, fresh: bool = False,
          toolchain: Toolchain | None = None) -> CodeObject:
    """Compile a probe kernel and disassemble the very bytes that will be loaded."""
    if kernel.headers == "hip":
        raise Unavailable(f"{kernel.name} needs HIP's headers: it is built on the device with "
                          "hiprtc (ROCm), not offline")
    try:
        blob, hit = compile_object(kernel.source_text(), target, dict(kernel.defines), fresh,
                                   toolchain)
    except CompileError as exc:
        raise Unavailable(f"{kernel.name} does not compile for {target}:\n{exc}") from exc
    text = disassemble(blob, target, toolchain)
    return CodeObject(target, blob, parse_gcn(text), describe(toolchain), hit)
