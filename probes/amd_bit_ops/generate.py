"""Prints amd_bit_ops.hip, rendered from probe.py's FORMS: the kernel source a build
compiles, kept in no file (`probelab source amd-bit-ops` shows it too)."""

import sys
from pathlib import Path

from probelab.probe import load_sibling

if __name__ == "__main__":
    probe = load_sibling(Path(__file__).parent / "probe.py")
    sys.stdout.write(probe.source())
