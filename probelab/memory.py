"""Freed memory kept for the next array: glibc gives a block larger than its mmap threshold
(32 MB at most, by default) back to the kernel when it is freed, and trims the heap's free
top, so the next large array has every page faulted in and zeroed by the kernel again (1.3 s
a GB on this lab's 2-core VM: a cold `verify` allocates its observables, their hashes'
buffers and its expressions' temporaries hundreds of times over, a tenth of its time).
`keep_freed` raises both thresholds for this process and the workers it forks; the peak
resident memory is what it was (the same arrays are alive at once), only held to the end."""

import ctypes

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # malloc.h
KEPT = 1 << 30  # blocks up to this size are reused, and this much free heap is not trimmed


def keep_freed() -> bool:
    """Whether the C library (glibc: anything else keeps its own policy) took the setting."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return all(mallopt(option, KEPT) == 1 for option in (_M_MMAP_THRESHOLD, _M_TRIM_THRESHOLD))
