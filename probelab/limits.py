"""Defaults a user may change from the command line, kept free of heavy imports so the CLI
can show them in --help without loading numpy or a backend."""

DEFAULT_TIMEOUT_S = 60.0  # seconds one launch may run before a sweep calls it hung
FLEET_CONNECT_S = 30.0  # seconds the fleet driver waits to join a cluster (a healthy one: a few)
