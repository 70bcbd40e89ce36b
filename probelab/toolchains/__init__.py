"""Compilers and disassemblers, usable without a device: one module each, named by its
vendor's row (`Vendor.toolchain`), behind one protocol, `Toolchain` (as a backend is behind
`probelab.backends.Backend`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # a tool's identity (probelab.toolchains.identity) needs neither
    from probelab.codeobject import CodeObject
    from probelab.probe import Kernel


@runtime_checkable
class Toolchain(Protocol):
    """A toolchain module: the named toolchains it finds here, and a build of a kernel for
    a target by one of them into a disassembled code object."""

    ALL: str  # `--toolchain all`: every toolchain found
    INSTALL_HINT: str  # how to get one

    def select(self, name: str | None) -> list[Any]: ...  # NAME, ALL or None (the default)
    def check_target(self, target: str, toolchain: Any = None) -> None: ...  # Unavailable
    def build(self, kernel: Kernel, target: str, fresh: bool = False,
              toolchain: Any = None) -> CodeObject: ...
    def describe(self, toolchain: Any = None) -> dict[str, Any]: ...  # provenance
