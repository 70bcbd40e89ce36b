"""The sentinels the kits' decoded sources share, declared as CF flags on every variable
that may hold them: none (nothing arrived) and invalid (not one consistent id)."""

import numpy as np

NONE, INVALID = 0xFFFFFFFE, 0xFFFFFFFF
FLAGS = {"flag_values": np.array([NONE, INVALID], np.uint32),
         "flag_meanings": "none invalid"}
