"""NVIDIA toolchain: NVRTC (through cuda-core) to cubin, nvdisasm to SASS. No GPU needed."""

import functools
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from probelab.cache import cache_key, cached_bytes
from probelab.codeobject import CodeObject
from probelab.errors import Unavailable, UsageError
from probelab.probe import Kernel
from probelab.records import ToolRecord
from probelab.toolchains import identity
from probelab.vendors.nvidia.disasm import parse_sass

INSTALL_HINT = "pip install 'probelab[cuda]' (cuda-core, NVRTC and nvdisasm wheels)"
ALL = "all"


@dataclass(frozen=True)
class Toolchain:
    """NVIDIA's one toolchain here: NVRTC of the installed release, with its nvdisasm."""

    name: str  # nvrtc-13.5


def select(name: str | None) -> list[Toolchain]:
    """The toolchains `--toolchain NAME|all` names: there is one, NVRTC's release."""
    one = Toolchain(f"nvrtc-{nvrtc_version()}")
    if name in (None, ALL, one.name):
        return [one]
    raise UsageError(f"no toolchain {name!r} here (found: {one.name}; or {ALL})")


def check_target(target: str, toolchain: Toolchain | None = None) -> None:
    """Refuse a target this NVRTC cannot build."""
    number = int(re.sub(r"\D", "", target.split("_")[1]) or 0)
    if supported_archs() and number not in supported_archs():
        raise Unavailable(f"NVRTC {nvrtc_version()} does not build {target} (it builds sm_"
                          f"{', sm_'.join(map(str, supported_archs()))}): use a CUDA toolkit "
                          "whose NVRTC does")


def cuda_core():
    try:
        import cuda.core as core
        core.Program  # noqa: B018 - cuda-core < 0.4 keeps it under .experimental
    except (ImportError, AttributeError):
        try:
            import cuda.core.experimental as core
        except ImportError as exc:
            raise Unavailable(f"cuda-core is not installed: {INSTALL_HINT}") from exc
    return core


@functools.cache
def nvrtc_version() -> str:
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:
        raise Unavailable(f"cuda-bindings is not installed: {INSTALL_HINT}") from exc
    try:
        err, major, minor = nvrtc.nvrtcVersion()
    except Exception as exc:  # libnvrtc missing: the bindings raise on first use
        raise Unavailable(f"NVRTC library not found ({exc}): {INSTALL_HINT}") from exc
    if int(err) != 0:
        raise Unavailable(f"nvrtcVersion failed: {err}")
    return f"{major}.{minor}"


@functools.cache
def supported_archs() -> tuple[int, ...]:
    """The sm_ numbers this NVRTC builds (nvrtcGetSupportedArchs)."""
    nvrtc_version()
    from cuda.bindings import nvrtc

    err, archs = nvrtc.nvrtcGetSupportedArchs()
    return tuple(int(a) for a in archs) if int(err) == 0 else ()


@functools.cache
def _release(tool: str) -> str:
    """The "release X.Y" a CUDA tool reports, or ""."""
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    found = re.search(r"release (\d+\.\d+)", out.stdout)
    return found.group(1) if found else ""


@functools.cache
def find_nvdisasm() -> Path | None:
    """The nvdisasm that disassembles what NVRTC builds. The rule: the first nvdisasm of the
    same release as NVRTC (the nvidia-cuda-nvdisasm wheel first, then $CUDA_HOME, $PATH and
    /usr/local/cuda); where none matches, the first found. `describe` records which."""
    candidates = []
    for entry in sys.path:  # the nvidia-cuda-nvdisasm wheel
        candidates += sorted(glob.glob(f"{entry}/nvidia/*/bin/nvdisasm"))
        candidates += sorted(glob.glob(f"{entry}/nvidia/cuda_nvdisasm/bin/nvdisasm"))
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if home:
            candidates.append(str(Path(home) / "bin" / "nvdisasm"))
    candidates += [shutil.which("nvdisasm") or "", "/usr/local/cuda/bin/nvdisasm"]
    found = [Path(c) for c in dict.fromkeys(candidates)
             if c and Path(c).is_file() and os.access(c, os.X_OK)]
    try:
        wanted = nvrtc_version()
    except Unavailable:
        wanted = ""
    return next((t for t in found if _release(str(t)) == wanted), found[0] if found else None)


