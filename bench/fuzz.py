"""Benchmark: the fuzzers, each for a fixed time, counting crashes and hangs.

    python bench/fuzz.py --minutes 10 [--only expr,toml,layout,dataset] [--seed 1] [--json out.json]

Four fuzzers, each a stream of generated inputs for the code that reads what a stranger
can hand the lab:
- `expr`: expression sources (token soups and random text), compiled and evaluated; the
  only way out allowed is ExprError.
- `toml`: hypothesis files (random keys and values of the schema's names, [model] tables,
  hostile nesting, junk bytes), parsed and evaluated on a small grid; only UsageError.
- `layout`: layouts as a hypothesis file's [layout] tables and `layout compare` take them
  (CuTe text well formed or not, nested, swizzled, huge; linear bases of every shape;
  CSV tables of every shape, pinned by their hash or not), parsed and evaluated on a small
  grid; only UsageError.
- `dataset`: dataset files, a small valid probelab dataset rebuilt with a random HDF5
  structure (groups, links of every kind, external storage, virtual datasets, filters,
  dtypes, dimension scales, attributes and provenance of every shape, huge declared
  shapes, truncation), then read as a check reads it (summarised, opened, hashed, its
  provenance read); only UsageError.

Each fuzzer runs in a worker process the runner watches: a case that raises anything else
is a crash, a worker that dies is a crash, a case that runs past its deadline is a hang, a
worker over 1.5 GB resident is a memory failure (for dataset files, from the moment the
file is read: what goes wrong while the fuzzer writes it, HDF5's own writer on metadata an
earlier change corrupted, is recorded apart as `generator`, not counted); each is recorded
with the seed and case
number that reproduce it (`--worker NAME --start N --seed S` replays from there), and the
worker is restarted past it. The floor, timed in the same run, is a worker that does
nothing per case.
"""

import argparse
import contextlib
import itertools
import json
import os
import platform
import random
import select
import subprocess
import sys
import tempfile
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from timing import ROOT, report

sys.path.insert(0, str(ROOT))

DEADLINES = {"expr": 10.0, "toml": 20.0, "layout": 20.0, "dataset": 30.0,
             "floor": 5.0}  # seconds a case
MAX_RSS = 1.5e9


# ---- expressions ---------------------------------------------------------------------------

TOKENS = [
    "x", "y", "a", "0", "1", "7", "31", "32", "63", "64", "0x", "0xffffffff", "0b1", "9" * 25,
    "1.5", "(", ")", "[", "]", "**", "*", "//", "/", "%", "<<", ">>", "&", "|", "^", "~", "-",
    "+", "<", "<=", "==", "!=", "not", "and", "or", "if", "else", ".", "__class__", "_", ",",
    ":", "lambda", ":=", "'", "is", "in", "True", "None", " ", "\n", "\\", "#", "{", "}", "f'",
    "@", "x if y else x", "(" * 50, ")" * 50,
]  # fmt: skip


def _soup(rng: random.Random, most: int = 60) -> str:
    return rng.choice(["", " "]).join(rng.choice(TOKENS) for _ in range(rng.randint(0, most)))


def _text(rng: random.Random, most: int = 200) -> str:
    alphabet = "xy01()+-*/%<>=&|^~ .,:'\"\\\n\t#_abcXYZ\u0445\u00e9\x00\x7f"
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, most)))


def expr_case(rng: random.Random, work: Path, case: int) -> None:
    import numpy as np

    from probelab.expr import ExprError, compile_program

    env = {"x": np.arange(-3, 4), "y": np.arange(3).reshape(3, 1)}
    sources = [("a", _soup(rng) if rng.random() < 0.7 else _text(rng)), ("b", _soup(rng))]
    if rng.random() < 0.05:  # deep and wide: the limits, not luck, must stop these
        sources.append(("c", "(" * rng.randint(50, 5000) + "x" + ")" * rng.randint(0, 5000)))
    try:
        program = compile_program(sources, env)
        program.evaluate(env)
    except ExprError:
        pass


# ---- hypothesis files ----------------------------------------------------------------------

