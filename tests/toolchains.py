"""The offline toolchains a kernel test needs, or a clean skip saying what is missing."""

import pytest

from probelab.errors import Unavailable


def nvidia_tools():
    """probelab.vendors.nvidia.toolchain with NVRTC and nvdisasm present, else skip."""
    from probelab.vendors.nvidia import toolchain as nvidia

    try:
        nvidia.nvrtc_version()
    except Unavailable as exc:
        pytest.skip(str(exc))
    if nvidia.find_nvdisasm() is None:
        pytest.skip("nvdisasm not installed")
    return nvidia


def amd_tools():
    """probelab.vendors.amd.toolchain with a clang >= 19 that targets AMDGPU, else skip."""
    from probelab.vendors.amd import toolchain as amdgpu

    try:
        amdgpu.find_clang()
    except Unavailable as exc:
        pytest.skip(f"no AMDGPU clang: {exc}")
    return amdgpu


def cuda_device():
    """(CudaBackend, its DeviceInfo) where an NVIDIA GPU is usable, else skip the module."""
    ops_cuda = pytest.importorskip("probelab.vendors.nvidia.ops_cuda")
    try:
        backend = ops_cuda.CudaBackend()
        return backend, backend.device()
    except Unavailable as exc:
        pytest.skip(f"no CUDA device: {exc}", allow_module_level=True)
