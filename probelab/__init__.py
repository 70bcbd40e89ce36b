"""probelab: empirical ISA probes with sealed preregistrations and per-lane datasets."""

__version__ = "0.1.0"