KEYS = ["schema", "id", "probe", "claim", "coordinates", "kernels", "targets", "where",
        "parent", "let", "predict", "translations", "agrees_with", "model", "extra"]
MODEL_KEYS = ["family", "fraction_bits", "rounding", "c", "group", "subnormals", "align",
              "result_bits", "overflow", "after_rounding", "blocks", "order", "nan", "other"]


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return rng.choice([0, 1, -1, 25, 2**26, 2**40, 2**63 - 1, rng.randint(-10**6, 10**6)])
    if kind == 1:
        return rng.choice([_soup(rng, 12), "a + b", "fused-dot", "fma-chain", "raw", "toy",
                           "nearest-even", "toward-zero", "", "x" * rng.randint(0, 3000)])
    if kind == 2:
        return rng.random() < 0.5
    if kind == 3:
        return rng.choice([0.5, -0.0, 1e300])
    if kind == 4:
        return _text(rng, 30)
    if kind == 5:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(KEYS + MODEL_KEYS + ["value", "a", "b"]): _value(rng, depth + 1)
            for _ in range(rng.randint(0, 4))}


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(map(_toml, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _hypothesis_text(rng: random.Random) -> str:
    doc: dict[str, Any] = {"schema": 1, "id": "fuzz", "probe": "toy", "claim": "c",
                           "coordinates": "raw"} if rng.random() < 0.6 else {}
    for _ in range(rng.randint(0, 8)):
        doc[rng.choice(KEYS)] = _value(rng)
    if rng.random() < 0.3:
        doc["predict"] = {"value": rng.choice(["a + b", "model", _soup(rng, 20)])}
    if rng.random() < 0.3:
        doc["model"] = {rng.choice(MODEL_KEYS): _value(rng) for _ in range(rng.randint(1, 6))}
        doc["model"].setdefault("family", rng.choice(["fused-dot", "fma-chain", "x"]))
    text = "\n".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in doc.items())
    roll = rng.random()
    if roll < 0.05:
        text += "\nx = " + "[" * rng.randint(100, 200_000) + "]" * rng.randint(0, 10)
    elif roll < 0.1:
        text += "\n" + ".".join(["k"] * rng.randint(100, 40_000)) + " = 1"
    elif roll < 0.15:
        text += "\nx = " + "{a = " * rng.randint(100, 20_000) + "1"
    return text


def toml_case(rng: random.Random, work: Path, case: int) -> None:
    import numpy as np
    import xarray as xr

    from probelab.errors import UsageError
    from probelab.hypothesis import evaluate_claim, parse_hypothesis

    raw = _hypothesis_text(rng).encode()
    if rng.random() < 0.2:
        raw += rng.randbytes(rng.randint(1, 40))
    grid = xr.Dataset(coords={"a": ("a", np.arange(4, dtype=np.uint32)),
                              "b": ("b", np.arange(3, dtype=np.uint32))})
    try:
        h = parse_hypothesis(Path(f"fuzz{rng.random()}.toml"), raw)  # no memo across cases
        evaluate_claim(h, grid, {"value": ("a", "b")})
    except UsageError:
        pass


# ---- layouts -------------------------------------------------------------------------------

LAYOUT_TOKENS = ["(", ")", ",", ":", "Swizzle<", "Sw<", "S<", ">", " o ", "_", "-", "0", "1",
                 "2", "3", "8", "16", "32", "128", "65536", "4294967296", "9" * 13, " ", "x",
                 "<", ";", "\n", "((((", "))))"]  # fmt: skip


def _shape(rng: random.Random, depth: int = 0) -> str:
    if depth > 5 or rng.random() < 0.5:
        return str(rng.choice([0, 1, 2, 4, 8, 32, 3, 65536, 2**31, rng.randint(-9, 99)]))
    return "(" + ",".join(_shape(rng, depth + 1) for _ in range(rng.randint(0, 4))) + ")"


def _cute_text(rng: random.Random) -> str:
    if rng.random() < 0.3:
        return "".join(rng.choice(LAYOUT_TOKENS) for _ in range(rng.randint(0, 40)))
    text = f"{_shape(rng)}:{_shape(rng)}"
    if rng.random() < 0.3:
        bsm = ",".join(str(rng.choice([0, 1, 3, -3, 7, 40, 99])) for _ in range(rng.randint(2, 4)))
        text = f"{rng.choice(['Swizzle', 'Sw', 'S', 'Q'])}<{bsm}> o {text}"
    return text


def _linear_spec(rng: random.Random) -> Any:
    if rng.random() < 0.2:
        return _value(rng)
    width = rng.randint(0, 3)
    return {rng.choice(["lane", "register", "warp", "x", "_y", "if", "a b"]):
            [[rng.choice([0, 1, 2, 8, 2**32, -1, 1.5, "1"]) for _ in range(width or
              rng.randint(0, 3))] for _ in range(rng.randint(0, 12))]
            for _ in range(rng.randint(0, 4))}


def _csv(rng: random.Random) -> bytes:
    if rng.random() < 0.2:
        return rng.randbytes(rng.randint(0, 200))
    columns = rng.randint(1, 5)
    rows = [",".join(rng.choice(["a", "b", "y", "1x", ""]) for _ in range(columns))]
    inputs = [rng.choice([1, 2, 3, 4]) for _ in range(columns)]
    for _ in range(rng.randint(0, 40)):
        rows.append(",".join(str(rng.choice([rng.randrange(n) for n in inputs] +
                                            [-1, 10**19, "x"])) for _ in range(columns)))
    return "\n".join(rows).encode()


def _valid_layout(rng: random.Random, n: int, pinned: str) -> tuple[str, str]:
    """A [layout] entry that parses, over the grid's a (4) and b (3), with one output named
    l<n> or v<n>: a small CuTe layout (maybe swizzled), a linear one, or the pinned table."""
    name, out = f"l{n}", rng.choice([f"l{n}", f"v{n}"])
    form = rng.randrange(3)
    if form == 0:
        rows, cols = rng.choice([4, 2, 8]), rng.choice([3, 1, 6])
        layout = f"({rows},{cols}):({rng.randint(0, 9)},{rng.randint(-4, 40)})"
        if rng.random() < 0.3:
            bits, base, shift = rng.randint(0, 2), rng.randint(0, 2), rng.randint(-3, 3)
            layout = f"Swizzle<{bits},{base},{shift}> o {layout}"
        of = rng.choice(['["a", "b"]', '["b", "a + 1"]'])
        body = f"cute = {json.dumps(layout)}\nof = {of}"
    elif form == 1:
        lane = [[rng.randint(0, 9)] for _ in range(rng.randint(1, 3))]
        register = [[rng.randint(0, 9)] for _ in range(rng.randint(1, 2))]
        body = (f"linear = {{ lane = {lane}, register = {register} }}\n"
                'of = { lane = "a", register = "b" }')
    else:
        body = f'table = "t.csv"\nsha256 = "{pinned}"\nof = ["a", "b"]'
    return f"[layout.{name}]\n{body}\nout = [\"{out}\"]", out


def _any_layout(rng: random.Random, n: int, pinned: str) -> str:
    form = rng.choice(["cute", "linear", "table"])
    body = {"cute": f"cute = {json.dumps(_cute_text(rng))}",
            "linear": f"linear = {_toml(_linear_spec(rng))}",
            "table": f'table = "t.csv"\nsha256 = "{pinned}"'}[form]
    of = rng.choice(['["a", "b"]', '["a"]', '{ lane = "a", register = "b" }',
                     '["a + (b", "b"]', "1"])
    out = rng.choice(["", f'out = ["v{n}"]', 'out = ["p", "q"]'])
    return f"[layout.l{n}]\n{body}\nof = {of}\n{out}"


def _table_csv(rng: random.Random) -> bytes:
    """Mostly a valid table over a (4) x b (3), one output; else anything."""
    if rng.random() < 0.4:
        return _csv(rng)
    rows = ["a,b,y"] + [f"{i},{j},{rng.randint(-5, 50)}" for j in range(3) for i in range(4)]
    rng.shuffle(rows[1:])
    return "\n".join(rows).encode()


def layout_case(rng: random.Random, work: Path, case: int) -> None:
    import hashlib

    import numpy as np
    import xarray as xr

    from probelab.errors import UsageError
    from probelab.hypothesis import evaluate_claim, parse_hypothesis
    from probelab.layouts import parse_cute, parse_linear, parse_table

    kind = rng.randrange(4)
    try:
        if kind == 0:
            parse_cute(_cute_text(rng))
        elif kind == 1:
            parse_linear(_linear_spec(rng))
        elif kind == 2:
            parse_table(_csv(rng), rng.randint(-1, 4))
        else:
            table = _table_csv(rng)
            (work / "t.csv").write_bytes(table)
            pinned = hashlib.sha256(table).hexdigest() if rng.random() < 0.7 else "0" * 64
            entries, outs = [], []
            for n in range(rng.randint(0, 3)):
                if rng.random() < 0.8:
                    entry, out = _valid_layout(rng, n, pinned)
                    outs.append(out)
                else:
                    entry = _any_layout(rng, n, pinned)
                entries.append(entry)
            used = rng.choice([" + ".join(outs) or "1", " ^ ".join(outs) or "a", "l0", "v9"])
            text = ('schema = 1\nid = "fuzz"\nprobe = "toy"\nclaim = "c"\ncoordinates = '
                    f'"raw"\n[predict]\nvalue = "{used}"\n' + "\n".join(entries))
            h = parse_hypothesis(work / f"fuzz{case}.toml", text.encode())
            grid = xr.Dataset(coords={"a": ("a", np.arange(4, dtype=np.uint32)),
                                      "b": ("b", np.arange(3, dtype=np.uint32))})
            evaluate_claim(h, grid, {"value": ("a", "b")})
    except UsageError:
        pass


# ---- dataset files -------------------------------------------------------------------------


def _base(path: Path) -> None:
    """A small valid probelab dataset at `path`, as `save` writes one."""
    import numpy as np
    import xarray as xr

    from probelab import dataset

    ds = xr.Dataset({"value": (("kernel", "a", "b"), np.arange(24, dtype=np.uint32)
                               .reshape(2, 3, 4))},
                    coords={"kernel": ("kernel", ["k0", "k1"]), "a": ("a", np.arange(3)),
                            "b": ("b", np.arange(4, dtype=np.uint32))})
    dataset.save(ds, path, {"probe": "toy", "target": "sm_90", "simulated": True,
                            "kernels": {"k0": {}, "k1": {}}})


def _json_shapes(rng: random.Random) -> str:
    return rng.choice([
        "{}", "[]", "null", "1", '"x"', json.dumps({"probe": 1, "kernels": [1]}),
        "[" * rng.randint(10, 100_000) + "]" * rng.randint(0, 100_000),
        '{"a": ' * 40 + "1" + "}" * 40, json.dumps({"content_sha256": "0" * 64}),
        json.dumps({"kernels": {"k0": {"code_object_sha256": [None] * 5}}, "run": 7}),
        "\ud800" if rng.random() < 0.5 else "not json", "1" * 5000])


def _attribute(rng: random.Random) -> Any:
    import numpy as np

    return rng.choice([
        _json_shapes(rng), rng.randbytes(rng.randint(0, 64)), rng.randint(-2**63, 2**63 - 1),
        np.arange(rng.randint(0, 2000), dtype=rng.choice(["u1", "i8", "f4", "f8"])),
        np.array([b"\xff\xfe", b"x"]), 1.5, "x" * rng.randint(0, 100_000)])


def _mutate(rng: random.Random, path: Path) -> None:
    """One change of the file's structure, through HDF5 itself (a file it can write)."""
    import h5py
    import numpy as np

    with h5py.File(path, "r+") as f:
        names = list(f)
        name = rng.choice(names) if names else "value"
        roll = rng.randrange(16)
        new = f"fz{rng.randrange(10**6)}"
        if roll == 0:
            f.attrs["provenance"] = _json_shapes(rng)
        elif roll == 1:
            target = f if rng.random() < 0.5 else f[name]
            target.attrs[rng.choice(["provenance", "probelab_schema", "coordinates",
                                     "DIMENSION_LIST", "CLASS", "NAME", "x"])] = _attribute(rng)
        elif roll == 2:
            f[new] = h5py.ExternalLink(rng.choice(["other.h5", "/dev/zero", str(path)]),
                                       rng.choice(["/value", "/", "/x"]))
        elif roll == 3:
            f[new] = h5py.SoftLink(rng.choice(["/value", "/nowhere", f"/{new}"]))
        elif roll == 4:
            f[new] = f[name]  # a hard link: one object under two names
        elif roll == 5:
            raw = path.with_name("raw.bin")
            raw.write_bytes(rng.randbytes(96))
            f.create_dataset(new, (24,), "u4", external=[(raw.name, 0, 96)])
        elif roll == 6:
            layout = h5py.VirtualLayout((24,), "u4")
            layout[...] = h5py.VirtualSource(str(path), "value", shape=(24,))
            f.create_virtual_dataset(new, layout)
        elif roll == 7:
            f.create_dataset(new, data=np.arange(100, dtype="u4"),
                             **rng.choice([{"compression": "lzf"}, {"fletcher32": True},
                                           {"scaleoffset": 0}, {"compression": "gzip"},
                                           {"shuffle": True}]))
        elif roll == 8:  # huge on paper: chunked, nothing written
            n = rng.choice([2**20, 2**27, 2**28 + 7, 2**29, 2**32])
            f.create_dataset(new, (n,), rng.choice(["u1", "u4", "f8"]), chunks=(4096,))
        elif roll == 9:
            dtype = rng.choice([np.dtype([("a", "u4"), ("b", "f8")]), h5py.vlen_dtype("u4"),
                                h5py.string_dtype(), np.dtype("c16"), np.dtype("f2"),
                                np.dtype("?"), h5py.enum_dtype({"a": 0, "b": 1}, "u1"),
                                np.dtype("S7"), np.dtype("i8")])
            f.create_dataset(new, (rng.randint(0, 6),), dtype)
        elif roll == 10:
            del f[name]
        elif roll == 11:
            grp = f.create_group(new)
            grp.create_dataset("v", data=np.arange(6, dtype="u4"))
        elif roll == 12:  # dimensions unnamed (as attributes: HDF5's own dimension-scale
            # calls crash the writer, not the reader, on the corrupt lists other rolls make)
            obj = f.get(name)
            if isinstance(obj, h5py.Dataset) and "DIMENSION_LIST" in obj.attrs:
                del obj.attrs["DIMENSION_LIST"]
        elif roll == 13:
            f.move(name, new)
        elif roll == 14:
            f.create_dataset(new, data=np.arange(rng.randint(0, 50), dtype="u4"))
            if rng.random() < 0.5 and "a" in f:
                f[new].dims[0].attach_scale(f["a"]) if f[new].size == 3 else None
        else:
            f.attrs["probelab_schema"] = rng.choice([1, 2, "1", np.array([1, 1])])


def dataset_case(rng: random.Random, work: Path, case: int) -> None:
    from probelab import dataset
    from probelab.errors import UsageError

    path = work / "case.nc"
    path.unlink(missing_ok=True)
    _base(path)
    for _ in range(rng.randint(1, 4)):
        # HDF5 would not make some: the next change
        with contextlib.suppress(OSError, ValueError, TypeError, KeyError, RuntimeError,
                                 AttributeError):
            _mutate(rng, path)
    if rng.random() < 0.1:
        data = path.read_bytes()
        path.write_bytes(data[:rng.randrange(len(data) + 1)])
    print(f"reading {case}", flush=True)  # what dies from here on is the lab's
    try:
        read = dataset.read_summarised(path)
        ds = read.open()
        dataset.tampered(ds, read.summary.content)
        dataset.stored_provenance(path)
        dataset.load(path)
    except UsageError:
        pass


def floor_case(rng: random.Random, work: Path, case: int) -> None:
    rng.random()


CASES = {"expr": expr_case, "toml": toml_case, "layout": layout_case, "dataset": dataset_case,
         "floor": floor_case}


# ---- the worker and the runner -------------------------------------------------------------


def work(name: str, seed: int, start: int) -> None:
    """Run cases of `name` from `start` for ever, saying each one's start and outcome."""
    case = CASES[name]
    with tempfile.TemporaryDirectory(prefix=f"fuzz-{name}-") as folder:
        os.environ["PROBELAB_CACHE"] = str(Path(folder) / "cache")
        os.chdir(folder)  # a relative external file resolves here, never in the lab
        for i in itertools.count(start):
            print(f"start {i}", flush=True)
            try:
                case(random.Random(seed * 1_000_003 + i), Path(folder), i)
            except Exception as exc:  # what the fuzzer is for: said, and the next case
                frames = traceback.extract_tb(exc.__traceback__)
                ours = [f for f in frames if "/probelab/" in f.filename] or frames
                where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}"
                print(f"crash {i} {type(exc).__name__} at {where}: {str(exc)[:300]!r}",
                      flush=True)
            print(f"done {i}", flush=True)


