"""Writes bit_scan.cu from probe.py's FORMS: `python probes/bit_scan/generate.py`;
tests/test_bitops.py fails when the committed file is not what this writes."""

from pathlib import Path

from probelab.probe import load_sibling

if __name__ == "__main__":
    probe = load_sibling(Path(__file__).parent / "probe.py")
    probe.SOURCE.write_text(probe.source())
