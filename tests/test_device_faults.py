"""Device faults, tried on a real GPU: a kernel that faults and one that never returns.

Each sweep runs in its own process (`python -m probelab sweep`), as a user would run it: a
fault leaves the CUDA context unusable and a hung kernel keeps the GPU busy, and neither may
take the test session down with it. Both must end with exit 3, a message that says what
happened, and no dataset. Skipped cleanly without an NVIDIA GPU.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from toolchains import cuda_device

cuda_device()

pytestmark = pytest.mark.cuda

HAZARD_PROBE = '''"""hazard: test-only kernels that fault or never return."""
import os
from pathlib import Path
from types import MappingProxyType

import numpy as np
import xarray as xr

from probelab.probe import Evidence, Kernel, Launch, stack_kernels

HERE = Path(__file__).parent


class Hazard:
    id = "hazard"
    version = "1"
    summary = "test-only: faulting and hanging kernels"
    targets = ("sm_*",)
    observables = MappingProxyType({"value": ("i",)})
    plots = MappingProxyType({})

    def kernels(self, vendor):
        name = os.environ["HAZARD_KERNEL"]
        return [Kernel(name, f"probe_{name}", HERE / "hazard.cu", "nvidia", Evidence(None))]

    def stimulus(self):
        return xr.Dataset(coords={"i": ("i", np.arange(64, dtype=np.uint32))})

    def launch(self, stimulus):
        return Launch(inputs={"a": stimulus["i"].values}, outputs={"out": 64}, threads=64)

    def assemble(self, stimulus, outputs):
        ds, values = stack_kernels(stimulus, outputs, "out", ("i",))
        ds["value"] = (("kernel", "i"), values)
        return ds


PROBE = Hazard()
'''

HAZARD_CU = r"""
typedef unsigned int u32;
// Writes far outside any allocation: the launch faults (illegal address).
extern "C" __global__ void probe_fault(const u32* a, u32* out) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < 64) out[i + (1u << 30)] = a[i];
}
// Spins on a word nobody writes: the launch never returns.
extern "C" __global__ void probe_spin(const u32* a, u32* out) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    volatile const u32* flag = a + 63;
    while (flag[0] != 0xFFFFFFFFu) { }
    if (i < 64) out[i] = a[i];
}
"""


def _sweep(lab: Path, kernel: str, *extra: str) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "PROBELAB_ROOT": str(lab), "HAZARD_KERNEL": kernel,
           "PROBELAB_GIT_HEAD": "0" * 40, "PROBELAB_GIT_DIRTY": "1",
           "PROBELAB_CACHE": str(lab.parent / f"{lab.name}.cache")}  # outside the lab
    start = time.monotonic()
    run = subprocess.run([sys.executable, "-m", "probelab", "sweep", "hazard", *extra],
                         cwd=lab, env=env, capture_output=True, text=True, timeout=300)
    return run, time.monotonic() - start


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    folder = tmp_path / "probes" / "hazard"
    folder.mkdir(parents=True)
    (folder / "probe.py").write_text(HAZARD_PROBE)
    (folder / "hazard.cu").write_text(HAZARD_CU)
    (tmp_path / "data").mkdir()
    return tmp_path


def _datasets(lab: Path) -> list[Path]:
    return sorted((lab / "data").rglob("*.nc"))


def test_a_faulting_kernel_exits_3_and_writes_nothing(lab: Path) -> None:
    run, _ = _sweep(lab, "fault")
    assert run.returncode == 3, run.stderr
    assert "probe_fault failed on the device" in run.stderr
    assert _datasets(lab) == []


def test_a_kernel_that_never_returns_times_out_and_says_so(lab: Path) -> None:
    run, seconds = _sweep(lab, "spin", "--timeout", "3")
    assert run.returncode == 3, run.stderr
    assert "probe_spin did not return within 3 s" in run.stderr
    assert _datasets(lab) == []
    assert seconds < 120  # the process left; it did not wait for the kernel
