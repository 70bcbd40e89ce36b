"""Guard words around every buffer and poison in every output, and the one guarded run that
every GPU backend makes with them over a few device primitives of its own (`Device`).

Each device buffer is [guard | payload | guard]. Guards are checked after the launch; inputs
must come back unchanged; outputs start poisoned, so a cell the kernel never wrote shows.
"""

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import numpy as np

from probelab.backends import KernelTimeout, wait_for
from probelab.errors import IntegrityError

if TYPE_CHECKING:
    from probelab.codeobject import CodeObject
    from probelab.probe import Kernel, Launch, TensorMap

GUARD_WORDS = 64
GUARD = np.uint32(0xC0FFEE11)
POISONS = (0xA5A5A5A5, 0x5A5A5A5B)  # repeats alternate, so an unwritten cell cannot repeat


def framed(payload: np.ndarray) -> np.ndarray:
    guard = np.full(GUARD_WORDS, GUARD, np.uint32)
    return np.concatenate([guard, np.ascontiguousarray(payload, np.uint32).reshape(-1), guard])


def poisoned(words: int, poison: int) -> np.ndarray:
    return framed(np.full(words, poison, np.uint32))


def unframe(name: str, host: np.ndarray) -> np.ndarray:
    """Check both guards of a buffer copied back from the device and return its payload."""
    for side, guard in (("leading", host[:GUARD_WORDS]), ("trailing", host[-GUARD_WORDS:])):
        bad = np.flatnonzero(guard != GUARD)
        if bad.size:
            raise IntegrityError(
                f"guard words overwritten in buffer {name!r} ({side}, {bad.size} words, "
                f"first value {int(guard[bad[0]]):#010x}): the kernel wrote out of bounds")
    return host[GUARD_WORDS:-GUARD_WORDS].copy()


def check_inputs_intact(name: str, sent: np.ndarray, back: np.ndarray) -> None:
    if not np.array_equal(sent, back):
        changed = int(np.count_nonzero(sent != back))
        raise IntegrityError(f"input buffer {name!r} changed on the device ({changed} words)")


class Device(Protocol):
    """A backend's device work, one primitive a step. Each checks its own call (an
    IntegrityError naming it when the device refuses), and all of a run's go on one stream,
    in the order they are called."""

    def alloc(self, name: str, nbytes: int) -> int: ...
    def copy_in(self, name: str, address: int, host: np.ndarray) -> None: ...
    def fill(self, name: str, address: int, word: int, count: int) -> None: ...
    # the map's 128 bytes, encoded over `address` (asked only by a launch that declares one)
    def tensor_map(self, name: str, address: int, spec: "TensorMap") -> bytes: ...
    # pointers, then the tensor maps by value, as the kernel declares its parameters
    def launch(self, code: "CodeObject", symbol: str, blocks: int, block: int,
               args: list[int], maps: list[bytes]) -> None: ...
    def finished(self, symbol: str) -> bool: ...  # a fault in the kernel may raise here
    def synchronize(self) -> None: ...  # ... or here
    def copy_out(self, name: str, host: np.ndarray, address: int) -> None: ...
    def free(self, name: str, address: int) -> Callable[[], None]: ...  # raises if it failed


def guarded_run(device: Device, code: "CodeObject", kernel: "Kernel", launch: "Launch",
                poison: int, timeout_s: float) -> dict[str, np.ndarray]:
    """Run `kernel` once over `launch` on `device`: inputs framed and copied in, outputs
    guarded and poisoned on the device, pointers past each leading guard, then each declared
    tensor map encoded over its input's payload once that is copied in, a wait bounded by
    `timeout_s`, everything copied back and checked (guards intact, inputs unchanged).
    Every buffer is freed before any free is judged; a hung kernel's buffers are left to it
    (freeing them would wait for it)."""
    host = {n: framed(a) for n, a in launch.inputs.items()}
    sizes = {n: h.size for n, h in host.items()}
    sizes |= {n: words + 2 * GUARD_WORDS for n, words in launch.outputs.items()}
    ptr: dict[str, int] = {}
    try:
        for n, size in sizes.items():
            ptr[n] = device.alloc(n, 4 * size)
        for n, h in host.items():
            device.copy_in(n, ptr[n], h)
        for n, words in launch.outputs.items():  # guards, then poison, set on the device
            device.fill(n, ptr[n], int(GUARD), sizes[n])
            device.fill(n, ptr[n] + 4 * GUARD_WORDS, poison, words)
        maps = [device.tensor_map(n, ptr[m.buffer] + 4 * GUARD_WORDS, m)
                for n, m in launch.tensor_maps.items()]
        device.launch(code, kernel.symbol, -(-launch.threads // launch.block), launch.block,
                      [ptr[n] + 4 * GUARD_WORDS for n in sizes], maps)
        wait_for(lambda: device.finished(kernel.symbol), timeout_s, f"kernel {kernel.symbol}")
        device.synchronize()
        back = {n: np.empty(size, np.uint32) for n, size in sizes.items()}
        for n, b in back.items():
            device.copy_out(n, b, ptr[n])
    except KernelTimeout:
        ptr = {}  # freeing memory a running kernel uses would wait for it: leak it
        raise
    except IntegrityError:
        raise
    except Exception as exc:  # a faulting kernel may surface as another device error
        raise IntegrityError(f"kernel {kernel.symbol} failed on the device: {exc}") from exc
    finally:  # after a fault the device refuses every free: the first error is the one raised
        judged = [device.free(n, address) for n, address in ptr.items()]
    for judge in judged:
        judge()
    for n in launch.inputs:
        check_inputs_intact(n, host[n], back[n])
        unframe(n, back[n])
    return {n: unframe(n, back[n]) for n in launch.outputs}
