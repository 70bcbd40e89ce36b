"""The bare floor of an f8f6f4-operand-width sweep: the compiler's own work, nothing else.

    python bench/f8f6f4_floor.py DIR TARGET CLANG LLC LLVM_MC OBJDUMP

Each module in DIR (route-0 IR `*.ll`, or HIP `*.hip` with its optimisation level and
selector in the name: `r1-s0.hip`) goes through the same tool runs the probe makes, once:
clang to IR for HIP, llc to text and to an object, llvm-mc on the text, llvm-objdump on the
object. No parsing, no checks, no second run, no dataset: no probelab at all.
"""

import re
import subprocess
import sys
import tempfile
from pathlib import Path

TRIPLE = "amdgcn-amd-amdhsa"
SELECTORS = (("-global-isel=0",), ("-global-isel", "-global-isel-abort=1"))


def main() -> None:
    folder, target, clang, llc, mc, objdump = sys.argv[1:7]
    modules = sorted(m for m in Path(folder).iterdir()
                     if re.fullmatch(r"r\d-s\d\.(ll|hip)", m.name))
    with tempfile.TemporaryDirectory() as work:
        for module in modules:
            run(module, Path(work) / module.stem, target, clang, llc, mc, objdump)


def run(module: Path, out: Path, target: str, clang: str, llc: str, mc: str,
        objdump: str) -> None:
    route, selector = (int(part[1:]) for part in module.stem.split("-"))
    opt = "-O2" if route == 2 else "-O0"
    ll = out.with_suffix(".ll")
    if module.suffix == ".hip":
        subprocess.run([clang, "-x", "hip", "-nogpuinc", "-nogpulib", "--cuda-device-only",
                        "-S", "-emit-llvm", "-fuse-cuid=none", opt, f"--offload-arch={target}",
                        module, "-o", ll], check=True)
    else:
        ll.write_bytes(module.read_bytes())
    base = [llc, opt, f"-mtriple={TRIPLE}", f"-mcpu={target}", *SELECTORS[selector], ll]
    subprocess.run([*base, "-o", out.with_suffix(".s")], check=True)
    subprocess.run([*base, "-filetype=obj", "-o", out.with_suffix(".o")], check=True)
    subprocess.run([mc, f"-triple={TRIPLE}", f"-mcpu={target}", "-filetype=obj",
                    out.with_suffix(".s"), "-o", out.with_suffix(".mc.o")],
                   capture_output=True)  # it refuses the over-wide text: that is data
    subprocess.run([objdump, "-d", f"--mcpu={target}", out.with_suffix(".o")], check=True,
                   capture_output=True)


if __name__ == "__main__":
    main()
