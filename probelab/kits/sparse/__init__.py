"""The sparse kit: lane-qualified metadata sweeps for structured-sparse instructions (engine),
the probe class SparseProbe (probe) and the pairing-map figures (figures)."""
