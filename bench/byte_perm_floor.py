"""The floor a byte-perm sweep is compared with: the least honest work that gives the same
outputs, written without probelab (no checks, no poison, no guards, no dataset).

    python bench/byte_perm_floor.py --cache DIR

Compiles both NVIDIA byte-perm kernels from probes/byte_perm/byte_perm.cu (from DIR when a
cubin is there already, as probelab's compile cache does), then runs each once over the
same grid as the probe (16 operand pairs x 65,536 selectors = 1,048,576 cells), copies the
outputs back and exits. `bench/byte_perm_sweep.py` times it as a whole process.
"""

import argparse
from pathlib import Path

import numpy as np
from cuda.bindings import driver

try:
    import cuda.core as core

    core.Program  # noqa: B018 - cuda-core < 0.4 keeps it under .experimental
except (ImportError, AttributeError):
    import cuda.core.experimental as core

SOURCE = Path(__file__).resolve().parents[1] / "probes" / "byte_perm" / "byte_perm.cu"
SYMBOLS = ("probe_byte_perm", "probe_prmt")
OPERANDS, SELECTORS = 16, 65536


def cubin(cache: Path, arch: str) -> bytes:
    path = cache / f"byte_perm.{arch}.cubin"
    if not path.exists():
        program = core.Program(SOURCE.read_text(), code_type="c++",
                               options=core.ProgramOptions(arch=arch))
        cache.mkdir(parents=True, exist_ok=True)
        path.write_bytes(bytes(program.compile("cubin").code))
    return path.read_bytes()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, required=True, help="folder for the cubin")
    args = parser.parse_args()
    dev = core.Device(0)
    dev.set_current()
    stream = dev.create_stream()
    arch = "sm_{}{}".format(*dev.compute_capability)
    code = core.ObjectCode.from_cubin(cubin(args.cache, arch))
    rng = np.random.default_rng(0)
    cells = OPERANDS * SELECTORS
    host = {"params": np.array([SELECTORS, cells], np.uint32),
            "x": rng.integers(0, 2**32, OPERANDS, dtype=np.uint64).astype(np.uint32),
            "y": rng.integers(0, 2**32, OPERANDS, dtype=np.uint64).astype(np.uint32),
            "sel": np.arange(SELECTORS, dtype=np.uint32)}
    handle = driver.CUstream(int(stream.handle))
    inputs = {n: dev.allocate(a.nbytes, stream=stream) for n, a in host.items()}
    for n, a in host.items():
        driver.cuMemcpyHtoDAsync(int(inputs[n].handle), a.ctypes.data, a.nbytes, handle)
    config = core.LaunchConfig(grid=(cells + 255) // 256, block=256)
    outputs = []
    for symbol in SYMBOLS:
        out = dev.allocate(4 * cells, stream=stream)
        core.launch(stream, config, code.get_kernel(symbol),
                    *(np.uint64(int(inputs[n].handle)) for n in host), np.uint64(int(out.handle)))
        back = np.empty(cells, np.uint32)
        driver.cuMemcpyDtoHAsync(back.ctypes.data, int(out.handle), back.nbytes, handle)
        outputs.append((out, back))
    stream.sync()


if __name__ == "__main__":
    main()
