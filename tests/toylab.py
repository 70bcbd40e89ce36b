"""A throwaway lab for tests: a git repo with one tiny probe ("toy") and helpers.

The toy probe observes `value` over a 16 x 8 grid of (a, b); its simulated device computes
a + b. Nothing here touches the real repository: every lab lives in a pytest tmp_path.
"""

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from probelab import dataset, manifest, prereg
from probelab.notary.verdicts import Judgement
from probelab.probe import catalog
from probelab.sweep import run_sweep

TOY_PROBE = '''"""toy: a test-only probe. value(a, b) = a + b on the simulated device."""

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np
import xarray as xr

from probelab.probe import Evidence, Kernel, Launch, stack_kernels

HERE = Path(__file__).parent
N_A, N_B = 16, 8


class Toy:
    id = "toy"
    version = "1"
    summary = "test-only probe: value = a + b"
    targets = ("sm_*",)
    observables = MappingProxyType({"value": ("a", "b")})
    plots = MappingProxyType({})

    def kernels(self, vendor: str) -> list[Kernel]:
        if vendor != "nvidia":
            return []
        return [Kernel("add", "probe_add", HERE / "toy.cu", "nvidia", Evidence(r"IADD3"))]

    def stimulus(self) -> xr.Dataset:
        return xr.Dataset(
            coords={
                "a": ("a", np.arange(N_A, dtype=np.uint32)),
                "label": ("a", np.array([f"row{i:02d}" for i in range(N_A)])),
                "b": ("b", np.arange(N_B, dtype=np.uint32)),
            }
        )

    def launch(self, stimulus: xr.Dataset) -> Launch:
        cells = stimulus.sizes["a"] * stimulus.sizes["b"]
        return Launch(
            inputs={"a": stimulus["a"].values, "b": stimulus["b"].values},
            outputs={"out": cells},
            threads=cells,
        )

    def assemble(
        self, stimulus: xr.Dataset, outputs: Mapping[str, Mapping[str, np.ndarray]]
    ) -> xr.Dataset:
        ds, values = stack_kernels(stimulus, outputs, "out", ("a", "b"))
        ds["value"] = (("kernel", "a", "b"), values)
        return ds

    def simulate(self, kernel: Kernel, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        a = inputs["a"].astype(np.uint64)[:, None]
        b = inputs["b"].astype(np.uint64)[None, :]
        return {"out": ((a + b) & 0xFFFFFFFF).astype(np.uint32).reshape(-1)}


PROBE = Toy()
'''

TOY_CU = """// toy.cu: never compiled by the tests (the sim backend does not compile).
extern "C" __global__ void probe_add(const unsigned* a, const unsigned* b, unsigned* out) {}
"""

# probelab.probe.load_sibling caches probe modules in sys.modules by folder name, so a toy
# probe from an earlier test's lab would otherwise be reused (with that lab's paths).
TOY_MODULE = "probelab_probe_toy_probe"


REPO = Path(__file__).resolve().parents[1]


def copy_probe(lab_root: Path, folder: str) -> Path:
    """Copy the repository's probe `folder` into another lab (its caches left behind)."""
    import shutil

    return shutil.copytree(REPO / "probes" / folder, lab_root / "probes" / folder,
                           ignore=shutil.ignore_patterns("__pycache__"))


class CodeCopy:
    """A copy of the running probelab's Python files that a test edits: from the copy's
    making on, every cached answer is keyed by it (probelab.depends), as the edited code
    would key it. The code that runs is the real one: only the keys see the edits."""

    def __init__(self, dest: Path, monkeypatch: Any) -> None:
        import shutil

        from probelab import depends

        self.root = shutil.copytree(Path(depends.__file__).parent, dest / "probelab",
                                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        self._monkeypatch = monkeypatch
        self._install()

    def edit(self, module_path: str, text: str = "\n# edited\n") -> None:
        """Append `text` to probelab/`module_path` (e.g. "plot.py") in the copy."""
        path = self.root / module_path
        path.write_text(path.read_text() + text)
        self._install()

    def _install(self) -> None:
        from probelab import depends

        self._monkeypatch.setattr(depends, "_tree", depends.Tree(self.root))


def without_history(root: Path, copy: Path, monkeypatch) -> Path:
    """`copy` made the lab: a copy of the lab at `root` without its .git, as a tarball or the
    GPU machine's copy is (PROBELAB_ROOT and cwd moved to it)."""
    import shutil

    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".git"))
    monkeypatch.setenv("PROBELAB_ROOT", str(copy))
    monkeypatch.chdir(copy)
    catalog.cache_clear()
    return copy


def checked_with_and_without_history(hypothesis: Path, data: Path, copy: Path,
                                     monkeypatch) -> tuple[Judgement, Judgement]:
    """The judgement of a sealed hypothesis on a dataset outside the lab, in the lab (with
    its history) and then in a copy of it without one (`without_history`)."""
    from probelab.check import assess
    from probelab.paths import lab_root

    root = lab_root()
    with_history = assess(hypothesis, data)
    without_history(root, copy, monkeypatch)
    return with_history, assess(copy / hypothesis.relative_to(root), data)


