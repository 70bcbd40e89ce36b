"""A compiled kernel as the lab keeps it: the exact bytes that run, and their disassembly."""

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from probelab.isa import Instruction


@dataclass(frozen=True)
class CodeObject:
    target: str
    binary: bytes
    functions: Mapping[str, list[Instruction]]  # parsed disassembly per symbol
    toolchain: Mapping[str, Any]  # as a dataset records it (its tools: a dict)
    cache_hit: bool = False

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.binary).hexdigest()
