"""AMDGPU toolchain, no ROCm needed: clang >= 19 compiles HIP kernels to raw code objects
(no offload bundle, byte-identical on rebuild) and llvm-objdump disassembles them.

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
from dataclasses import dataclass
from pathlib import Path

from probelab.cache import cache_key, cached_bytes
from probelab.codeobject import CodeObject
from probelab.errors import Unavailable
from probelab.probe import Kernel
from probelab.vendors import VENDORS

MIN_MAJOR = 19
INSTALL_HINT = "apt-get install clang-19 lld-19 llvm-19 (or ROCm's amdclang)"
CANDIDATES = ("clang-22", "clang-21", "clang-20", "clang-19", "amdclang", "clang")
ROCM_CLANG = "/opt/rocm/llvm/bin/clang"
FLAGS = ("-x", "hip", "-nogpuinc", "-nogpulib", "--cuda-device-only", "-O2", "-c",
         "--no-gpu-bundle-output", "-fuse-cuid=none")  # raw object; no random __hip_cuid
# Where a target is newer than the clang found, say what would build it.
NEWER = {"gfx950": "ROCm 7's amdclang or LLVM >= 20 (PyPI rocm-llvm-python bundles LLVM 22)",
         "gfx1250": "ROCm 7's amdclang or LLVM >= 21"}


@dataclass(frozen=True)
class Clang:
    path: Path
    version: str  # the first line of --version
    major: int
    objdump: Path
    origin: str  # "ROCm" or "LLVM"


def _version(path: str) -> tuple[str, int] | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    first = out.stdout.splitlines()[0] if out.stdout else ""
    m = re.search(r"clang version (\d+)", first)
    return (first.strip(), int(m.group(1))) if m else None


def _objdump(clang: Path, major: int) -> Path | None:
    for name in (f"llvm-objdump-{major}", clang.parent / "llvm-objdump", "llvm-objdump"):
        found = shutil.which(str(name))
        if found:
            return Path(found)
    return None


@functools.cache
def find_clang() -> Clang:
    """The newest clang >= 19 with the AMDGPU target; $PROBELAB_CLANG overrides."""
    names = [os.environ["PROBELAB_CLANG"]] if os.environ.get("PROBELAB_CLANG") else \
        [ROCM_CLANG, *CANDIDATES]
    for name in names:
        path = shutil.which(name)
        if not path or not (seen := _version(path)) or seen[1] < MIN_MAJOR:
            continue
        targets = subprocess.run([path, "-print-targets"], capture_output=True, text=True)
        objdump = _objdump(Path(path), seen[1])
        if "amdgcn" in targets.stdout and objdump:
            origin = "ROCm" if "AMD" in seen[0] or path.startswith("/opt/rocm") else "LLVM"
            return Clang(Path(path), seen[0], seen[1], objdump, origin)
    raise Unavailable(f"no clang >= {MIN_MAJOR} with the AMDGPU target and llvm-objdump: "
                      f"{INSTALL_HINT}")


@functools.cache
def supported_targets() -> frozenset[str]:
    clang = find_clang()
    out = subprocess.run([clang.path, "-print-supported-cpus", "--target=amdgcn-amd-amdhsa",
                          "-nogpulib"], capture_output=True, text=True)
    return frozenset(re.findall(r"\bgfx[0-9a-f]+\b", out.stdout + out.stderr))


def check_target(target: str) -> None:
    """Refuse, with what would work, a target this clang cannot build."""
    base = target.split(":")[0]
    if base not in supported_targets():
        clang = find_clang()
        would = NEWER.get(base, "a newer clang with the AMDGPU target")
        raise Unavailable(f"{clang.version} cannot build {base}; {would} can "
                          "(point PROBELAB_CLANG at it)")


def compile_object(source: str, target: str, defines: dict[str, int] | None = None,
                   fresh: bool = False) -> tuple[bytes, bool]:
    """Compile HIP source to a raw AMDGPU code object for `target` (e.g. gfx1201, or a full
    target id such as gfx90a:xnack-). Returns (code object, cache hit)."""
    clang = find_clang()
    check_target(target)
    flags = [*FLAGS, f"--offload-arch={target}",
             *(f"-D{k}={v}" for k, v in sorted((defines or {}).items()))]
    key = cache_key(source=source, flags=flags, clang=clang.version, path=str(clang.path))

    def build() -> bytes:
        with tempfile.TemporaryDirectory() as tmp:
            src, out = Path(tmp) / "kernel.hip", Path(tmp) / "kernel.co"
            src.write_text(source)
            run = subprocess.run([clang.path, *flags, "-o", out, src], capture_output=True,
                                 text=True)
            if run.returncode != 0:  # name the file as the probe does, not the temp path
                raise CompileError(run.stderr.replace(str(src), "kernel.hip").strip())
            return out.read_bytes()

    return cached_bytes("amdgpu", key, build, fresh)


class CompileError(Exception):
    """The compiler rejected the source: the message is its diagnostics."""


def disassemble(code_object: bytes, target: str) -> str:
    clang = find_clang()
    with tempfile.NamedTemporaryFile(suffix=".co") as handle:
        handle.write(code_object)
        handle.flush()
        out = subprocess.run([clang.objdump, "-d", f"--mcpu={target.split(':')[0]}",
                              handle.name], capture_output=True, text=True)
    if out.returncode != 0:
        raise Unavailable(f"llvm-objdump failed: {out.stderr.strip()}")
    return out.stdout


def describe() -> dict[str, str]:
    clang = find_clang()
    return {"compiler": clang.version, "compiler_path": str(clang.path),
            "origin": clang.origin, "disassembler": str(clang.objdump),
            "route": "offline clang (-nogpuinc -nogpulib, raw code object)"}


def build(kernel: Kernel, target: str, fresh: bool = False) -> CodeObject:
    """Compile a probe kernel and disassemble the very bytes that will be loaded."""
    if kernel.headers == "hip":
        raise Unavailable(f"{kernel.name} needs HIP's headers: it is built on the device with "
                          "hiprtc (ROCm), not offline")
    try:
        blob, hit = compile_object(kernel.source_text(), target, dict(kernel.defines), fresh)
    except CompileError as exc:
        raise Unavailable(f"{kernel.name} does not compile for {target}:\n{exc}") from exc
    text = disassemble(blob, target)
    return CodeObject(target, blob, VENDORS["amd"].parse(text), describe(), hit)
