"""The numerics kit: stimulus families for numeric calibration (stimulus), each case built
in the lab's number formats (probelab.formats) and predicted by the core's models
(probelab.numerics)."""
