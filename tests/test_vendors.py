"""The vendor table: every vendor one folder, found by name; a third party's vendor is a
folder named in PROBELAB_VENDORS, and runs the simulated path like any other."""

import json
import re
import sys
from pathlib import Path

import pytest
from toylab import ToyLab, git, invoke

from probelab import backends, dataset, fleet, vendors
from probelab.doctor import diagnose
from probelab.errors import Unavailable, UsageError
from probelab.probe import catalog
from probelab.sweep import run_sweep
from probelab.toolchains import Toolchain

TOYCO = '''"""toyco: a made-up vendor, as a third party would add one: one folder."""

import re

from probelab.isa import Instruction, Isa
from probelab.vendors import Driver, Vendor

ISA = Isa(name="toy", register=re.compile(r"^(?P<bank>t)(?P<first>\\d+)(?P<last>)$"),
          loads=re.compile(r"^tload$"), no_destination=re.compile(r"^tstore$"),
          narrow=re.compile(r"^$"))


def parse(text: str) -> dict[str, list[Instruction]]:
    """`name: op a, b` lines, one function per name."""
    out: dict[str, list[Instruction]] = {}
    for n, line in enumerate(text.splitlines()):
        name, _, body = line.partition(":")
        op, _, rest = body.strip().partition(" ")
        out.setdefault(name, []).append(Instruction(n, op, tuple(
            r.strip() for r in rest.split(",") if r.strip()), text=body.strip()))
    return out


VENDOR = Vendor("toyco", ("toy_1", "toy_2"), "toy_*", ISA, parse,
                drivers=(Driver("toydev", __file__, "json", "toyco's driver", "toyco",
                                "toyco device"),),
                sim_targets=("toy_1",), known="toyco's toy_1 and toy_2", examples=("toy_1",),
                padding=("tnop",))
'''

# toyco's device backend, in its own folder: it "runs" a kernel by the probe's model, as a
# device would run it, after building the code object its parser reads (the gate's input)
TOYDEV = '''"""toydev: toyco's device (a test's stand-in: the probe's model is its silicon)."""

import numpy as np

from probelab.backends import DeviceInfo, device_status
from probelab.backends.guards import framed, unframe
from probelab.codeobject import CodeObject
from probelab.limits import DEFAULT_TIMEOUT_S
from probelab.vendors import VENDORS

UUID = "00000000-0000-4000-8000-000000000001"


class ToyDevice:
    name = "toydev"
    vendor = "toyco"
    simulated = False

    def __init__(self, probe):
        self.probe, self.isa, self.timeout_s = probe, VENDORS["toyco"].isa, DEFAULT_TIMEOUT_S

    def device(self):
        return DeviceInfo("toyco T1", "toy_1", {"uuid": UUID})

    def compile(self, kernel, target):
        text = kernel.source_text()
        return CodeObject(target, text.encode(), VENDORS["toyco"].parse(text),
                          {"compiler": "toyas 1.0", "name": "toyas-1"})

    def run(self, code, kernel, launch, poison):
        results = self.probe.simulate(kernel, launch.inputs)
        return {name: unframe(name, framed(np.asarray(results[name], np.uint32).reshape(-1)))
                for name in launch.outputs}

    def describe(self):
        return {"compiler": "toyas 1.0", "name": "toyas-1"}


def make(probe, target):
    return ToyDevice(probe)


def status():
    return device_status(lambda: ToyDevice(None).device(), lambda d: "a test's device")
'''

TOYCO_PROBE = '''"""toyco-add: value(a, b) = a + b, on toyco's targets only (a simulated device)."""

from pathlib import Path
from types import MappingProxyType

import numpy as np
import xarray as xr

from probelab.probe import Evidence, Kernel, Launch, stack_kernels

HERE = Path(__file__).parent


class ToycoAdd:
    id = "toyco-add"
    version = "1"
    summary = "test-only probe of a made-up vendor: value = a + b"
    targets = ("toy_*",)
    observables = MappingProxyType({"value": ("a", "b")})
    plots = MappingProxyType({})

    def kernels(self, vendor):
        if vendor != "toyco":
            return []
        return [Kernel("add", "toy_add", HERE / "add.toy", "toyco",
                       Evidence(r"tadd", operands=("unmodified", "unmodified")))]

    def stimulus(self):
        return xr.Dataset(coords={"a": ("a", np.arange(4, dtype=np.uint32)),
                                  "b": ("b", np.arange(3, dtype=np.uint32))})

    def launch(self, stimulus):
        cells = stimulus.sizes["a"] * stimulus.sizes["b"]
        return Launch(inputs={"a": stimulus["a"].values, "b": stimulus["b"].values},
                      outputs={"out": cells}, threads=cells)

    def assemble(self, stimulus, outputs):
        ds, values = stack_kernels(stimulus, outputs, "out", ("a", "b"))
        ds["value"] = (("kernel", "a", "b"), values)
        return ds

    def simulate(self, kernel, inputs):
        a = inputs["a"].astype(np.uint64)[:, None]
        b = inputs["b"].astype(np.uint64)[None, :]
        return {"out": ((a + b) & 0xFFFFFFFF).astype(np.uint32).reshape(-1)}


PROBE = ToycoAdd()
'''