def _rss(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return float(line.split()[1]) * 1024
    except OSError:
        pass
    return 0.0


def supervise(name: str, seconds: float, seed: int) -> dict[str, Any]:
    """Run the fuzzer `name` for `seconds` in watched workers; what it found."""
    found: dict[str, list] = {"crashes": [], "hangs": [], "memory": [], "generator": []}
    cases, start, peak, slowest = 0, 0, 0.0, 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        worker = subprocess.Popen(
            [sys.executable, __file__, "--worker", name, "--seed", str(seed), "--start",
             str(start)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            cwd=ROOT, env=os.environ | {"PYTHONPATH": str(ROOT)})
        current, began, reading = None, time.monotonic(), name != "dataset"
        try:
            while time.monotonic() < end:
                ready, _, _ = select.select([worker.stdout], [], [], 0.2)
                peak = max(peak, rss := _rss(worker.pid))
                if rss > MAX_RSS and current is not None:
                    found["memory" if reading else "generator"].append(
                        {"case": current, "rss": rss})
                    break
                if current is not None and time.monotonic() - began > DEADLINES[name]:
                    found["hangs" if reading else "generator"].append(
                        {"case": current, "seconds": DEADLINES[name]})
                    break
                if not ready:
                    continue
                line = worker.stdout.readline()
                if not line:  # the worker died: in the lab's code, or making the input
                    if current is not None:
                        kind = "crashes" if reading else "generator"
                        found[kind].append({"case": current, "exit": worker.wait()})
                    break
                word, number, *rest = line.rstrip("\n").split(" ", 2)
                if word == "start":
                    current, began = int(number), time.monotonic()
                    reading = name != "dataset"
                elif word == "reading":
                    reading = True
                elif word == "done":
                    cases += 1
                    slowest = max(slowest, time.monotonic() - began)
                    current = None
                elif word == "crash":
                    found["crashes"].append({"case": int(number), "error": rest[0]})
        finally:
            worker.kill()
            worker.wait()
        start = (current if current is not None else start) + 1
        if current is None:  # the time ran out between cases
            break
    return {"cases": cases, "seconds": seconds, "cases_per_second": round(cases / seconds, 2),
            "slowest_case_s": round(slowest, 3), "peak_rss_mb": round(peak / 1e6, 1),
            "seed": seed, **found,  # "generator": the fuzzer's own writer died, not counted
            "failures": sum(len(v) for k, v in found.items() if k != "generator")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="each fuzzer's time")
    parser.add_argument("--only", default="expr,toml,layout,dataset")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--worker", choices=sorted(CASES), help=argparse.SUPPRESS)
    parser.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        work(args.worker, args.seed, args.start)
        return
    import probelab

    results: dict[str, Any] = {
        "command": " ".join(["python", "bench/fuzz.py", *sys.argv[1:]]),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "probelab": probelab.__version__,
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                                 text=True).stdout.strip(),
        "floor": supervise("floor", 10.0, args.seed)}
    for name in args.only.split(","):
        print(f"fuzzing {name} for {args.minutes} min", file=sys.stderr, flush=True)
        results[name] = supervise(name, args.minutes * 60, args.seed)
    report(results, args.json)
    sys.exit(1 if any(results[n]["failures"] for n in args.only.split(",")) else 0)


if __name__ == "__main__":
    main()