def invoke(*args: str | Path):
    """Run the CLI in-process; an unexpected exception is raised (it would also exit 1), so
    only deliberate exits reach the caller."""
    from typer.testing import CliRunner

    from probelab.cli import app

    result = CliRunner().invoke(app, [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {out.stderr}")
    return out.stdout.strip()


def _toml_string(text: str) -> str:
    return json.dumps(text)  # a JSON string of printable text is a TOML basic string


@dataclass
class ToyLab:
    root: Path
    _runs: int = field(default=0)

    # ---- git -------------------------------------------------------------------------------
    def git(self, *args: str) -> str:
        return git(self.root, *args)

    def head(self) -> str:
        return self.git("rev-parse", "HEAD")

    def commit_count(self) -> int:
        return int(self.git("rev-list", "--count", "HEAD"))

    # ---- paths -----------------------------------------------------------------------------
    @property
    def ledger(self) -> Path:
        return self.root / "preregistrations" / "LEDGER.jsonl"

    @property
    def data(self) -> Path:
        return self.root / "data"

    def probe(self):
        return catalog().probes["toy"]

    # ---- hypotheses ------------------------------------------------------------------------
    def write_hyp(self, hyp_id: str, predict_expr: str,
                  translations: dict[str, dict[str, str]] | None = None,
                  kernels: list[str] | None = None, parent: str | None = None,
                  probe: str = "toy", folder: Path | None = None,
                  claim: str = "value is the sum of a and b",
                  filename: str | None = None) -> Path:
        lines = ["schema = 1", f"id = {_toml_string(hyp_id)}", f"probe = {_toml_string(probe)}",
                 f"claim = {_toml_string(claim)}", 'coordinates = "raw"']
        if kernels is not None:
            lines.append("kernels = [" + ", ".join(map(_toml_string, kernels)) + "]")
        if parent is not None:
            lines.append(f"parent = {_toml_string(parent)}")
        lines += ["", "[predict]", f"value = {_toml_string(predict_expr)}"]
        for name, mapping in (translations or {}).items():
            lines += ["", f"[translations.{name}]"]
            lines += [f"{coord} = {_toml_string(expr)}" for coord, expr in mapping.items()]
        path = (folder or self.root / "preregistrations" / probe) / (filename or f"{hyp_id}.toml")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    def seal(self, path: Path) -> dict[str, Any]:
        return prereg.seal(path)

    # ---- datasets --------------------------------------------------------------------------
    def sim_dataset(self) -> Path:
        """A simulated sweep of the toy probe (repeats=2) under sim-data/ (one folder per
        call, since dataset names only have one-second resolution)."""
        self._runs += 1
        out_root = self.root / "sim-data"
        if self._runs > 1:
            out_root = out_root / f"run{self._runs}"
        return run_sweep("toy", "sim", out_root=out_root, repeats=2).path

    def as_measured(self, path: Path, name: str | None = None, **overrides: Any) -> Path:
        """TEST FIXTURE ONLY: fake a measurement from a simulated dataset.

        Copies the dataset to data/PROBE/TARGET/ and rewrites its provenance as a measurement's
        (MEASURED, plus any `overrides`, e.g. git_head or utc) and pins it, purely so the
        check/archive logic can be exercised in this throwaway lab. Never do this to real data.
        """
        ds = dataset.load(path)
        prov = dataset.provenance(ds) | MEASURED
        prov["kernels"] = {k: v | {"evidence": {"ok": True, "fixture": True}}
                           for k, v in prov["kernels"].items()}
        for key, value in overrides.items():
            if value is _DELETE:
                prov.pop(key, None)
            else:
                prov[key] = value
        target = self.data / str(prov.get("probe")) / str(prov.get("target")) / (name or path.name)
        if target.exists():
            if name:
                raise FileExistsError(target)
            target = next(target.with_name(f"{target.stem}-{n}.nc") for n in range(2, 99)
                          if not target.with_name(f"{target.stem}-{n}.nc").exists())
        dataset.save(ds, target, prov)
        self.pin(target)
        return target

    def pin(self, path: Path) -> None:
        """TEST FIXTURE ONLY: pin a dataset in the manifest as a sweep into data/ would."""
        ds = dataset.load(path)
        prov = dataset.provenance(ds)
        manifest.pin(path, dataset.computed_content_sha256(ds), prov.get("probe", "toy"),
                      prov.get("target", "sm_90"))


# what a measurement's provenance says where a simulated one says "sim"
MEASURED = {"simulated": False, "backend": "cuda", "device": "Toy Device (test fixture)",
            "device_details": {}, "toolchain": {"compiler": "test fixture"}}
_DELETE = object()
DELETE = _DELETE  # pass as an override value to drop a provenance key


def make_toylab(root: Path) -> ToyLab:
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Toy Tester")
    git(root, "config", "user.email", "toy@example.invalid")
    git(root, "config", "commit.gpgsign", "false")
    git(root, "config", "core.hooksPath", str(root / ".git" / "hooks"))
    toy = root / "probes" / "toy"
    toy.mkdir(parents=True)
    (toy / "probe.py").write_text(TOY_PROBE)
    (toy / "toy.cu").write_text(TOY_CU)
    (root / "preregistrations" / "toy").mkdir(parents=True)
    (root / "data").mkdir()
    (root / ".gitignore").write_text("/sim-data/\n__pycache__/\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "toy lab")
    sys.modules.pop(TOY_MODULE, None)
    catalog.cache_clear()
    return ToyLab(root)
