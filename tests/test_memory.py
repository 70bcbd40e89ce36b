"""probelab.memory: with freed memory kept, a large array made again after one was dropped
reuses its pages instead of having the kernel fault in and zero every page anew (run in a
process of its own: the setting lasts for the process)."""

import subprocess
import sys

import pytest

PROBE = """
import resource, sys
import numpy as np
from probelab.memory import keep_freed
if sys.argv[1] == "kept":
    assert keep_freed()
faults = []
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    np.ones(48 << 17)  # 48 MiB, made and dropped: above glibc's largest default threshold
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(faults[-1])
"""


def _faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], check=True, capture_output=True,
                         text=True).stdout
    return int(out)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_dropped_array_is_made_again_without_page_faults() -> None:
    default, kept = _faults("default"), _faults("kept")
    assert default > 20  # 12,288 pages of 4 KiB, or 24 huge pages, each time
    assert kept * 4 < default, (default, kept)
