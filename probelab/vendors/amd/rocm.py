"""hip-python's conventions, shared by the HIP backend and the hiprtc toolchain: importing
it, checking its (error, *values) results, and one line saying what is missing and how to
get it. Without ROCm, hip-python imports but each call raises RuntimeError ("failed to
dlopen libamdhip64.so"): callers report that as `no_rocm`.
"""

import importlib.metadata
import re

from probelab.errors import IntegrityError, Unavailable


def hip_python_version() -> str:
    try:
        return importlib.metadata.version("hip-python")
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def no_rocm(why: object) -> Unavailable:
    """One line: what is missing and how to get it. Up to 7.x, hip-python's version starts
    with the ROCm release it was built for (6.2.0.x -> ROCm 6.2.0); 10.x is a metapackage
    over rocm-bindings that loads whatever ROCm it finds."""
    version = hip_python_version()
    reason = " ".join(str(why).split())
    if lib := re.search(r"dlopen '?b?'(lib[\w.]+)", reason):  # hip-python's wording is noisy
        reason = f"cannot load {lib.group(1)}"
    major = int(version.split(".")[0]) if version[:1].isdigit() else None
    if major is None:
        fix = "install ROCm, then pip install 'probelab[hip]' (hip-python, pinned to it)"
    elif major >= 10:
        fix = f"install ROCm (hip-python {version} loads the ROCm it finds)"
    else:
        rocm = ".".join(version.split(".")[:3])
        fix = (f"install ROCm {rocm} to match hip-python {version}, or pin hip-python to "
               "your ROCm (pip install 'hip-python==X.Y.Z.*' for ROCm X.Y.Z)")
    return Unavailable(f"ROCm or an AMD GPU not found ({reason}): on a machine with an AMD "
                       f"GPU {fix}")


def hip():
    try:
        from hip import hip
    except ImportError as exc:
        raise no_rocm(f"hip-python is not importable: {exc}") from exc
    return hip


def hiprtc():
    try:
        from hip import hiprtc
    except ImportError as exc:
        raise no_rocm(f"hip-python is not importable: {exc}") from exc
    return hiprtc


def check(result: tuple, what: str) -> tuple:
    err, *rest = result
    if int(err) != 0:
        raise IntegrityError(f"HIP call {what} failed: {getattr(err, 'name', err)}")
    return tuple(rest)


def text(value: str | bytes) -> str:  # hip-python < 10 gives char fields as bytes
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def version(v: int) -> str:  # HIP encodes major * 10**7 + minor * 10**5 + patch
    return f"{v // 10_000_000}.{v // 100_000 % 100}.{v % 100_000}"
