"""NVIDIA: sm_ targets, SASS, NVRTC and nvdisasm offline, the CUDA driver for devices."""

from probelab.vendors import Driver, Vendor
from probelab.vendors.nvidia.disasm import parse_sass
from probelab.vendors.nvidia.isa import PADDING, SASS
from probelab.vendors.nvidia.targets import TARGETS

_CUDA = "pip install 'probelab[cuda]'"

VENDOR = Vendor(
    "nvidia", TARGETS, "sm_*", SASS, parse_sass, "probelab.vendors.nvidia.toolchain",
    (Driver("cuda", "/proc/driver/nvidia/version", "cuda.bindings", "the NVIDIA driver",
            "cuda-bindings", "NVIDIA GPU"),),
    sim_targets=("sm_90",),
    known=f"NVIDIA sm_NN[a|f] from {TARGETS[0]} to {TARGETS[-1]}, e.g. sm_90",
    examples=("sm_90",),
    padding=PADDING,
    packages=(("cuda-core", _CUDA), ("cuda-bindings", _CUDA), ("nvidia-cuda-nvrtc", _CUDA),
              ("nvidia-cuda-nvdisasm", f"{_CUDA} (or a CUDA toolkit's nvdisasm)")),
    machine="probelab.vendors.nvidia.machine",
    rank=0,
    title="NVIDIA",
    uint32_typedef="typedef unsigned int uint32_t;  // NVRTC has no standard headers\n",
)
