"""Numeric models of matrix units (issue 19): exact binary arithmetic (exact.py) and the
parameterised families a calibration hypothesis can name (models.py), evaluated with
integer significand arithmetic, never with float shortcuts. Core, not a kit: sealing and
checking evaluate these models, and the core imports no kit."""
