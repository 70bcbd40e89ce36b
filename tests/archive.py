"""Whether this checkout holds the archive's datasets. A light tree (scripts/device_tree.sh
light, as a device call takes) leaves them out; the tests that read the committed archive
then skip, saying why, and run wherever the archive is (here, CI)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELD = next((ROOT / "data").glob("*/*/*.nc"), None) is not None
needs_archive = pytest.mark.skipif(
    not HELD, reason="the archive's datasets are absent (a light tree: scripts/device_tree.sh)")
