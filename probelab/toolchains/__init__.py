"""Compilers and disassemblers, usable without a device."""