@functools.cache
def nvdisasm_version() -> str:
    tool = find_nvdisasm()
    if tool is None:
        raise Unavailable(f"nvdisasm not found: {INSTALL_HINT}")
    out = subprocess.run([tool, "--version"], capture_output=True, text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def compile_cubin(source: str, arch: str, options: dict[str, object], fresh: bool = False
                  ) -> tuple[bytes, bool]:
    """Compile CUDA C++ to a cubin for `arch` (e.g. sm_90). Returns (cubin, cache hit).

    `options` are cuda-core ProgramOptions fields (e.g. {"std": "c++17"}).
    """
    version = nvrtc_version()
    check_target(arch)
    # keyed by the library's bytes too: a cubin is its compiler's, not its version string's
    key = cache_key(source=source, arch=arch, options=options, nvrtc=version,
                    library=identity.record({"nvrtc": nvrtc_library()}))

    def build() -> bytes:
        core = cuda_core()
        program = core.Program(
            source, code_type="c++", options=core.ProgramOptions(arch=arch, **options)
        )
        return bytes(program.compile("cubin").code)

    return cached_bytes("nvrtc", key, build, fresh)


def disassemble(cubin: bytes) -> str:
    tool = find_nvdisasm()
    if tool is None:
        raise Unavailable(f"nvdisasm not found: {INSTALL_HINT}")
    with tempfile.NamedTemporaryFile(suffix=".cubin") as handle:
        handle.write(cubin)
        handle.flush()
        out = subprocess.run([tool, "-c", handle.name], capture_output=True, text=True)
    if out.returncode != 0:
        raise Unavailable(f"nvdisasm failed: {out.stderr.strip()}")
    return out.stdout


def nvrtc_library() -> Path | None:
    """The NVRTC library file this process loaded (whichever search found it)."""
    nvrtc_version()  # loads it
    return identity.loaded("libnvrtc.so")


def tools() -> dict[str, ToolRecord]:
    """What NVRTC's library and nvdisasm are (identity.identify)."""
    return identity.record({"nvrtc": nvrtc_library(), "nvdisasm": find_nvdisasm()})


def describe(toolchain: Toolchain | None = None) -> dict[str, Any]:
    """The compiler and the disassembler, with its path and whether its release is NVRTC's,
    and what each of their files is."""
    tool = find_nvdisasm()
    matches = tool is not None and _release(str(tool)) == nvrtc_version()
    return {"name": f"nvrtc-{nvrtc_version()}", "compiler": f"NVRTC {nvrtc_version()}",
            "disassembler": f"{nvdisasm_version()} ({tool})",
            "disassembler_matches_compiler": "yes" if matches else "no", "tools": tools()}


def build(kernel: Kernel, target: str, fresh: bool = False,
          toolchain: Toolchain | None = None) -> CodeObject:
    """Compile a probe kernel and disassemble the very bytes that will be loaded (`fresh`:
    rebuilt past the cache, to show a build is reproducible)."""
    options = dict(kernel.options)
    arch = str(options.pop("arch", target))
    if arch not in (target, f"{target}a"):  # sm_90a: sm_90's own features (wgmma), sm_90 only
        raise UsageError(f"{kernel.name} is built for {arch}, which does not run on {target}: "
                         f"a kernel may ask for {target} or its arch-specific {target}a only")
    cubin, hit = compile_cubin(kernel.source_text(), arch, options, fresh)
    key = cache_key(cubin=hashlib.sha256(cubin).hexdigest(), nvdisasm=nvdisasm_version(),
                    nvdisasm_sha256=identity.identify(find_nvdisasm())["sha256"])
    sass, _ = cached_bytes("nvdisasm", key, lambda: disassemble(cubin).encode())
    return CodeObject(arch, cubin, parse_sass(sass.decode()), describe(), hit)
