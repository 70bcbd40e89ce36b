"""Writes bfe_bfi.cu from probe.py's FORMS: `python probes/bfe_bfi/generate.py`;
tests/test_bitops.py fails when the committed file is not what this writes."""

from pathlib import Path

from probelab.probe import load_sibling

if __name__ == "__main__":
    probe = load_sibling(Path(__file__).parent / "probe.py")
    probe.SOURCE.write_text(probe.source())