@pytest.fixture
def toyco(toylab: ToyLab, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A third vendor, toyco (targets toy_1, toy_2), in a folder outside probelab named by
    PROBELAB_VENDORS, and a probe of its in the toy lab."""
    folder = tmp_path / "third-party" / "toyco"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(TOYCO)
    (folder / "ops_toydev.py").write_text(TOYDEV)
    probe = toylab.root / "probes" / "toyco_add"
    probe.mkdir()
    (probe / "probe.py").write_text(TOYCO_PROBE)
    (probe / "add.toy").write_text("".join(f"toy_add: {line}\n" for line in (
        "tload t0, a", "tload t1, b", "tadd t2, t0, t1")))
    git(toylab.root, "add", "-A")
    git(toylab.root, "commit", "-q", "-m", "toyco-add")
    monkeypatch.setenv(vendors.ENV, str(folder.parent))
    vendors.reload()
    catalog.cache_clear()
    yield toylab
    monkeypatch.delenv(vendors.ENV)
    vendors.reload()
    sys.modules.pop("probelab_probe_toyco_add_probe", None)
    catalog.cache_clear()
    assert "toyco" not in vendors.VENDORS and "probelab.vendors.toyco" not in sys.modules


def test_the_table_is_its_folders() -> None:
    folders = sorted(p.parent.name for p in vendors.HERE.glob("*/__init__.py"))
    assert sorted(vendors.VENDORS) == folders
    assert list(vendors.VENDORS) == ["nvidia", "amd"]  # by rank: the default device's order
    for vendor in vendors.VENDORS.values():
        assert isinstance(vendor.tools(), Toolchain)
        assert all(d.backend in backends.names() for d in vendor.drivers)
        assert all(vendors.of(t) is vendor for t in vendor.targets)
        assert vendor.sim_targets and set(vendor.sim_targets) <= set(vendor.targets)
        assert vendor.machine_module() is not None
    assert {*vendors.device_backends(), "toolchain"} == dataset.MEASURING_BACKENDS
    assert set(vendors.fleet_backends()) == {*vendors.device_backends(), "sim", "static"}
    assert set(vendors.device_backends()) | {"sim"} == set(backends.names())


def test_every_kernel_source_declares_uint32_as_its_vendors_table_says() -> None:
    """A vendor's `uint32_typedef` is what its probes' sources (files and rendered) say, so
    a kit that renders a source from the table writes what the archive's sources hold."""
    said: dict[str, set[str]] = {}
    for probe in catalog().probes.values():
        for name in vendors.VENDORS:
            for kernel in probe.kernels(name):
                text = kernel.text if kernel.text is not None else kernel.source.read_text()
                said.setdefault(name, set()).update(
                    line + "\n" for line in text.splitlines()
                    if re.match(r"typedef .* uint32_t;", line))
    assert said == {name: {vendor.uint32_typedef} for name, vendor in vendors.VENDORS.items()}


def test_the_default_backend_is_the_first_whose_driver_is_here(monkeypatch) -> None:
    found = {d.backend: d.found() and d.installed()
             for v in vendors.VENDORS.values() for d in v.drivers}
    first = next((b for b, here in found.items() if here), vendors.device_backends()[0])
    assert vendors.default_backend() == first
    monkeypatch.setattr(vendors.Driver, "found", lambda self: self.backend == "hip")
    monkeypatch.setattr(vendors.Driver, "installed", lambda self: True)
    assert vendors.default_backend() == "hip"
    monkeypatch.setattr(vendors.Driver, "found", lambda self: False)
    assert vendors.default_backend() == vendors.device_backends()[0]  # it says what is missing


def test_a_third_vendor_is_one_folder(toyco: ToyLab, tmp_path: Path) -> None:
    assert list(vendors.VENDORS) == ["nvidia", "amd", "toyco"]
    assert vendors.vendor("toy_2") == "toyco" and vendors.of("toy_1").name == "toyco"
    assert vendors.TARGETS["toyco"] == ("toy_1", "toy_2")
    with pytest.raises(UsageError, match="toyco's toy_1 and toy_2"):
        vendors.vendor("toy_9")
    with pytest.raises(Unavailable, match="no toolchain builds toyco"):
        vendors.of("toy_1").tools()
    # its parser and register tables are what the gate reads
    code = vendors.of("toy_1").parse((toyco.root / "probes" / "toyco_add" / "add.toy")
                                     .read_text())["toy_add"]
    assert [i.mnemonic for i in code] == ["tload", "tload", "tadd"]
    assert vendors.of("toy_1").isa.registers("t2") == ["t2"]

    listed = invoke("list", "--json")
    assert listed.exit_code == 0, listed.output
    entry = next(p for p in json.loads(listed.stdout)["probes"] if p["id"] == "toyco-add")
    assert entry["kernels"] == {"toyco": ["add"]}

    # the simulated path, end to end: the default target is the vendor's own sim target
    saved = run_sweep("toyco-add", "sim", out_root=tmp_path / "sim-data", repeats=2)
    prov = dataset.stored_provenance(saved.path)
    assert (prov["target"], prov["backend"], prov["simulated"]) == ("toy_1", "sim", True)
    assert saved.path.parent.name == "toy_1"
    again = invoke("sweep", "toyco-add", "--backend", "sim", "--target", "toy_2", "--out",
                   tmp_path / "cli-sim")
    assert again.exit_code == 0, again.output
    assert list((tmp_path / "cli-sim").rglob("toy_2/*.nc"))
    # another vendor's device backend refuses its targets
    wrong = invoke("sweep", "toyco-add", "--backend", "cuda", "--target", "toy_1")
    assert wrong.exit_code == 2 and "toyco target" in wrong.output


def test_a_third_vendors_device_measures(toyco: ToyLab, tmp_path: Path, monkeypatch) -> None:
    """Its backend file in its folder is found by name; what it measures is a measurement
    (its backend measures: derived from its row), gated on its own ISA tables, that records
    the vendor code it ran: from outside the lab, pinned by no commit, it never counts."""
    assert "toydev" in backends.names() and "toydev" in vendors.measuring_backends()
    assert vendors.measuring("toy_2") == "toydev"
    assert "toydev" in vendors.fleet_backends()
    assert {c["name"]: c["ok"] for c in diagnose()["checks"]}["backend toydev"]
    # where its driver is the one this machine has, it is the default device
    monkeypatch.setattr(vendors.Driver, "found", lambda self: self.backend == "toydev")
    assert vendors.default_backend() == "toydev"
    # the fleet plans its targets on it
    planned = fleet.plan(["toyco-add"], [fleet.resource("toydev", "toy_2")])
    assert [(t.target, t.backend) for t in planned.tasks] == [("toy_2", "toydev")]
    saved = run_sweep("toyco-add", "toydev", out_root=tmp_path / "measured", repeats=2)
    prov = dataset.stored_provenance(saved.path)
    assert (prov["backend"], prov["target"], prov["simulated"]) == ("toydev", "toy_1", False)
    # its folder lies outside the lab: no commit pins what ran, so the data never count
    (code,) = prov["vendor_code"]
    assert code["vendor"] == "toyco" and code == vendors.unpinned()[0]
    (why,) = dataset.contradictions(prov)
    assert "it ran vendor code from outside the lab" in why
    evidence = prov["kernels"]["add"]["evidence"]
    assert evidence["ok"] and evidence["matches"] == ["tadd t2, t0, t1"]
    assert [t["reaches"] for t in evidence["operands"]] == ["unmodified", "unmodified"]
    assert prov["kernels"]["add"]["histogram"] == {"tadd": 1, "tload": 2}


def test_a_vendor_folder_must_declare_its_row(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "vendors" / "broken").mkdir(parents=True)
    (tmp_path / "vendors" / "broken" / "__init__.py").write_text("VENDOR = None\n")
    monkeypatch.setenv(vendors.ENV, str(tmp_path / "vendors"))
    vendors.reload()
    try:
        with pytest.raises(UsageError, match="must declare VENDOR"):
            vendors.of("sm_90")
    finally:
        monkeypatch.delenv(vendors.ENV)
        vendors.reload()
    assert vendors.of("sm_90").name == "nvidia"


def test_a_vendor_folder_may_not_take_a_backend_name_already_taken(tmp_path: Path,
                                                                    monkeypatch) -> None:
    """A folder whose driver is named `sim` (or another vendor's backend) would make what
    that backend runs count as measured wherever the folder is on PROBELAB_VENDORS."""
    folder = tmp_path / "vendors" / "posing"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(
        "from probelab.vendors import Driver, Vendor\n"
        "VENDOR = Vendor('posing', ('pose_1',), 'pose_*', None, lambda text: {},\n"
        "                drivers=(Driver('sim', '/nonexistent', 'json', 'none', 'none'),))\n")
    monkeypatch.setenv(vendors.ENV, str(tmp_path / "vendors"))
    vendors.reload()
    try:
        with pytest.raises(UsageError, match="backend 'sim' is no vendor's"):
            vendors.table()
    finally:
        monkeypatch.delenv(vendors.ENV)
        vendors.reload()
    assert "sim" not in vendors.measuring_backends()
