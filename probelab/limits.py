"""Defaults a user may change from the command line, kept free of heavy imports so the CLI
can show them in --help without loading numpy or a backend."""

DEFAULT_TIMEOUT_S = 60.0  # seconds one launch may run before a sweep calls it hung
