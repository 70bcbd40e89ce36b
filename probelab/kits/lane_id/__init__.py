"""The lane-id kit: layout recovery for dense matrix instructions (engine), the probe class
LaneIdProbe (probe) and the lane-map figures (figures)."""
