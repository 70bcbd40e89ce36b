"""The ISA targets the lab knows, by vendor: a made-up target is a usage error, never a
dataset, a simulated device or a power count. Each vendor's folder lists its own
(probelab/vendors/<name>/targets.py); this is the vendor-neutral view the core reads
(kept so that the modules asking "which vendor, which targets" need not name the table)."""

from probelab.vendors import TARGETS as VENDORS
from probelab.vendors import vendor

__all__ = ["VENDORS", "vendor"]
