"""AMD: gfx targets (and target ids with features), GCN text, clang (or ROCm's hiprtc) to
code objects, ROCm's HIP runtime for devices."""

from probelab.vendors import Driver, Vendor
from probelab.vendors.amd.disasm import parse_gcn
from probelab.vendors.amd.isa import GCN, PADDING
from probelab.vendors.amd.naming import recorded_name
from probelab.vendors.amd.targets import FEATURES, TARGETS

VENDOR = Vendor(
    "amd", TARGETS, "gfx*", GCN, parse_gcn, "probelab.vendors.amd.toolchain",
    (Driver("hip", "/dev/kfd", "hip", "ROCm's /dev/kfd", "hip-python", "AMD GPU, ROCm"),),
    sim_targets=("gfx1201", "gfx942"),
    features=FEATURES,
    known="AMD LLVM's gfx processors, e.g. gfx90a, gfx942, gfx950, gfx1201",
    examples=("gfx1201", "gfx942", "gfx90a"),
    padding=PADDING,
    packages=(("hip-python", "pip install 'probelab[hip]' (needs ROCm on an AMD GPU "
                             "machine)"),),
    machine="probelab.vendors.amd.machine",
    rank=1,
    compiler_name=recorded_name,
    title="AMD",
    uint32_typedef="typedef __UINT32_TYPE__ uint32_t;  // the very type <stdint.h> uses, "
                   "so a redeclaration is legal\n",
)
