"""tma-swizzle-b8/-b16/-b32: where Hopper's tensor memory accelerator puts each byte of a
box it loads (cp.async.bulk.tensor.2d, SASS UTMALDG.2D) under each tensor-map swizzle mode
(CU_TENSOR_MAP_SWIZZLE_NONE, _32B, _64B, _128B), for 1-, 2- and 4-byte elements (one probe
each: CU_TENSOR_MAP_DATA_TYPE_UINT8, _UINT16, _UINT32).

The global tile is 72 rows of 256 bytes; byte g of it is identified by g itself, sent in two
planes (`lo`: g & 0xFF, `hi`: g >> 8), each under its own tensor map, since no element of
one byte can hold a distinct id for every byte. One kernel loads one 1 KiB box from (row 3,
byte 32) per configuration and plane, each into its own 1 KiB-aligned 2 KiB region of
poisoned shared memory, and copies shared memory out as it lies; the decode reads, for each
shared byte offset, the global (row, element column, byte within the element) that landed
there, or -1 where the poison survived. The configurations: no swizzle (128-byte rows), each
swizzle with rows as wide as its span, and 64B and 128B swizzles with rows half as wide,
where "the chunk index XOR the row" and "XOR the address bits above the 128-byte row"
disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from probelab.probe import Evidence, Kernel, Launch, TensorMap, load_sibling

if TYPE_CHECKING:  # xarray is imported where a dataset is built: discovery needs none
    import xarray as xr

HERE = Path(__file__).parent
PITCH, ROWS = 256, 72  # the global tile: bytes per row, rows
X0, Y0 = 32, 3  # the box's first byte column and row in the global tile
BOX, REGION = 1024, 2048  # bytes per box, and per shared-memory region (tma_swizzle.cu)
POISON = 0xA5A5A5A5  # shared memory's every byte before the loads: id 0xA5A5, past the tile
UNWRITTEN = 0xFFFFFFFF  # -1 as the sealed files write it (predictions are uint32)
# (name, swizzle span in bytes, the box's inner bytes); the box has BOX // inner rows
CONFIGS = (("none", 0, 128), ("sw32", 32, 32), ("sw64", 64, 64), ("sw128", 128, 128),
           ("sw64_rows32", 64, 32), ("sw128_rows64", 128, 64))
PLANES = ("lo", "hi")
TYPES = {1: "UINT8", 2: "UINT16", 4: "UINT32"}
OBSERVABLES = ("g_row", "g_col", "g_byte")

# One UTMALDG.2D per map and no other tensor copy; the barrier armed with the boxes' bytes
# before them (expect_tx: SYNCS.ARRIVE.TRANS64), its wait after (try_wait:
# SYNCS.PHASECHK.TRANS64.TRYWAIT), its init (SYNCS.EXCH.64) and the two async-proxy fences
# (after the init, after the poison) before: each read off the sm_90a disassembly.
EVIDENCE = Evidence(r"UTMALDG\.2D", count=len(CONFIGS) * len(PLANES),
                    forbidden=(r"UTMALDG(?!\.2D$).*", r"UTMASTG.*", r"UBLKCP.*", r"LDGSTS.*"),
                    companions=((r"SYNCS\.EXCH\.64", "before", 1),
                                (r"FENCE\.VIEW\.ASYNC\.S", "before", 2),
                                (r"SYNCS\.ARRIVE\.TRANS64", "before", 1),
                                (r"SYNCS\.PHASECHK\.TRANS64\.TRYWAIT", "after", None)))

Law = Callable[[np.ndarray, int, int], np.ndarray]


def swizzle_atoms(s: np.ndarray, span: int, inner: int) -> np.ndarray:
    """The box byte a shared byte offset `s` holds, by CuTe's Swizzle<B,4,3> (B = log2 of
    the span's 16-byte chunks): bits [4, 4 + B) XOR bits [7, 7 + B), an involution. For the
    simulated device only: never evidence."""
    return s ^ (((s >> 7) & (span // 16 - 1)) << 4) if span else s


class TmaSwizzle:
    version = "1"
    targets = ("sm_90*",)
    excluded = MappingProxyType({"sm_[0-8]*": "tensor maps and cp.async.bulk.tensor are "
                                              "sm_90's and later",
                                 "sm_1??*": "measured and sealed for sm_90a"})
    observables = MappingProxyType({n: ("config", "offset") for n in OBSERVABLES})

    def __init__(self, element_bytes: int, law: Law = swizzle_atoms) -> None:
        self.element_bytes, self.law = element_bytes, law
        self.id = f"tma-swizzle-b{8 * element_bytes}"
        self.summary = (f"cp.async.bulk.tensor.2d (UTMALDG) of {8 * element_bytes}-bit "
                        "elements under each tensor-map swizzle: the global (row, column, "
                        "byte) at every shared byte")
        self.stimulus_facts = {"pitch": PITCH, "rows": ROWS, "poison": f"{POISON:#010x}",
                               "region": REGION, "id": "global byte offset, lo and hi planes",
                               "maps": [f"{c}_{p}" for c, _, _ in CONFIGS for p in PLANES]}

    def kernels(self, vendor: str) -> list[Kernel]:
        if vendor != "nvidia":
            return []
        return [Kernel("tma_swizzle", "probe_tma_swizzle", HERE / "tma_swizzle.cu", "nvidia",
                       EVIDENCE, options={"arch": "sm_90a"})]

    def stimulus(self) -> xr.Dataset:
        import xarray as xr

        n = len(CONFIGS)

        def along(values) -> tuple[str, np.ndarray]:
            return ("config", np.array(values, np.int32))

        return xr.Dataset(coords={
            "config": ("config", np.arange(n, dtype=np.uint32)),
            "mode": ("config", np.array([c for c, _, _ in CONFIGS])),
            "swizzle": along([s for _, s, _ in CONFIGS]),
            "inner": along([i for _, _, i in CONFIGS]),
            "box_bytes": along([BOX] * n), "element_bytes": along([self.element_bytes] * n),
            "x0": along([X0] * n), "y0": along([Y0] * n), "pitch": along([PITCH] * n),
            "offset": ("offset", np.arange(REGION, dtype=np.uint32),
                       {"description": "byte offset into the configuration's 1 KiB-aligned "
                                       "shared-memory region"})})

    def tensor_maps(self) -> dict[str, TensorMap]:
        e = self.element_bytes
        return {f"{name}_{plane}": TensorMap(plane, TYPES[e], (PITCH // e, ROWS), (PITCH,),
                                             (inner // e, BOX // inner), (1, 1), swizzle)
                for name, swizzle, inner in CONFIGS for plane in PLANES}

    def launch(self, stimulus: xr.Dataset) -> Launch:
        ids = np.arange(PITCH * ROWS, dtype=np.uint32)
        planes = {"lo": ids & 0xFF, "hi": ids >> 8}
        return Launch(
            inputs={"origin": np.array([X0 // self.element_bytes, Y0, POISON,
                                        BOX * len(CONFIGS) * len(PLANES)], np.uint32),
                    **{p: planes[p].astype(np.uint8).view(np.uint32) for p in PLANES}},
            outputs={"out": len(CONFIGS) * len(PLANES) * REGION // 4},
            threads=128, block=128, tensor_maps=self.tensor_maps())

    def assemble(self, stimulus: xr.Dataset,
                 outputs: Mapping[str, Mapping[str, np.ndarray]]) -> xr.Dataset:
        ds = stimulus.assign_coords(kernel=("kernel", np.array(list(outputs))))
        words = np.stack([np.asarray(o["out"], np.uint32) for o in outputs.values()])
        planes = words.view(np.uint8).reshape(len(outputs), len(CONFIGS), len(PLANES), REGION)
        g = planes[:, :, 0].astype(np.int64) | planes[:, :, 1].astype(np.int64) << 8
        # an id only where both planes landed: the lo plane's poison byte (0xA5) is column
        # byte 165, outside every box (bytes X0 to X0 + 127), so with a real hi byte it
        # would pass for (row, 165); the hi plane's (165) is past the last row already
        known = (g < PITCH * ROWS) & (planes[:, :, 0] != POISON & 0xFF)
        e = self.element_bytes
        dims = ("kernel", "config", "offset")
        ds["raw_id"] = (dims, g.astype(np.uint32), {
            "description": "the id found at the shared byte: lo | hi << 8 (0xA5A5: poison)"})
        for name, value in (("g_row", g // PITCH), ("g_col", g % PITCH // e),
                            ("g_byte", g % PITCH % e)):
            ds[name] = (dims, np.where(known, value, UNWRITTEN).astype(np.uint32), {
                "description": f"the global {name[2:]} (column in elements) whose byte landed "
                               "at this shared byte offset; 0xFFFFFFFF: none (the poison "
                               "survived)"})
        return ds

    def simulate(self, kernel: Kernel, inputs: Mapping[str, np.ndarray],
                 tensor_maps: Mapping[str, TensorMap]) -> dict[str, np.ndarray]:
        """Places each map's box by `self.law` (the probe's own model: never evidence)."""
        x, y, poison = (int(v) for v in inputs["origin"][:3])
        out = []
        for spec in tensor_maps.values():
            e, pitch = spec.element_bytes, spec.strides[0]
            inner, plane = spec.box[0] * e, inputs[spec.buffer].view(np.uint8)
            region = np.full(REGION, poison & 0xFF, np.uint8)
            s = np.arange(inner * spec.box[1])
            o = self.law(s, spec.swizzle, inner)
            region[s] = plane[(y + o // inner) * pitch + x * e + o % inner]
            out.append(region)
        return {"out": np.concatenate(out).view(np.uint32)}

    @property
    def plots(self) -> dict[str, Callable[..., object]]:
        # loaded on demand: matplotlib is not needed to sweep or check
        return load_sibling(HERE / "plots.py").PLOTS


PROBES = tuple(TmaSwizzle(e) for e in TYPES)
