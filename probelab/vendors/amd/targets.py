"""AMD's ISA targets: the processors of LLVM's AMDGPU backend (`llc -mcpu=help`, LLVM 19;
gfx950, gfx1250 and gfx1251 from LLVM 22), named alone or as a target id with features
(gfx942:sramecc+:xnack-)."""

TARGETS = tuple(f"gfx{n}" for n in (
    "600", "601", "602", "700", "701", "702", "703", "704", "705", "801", "802", "803", "805",
    "810", "900", "902", "904", "906", "908", "909", "90a", "90c", "940", "941", "942", "950",
    "1010", "1011", "1012", "1013", "1030", "1031", "1032", "1033", "1034", "1035", "1036",
    "1100", "1101", "1102", "1103", "1150", "1151", "1152", "1153", "1200", "1201", "1250",
    "1251", "9-generic", "10-1-generic", "10-3-generic", "11-generic", "12-generic"))
FEATURES = ("sramecc+", "sramecc-", "xnack+", "xnack-")  # of a target id
