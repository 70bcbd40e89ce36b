"""Prints bit_scan_64.cu, rendered from probe.py's FORMS: the kernel source a build compiles,
kept in no file (`probelab source` shows it too; tests/test_rendered_sources.py proves
it is what the archive's datasets compiled)."""

import sys
from pathlib import Path

from probelab.probe import load_sibling

if __name__ == "__main__":
    probe = load_sibling(Path(__file__).parent / "probe.py")
    sys.stdout.write(probe.source())
