"""How an AMDGPU toolchain is named from its clang's version line."""

import re


def compiler_name(version: str, origin: str) -> str:
    """A toolchain's name from its clang's version line: clang-22, or for ROCm's clang its
    ROCm release (rocm-7.2.2), else rocm-clang-N."""
    major = re.search(r"clang version (\d+)", version)
    number = major.group(1) if major else "unknown"
    if origin == "ROCm":
        release = re.search(r"roc-(\d+(?:\.\d+)+)", version)
        return f"rocm-{release.group(1)}" if release else f"rocm-clang-{number}"
    return f"clang-{number}"


def recorded_name(version: str, origin: str) -> str | None:
    """The name of the clang toolchain a version line is of; None for another compiler's."""
    return compiler_name(version, origin) if "clang version" in version else None
