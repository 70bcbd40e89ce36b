"""Probe-family kits: for each family of instructions, the engine that designs its stimulus
and decodes its outputs, the probe class a probe folder declares itself with, and its
figures; `elements` is the codec they share. The core never imports a kit (a test proves
it): a probe imports one, and the core only sees the probe.
"""
