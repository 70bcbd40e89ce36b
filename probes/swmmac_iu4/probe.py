"""swmmac-iu4: which idx metadata field pairs which compressed A nibble with which B nibble,
in v_swmmac_i32_16x16x{32,64}_iu4 on gfx12 (seeds/000), measured in raw per-lane terms.

One launch covers every sub-sweep, one wave per cell; every lane's 8 accumulator dwords are
recorded (`d_*` variables, dims (kernel, ..., lane, dword)). Sub-sweeps:

- pair (n, f, v, q): A nibble n = 1 in every lane; idx field f = v in every lane (others
  0); B nibble q = 1 in every lane (the B basis). A cell "hits" when any D dword is nonzero:
  that names the B nibble the hardware paired nibble n with, assuming no layout.
- lane (la, ln, lv, lq): only lane `la` drives A nibble ln, its field ln (`lf`) = lv, while
  every other lane carries the opposite value (lv + 2) % 4: whose metadata governs?
- random (ra, rn, rq): every lane l carries its own random idx word ridx[l]; only lane ra
  drives nibble rn.
- blane (bm, bq): only B lane bm drives nibble bq; A nibble 0 everywhere, idx 0.
- signed (sa, sb): A nibble 0 = sa, B nibbles 0-3 = sb (the whole group, so a product forms
  whichever offset pairs) over the full signed range -8..7, with a distinct nonzero
  accumulator in every lane and dword.
- loo (trial, drop): dense random A, B and idx; drop 0 is the whole product, drop 1 + 16 l + n
  zeroes lane l's A nibble n (leave one out): the parts must add up to the whole.

K = 32 reads A dword 0, B dwords 0-1 and idx bits 0-15: the grid is sized for K = 64, and
nibbles and fields K = 32 does not have simply drive nothing. Decoded observables: `hit*`
(0/1 per cell), `paired_q` (the one B nibble that hit, or NONE / MULTIPLE), `scaled`
(every (sa, sb) cell is sa * sb times the (1, 1) cell, accumulator excluded) and
`loo_linear` (superposition holds exactly).
"""

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np
import xarray as xr

from probelab.probe import Evidence, Kernel, Launch, load_sibling

HERE = Path(__file__).parent
model = load_sibling(HERE / "model.py")
LANES, DWORDS, AW, BW = 32, 8, 2, 4  # buffers use K = 64 strides for both kernels
KERNELS = {"k32": 32, "k64": 64}
SEED = 0x5EED_0004
NONE, MULTIPLE = 0xFFFFFFFE, 0xFFFFFFFF
SUBSWEEPS = {"pair": ("n", "f", "v", "q"), "lane": ("la", "ln", "lv", "lq"),
             "random": ("ra", "rn", "rq"), "blane": ("bm", "bq"), "signed": ("sa", "sb"),
             "loo": ("trial", "drop")}
OBSERVABLES = MappingProxyType({
    "hit": ("kernel", "n", "f", "v", "q"), "hit_lane": ("kernel", "la", "ln", "lv", "lq"),
    "hit_random": ("kernel", "ra", "rn", "rq"), "hit_blane": ("kernel", "bm", "bq"),
    "scaled": ("kernel", "sa", "sb"), "loo_linear": ("kernel", "trial"),
    "paired_q": ("kernel", "n", "f", "v")})
# The simulated device (tests swap in other laws and layouts); never evidence.
SIM = {"law": model.Law(), "layout": model.documented_layout, "lane_laws": None}


def pack(nibbles: np.ndarray, words: int) -> np.ndarray:
    """(..., 8 * words) signed 4-bit ints -> (..., words) uint32, nibble 0 in bits 0-3."""
    v = (nibbles.astype(np.int64) & 0xF).astype(np.uint64)
    v = v.reshape(*v.shape[:-1], words, 8) << (np.arange(8, dtype=np.uint64) * np.uint64(4))
    return v.sum(-1).astype(np.uint32)


def accumulator_start() -> np.ndarray:
    """(32, 8) distinct nonzero starting accumulators for the signed sub-sweep."""
    return (1000 * np.arange(LANES)[:, None] + np.arange(DWORDS)[None, :] + 1).astype(np.uint32)


def _cells(grid: xr.Dataset, dims: tuple[str, ...]) -> list[np.ndarray]:
    axes = np.meshgrid(*(grid[d].values.astype(np.int64) for d in dims), indexing="ij")
    return [a.reshape(-1, 1) for a in axes]  # (W, 1), broadcast against lanes


def _wave(a: np.ndarray, b: np.ndarray, idx: np.ndarray, c: np.ndarray | None = None) -> dict:
    w = idx.shape[0]
    return {"a": pack(a, AW), "b": pack(b, BW), "idx": idx.astype(np.uint32),
            "c": np.zeros((w, LANES, DWORDS), np.uint32) if c is None else c}


def _hot(width: int, where: np.ndarray, value: np.ndarray) -> np.ndarray:
    """(W, 32, width) int8 nibbles: `value` at nibble `where` (both (W, 32)), 0 elsewhere."""
    out = np.zeros((*where.shape, width), np.int8)
    np.put_along_axis(out, where[..., None], value[..., None].astype(np.int8), axis=-1)
    return out


def stimulus_waves(grid: xr.Dataset) -> dict[str, dict[str, np.ndarray]]:
    """Per sub-sweep, the inputs of each of its waves: a (W, 32, 2), b (W, 32, 4),
    c (W, 32, 8) and idx (W, 32)."""
    lane = np.arange(LANES)[None, :]
    zero, one = np.zeros((1, LANES), np.int64), np.ones((1, LANES), np.int64)
    n, f, v, q = _cells(grid, SUBSWEEPS["pair"])
    la, ln, lv, lq = _cells(grid, SUBSWEEPS["lane"])
    ra, rn, rq = _cells(grid, SUBSWEEPS["random"])
    bm, bq = _cells(grid, SUBSWEEPS["blane"])
    sa, sb = _cells(grid, SUBSWEEPS["signed"])
    words = grid["ridx"].values.astype(np.int64)
    waves = {
        "pair": _wave(_hot(16, n + zero, one + 0 * n), _hot(32, q + zero, one + 0 * q),
                      (v << (2 * f)) + zero),
        "lane": _wave(_hot(16, ln + zero, (lane == la).astype(np.int64)),
                      _hot(32, lq + zero, one + 0 * lq),
                      np.where(lane == la, lv, (lv + 2) % 4) << (2 * ln)),
        "random": _wave(_hot(16, rn + zero, (lane == ra).astype(np.int64)),
                        _hot(32, rq + zero, one + 0 * rq), words[None, :] + 0 * ra),
        "blane": _wave(_hot(16, zero + 0 * bm, one + 0 * bm),
                       _hot(32, bq + zero, (lane == bm).astype(np.int64)), zero + 0 * bm),
        # B nibbles 0-3 (all of group 0) carry sb, so A nibble 0 forms a product whatever
        # offset the law gives it under an all-zero index.
        "signed": _wave(_hot(16, zero + 0 * sa, sa + zero),
                        np.concatenate([np.broadcast_to((sb + zero)[..., None], (*sa.shape[:1],
                                        LANES, 4)), np.zeros((sa.shape[0], LANES, 28))],
                                       -1).astype(np.int8),
                        zero + 0 * sa, np.broadcast_to(accumulator_start(),
                                                       (sa.shape[0], LANES, DWORDS))),
    }
    a = model.nibbles(grid["loo_a"].values.astype(np.uint32), 16)  # (trial, lane, 16)
    drops = grid.sizes["drop"]
    a = np.repeat(a[:, None], drops, axis=1)
    for d in range(1, drops):  # drop d zeroes lane (d - 1) // 16, nibble (d - 1) % 16
        a[:, d, (d - 1) // 16, (d - 1) % 16] = 0
    b = model.nibbles(grid["loo_b"].values.astype(np.uint32), 32)
    idx = grid["loo_idx"].values.astype(np.int64)
    w = a.shape[0] * drops
    waves["loo"] = _wave(a.reshape(w, LANES, 16),
                         np.repeat(b[:, None], drops, 1).reshape(w, LANES, 32),
                         np.repeat(idx[:, None], drops, 1).reshape(w, LANES))
    return waves


def _decode_hits(d: np.ndarray) -> np.ndarray:
    return (d != 0).any(axis=(-2, -1)).astype(np.uint32)


def _paired_q(hit: np.ndarray, q: np.ndarray) -> np.ndarray:
    """(..., q) hits -> the one q value that hit, else NONE or MULTIPLE (never dropped)."""
    count = hit.sum(-1)
    return np.where(count == 1, q[hit.argmax(-1)], np.where(count == 0, NONE, MULTIPLE)
                    ).astype(np.uint32)


def _scaled(d: np.ndarray, sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
    """(sa, sb, lane, dword) -> 1 where D - C is exactly sa * sb times the (1, 1) cell's."""
    delta = d.astype(np.int64) - accumulator_start().astype(np.int64)
    delta = (delta + 2**31) % 2**32 - 2**31  # as int32
    unit = delta[list(sa).index(1), list(sb).index(1)]
    want = sa[:, None, None, None] * sb[None, :, None, None] * unit[None, None]
    return (delta == want).all(axis=(-2, -1)).astype(np.uint32)


def _loo_linear(d: np.ndarray) -> np.ndarray:
    """(trial, drop, lane, dword) -> 1 where the left-out parts sum to the whole product."""
    d = d.astype(np.int64)
    parts = (d[:, :1] - d[:, 1:]).sum(axis=1)
    return (((parts - d[:, 0]) % 2**32) == 0).all(axis=(-2, -1)).astype(np.uint32)


class SwmmacIu4:
    id = "swmmac-iu4"
    version = "2"  # 2: the signed sub-sweep drives all of B's group 0
    summary = "v_swmmac_i32_16x16x{32,64}_iu4 metadata: which idx field pairs which nibbles"
    targets = ("gfx12*",)
    observables = OBSERVABLES

    def kernels(self, vendor: str) -> list[Kernel]:
        if vendor != "amd":
            return []
        return [Kernel(name, f"probe_swmmac_{name}", HERE / "swmmac_iu4.hip", "amd",
                       _evidence(k)) for name, k in KERNELS.items()]

    def stimulus(self) -> xr.Dataset:
        rng = np.random.default_rng(SEED)
        coords = {
            "kernel": ("kernel", np.array(list(KERNELS))),
            "K": ("kernel", np.array(list(KERNELS.values()), np.uint32)),
            "n": ("n", np.arange(16, dtype=np.uint32)), "f": ("f", np.arange(16, dtype=np.uint32)),
            "v": ("v", np.arange(4, dtype=np.uint32)), "q": ("q", np.arange(32, dtype=np.uint32)),
            "la": ("la", np.arange(LANES, dtype=np.uint32)),
            "ln": ("ln", np.array([0, 1], np.uint32)), "lf": ("ln", np.array([0, 1], np.uint32)),
            "lv": ("lv", np.arange(4, dtype=np.uint32)),
            "lq": ("lq", np.arange(32, dtype=np.uint32)),
            "ra": ("ra", np.arange(LANES, dtype=np.uint32)),
            "ridx": ("ra", rng.integers(0, 2**32, LANES, dtype=np.uint64).astype(np.uint32)),
            "rn": ("rn", np.arange(16, dtype=np.uint32)),
            "rq": ("rq", np.arange(32, dtype=np.uint32)),
            "bm": ("bm", np.arange(LANES, dtype=np.uint32)), "bn": ((), np.uint32(0)),
            "bq": ("bq", np.arange(32, dtype=np.uint32)),
            "sa": ("sa", np.arange(-8, 8, dtype=np.int32)),
            "sb": ("sb", np.arange(-8, 8, dtype=np.int32)),
            "trial": ("trial", np.arange(4, dtype=np.uint32)),
            "drop": ("drop", np.arange(1 + LANES * 16, dtype=np.uint32)),
            "loo_a": (("trial", "lane", "aword"),
                      rng.integers(0, 2**32, (4, LANES, AW), dtype=np.uint64).astype(np.uint32)),
            "loo_b": (("trial", "lane", "bword"),
                      rng.integers(0, 2**32, (4, LANES, BW), dtype=np.uint64).astype(np.uint32)),
            "loo_idx": (("trial", "lane"),
                        rng.integers(0, 2**32, (4, LANES), dtype=np.uint64).astype(np.uint32)),
        }
        return xr.Dataset(coords=coords)

    def launch(self, stimulus: xr.Dataset) -> Launch:
        parts = stimulus_waves(stimulus)
        joined = {k: np.concatenate([p[k] for p in parts.values()]) for k in parts["pair"]}
        waves = joined["idx"].shape[0]
        return Launch(inputs={"params": np.array([waves], np.uint32), "a": joined["a"],
                              "b": joined["b"], "c": joined["c"], "idx": joined["idx"]},
                      outputs={"d": waves * LANES * DWORDS}, threads=waves * LANES, block=256)

    def assemble(self, stimulus: xr.Dataset,
                 outputs: Mapping[str, Mapping[str, np.ndarray]]) -> xr.Dataset:
        ds = stimulus.copy()
        names = [str(k) for k in stimulus["kernel"].values]
        raw = {k: np.asarray(outputs[k]["d"], np.uint32).reshape(-1, LANES, DWORDS)
               for k in names}
        start = 0
        for part, dims in SUBSWEEPS.items():
            shape = tuple(stimulus.sizes[d] for d in dims)
            stop = start + int(np.prod(shape))
            block = np.stack([raw[k][start:stop].reshape(*shape, LANES, DWORDS) for k in names])
            ds[f"d_{part}"] = (("kernel", *dims, "lane", "dword"), block)
            start = stop
        ds["hit"] = (OBSERVABLES["hit"], _decode_hits(ds["d_pair"].values))
        ds["hit_lane"] = (OBSERVABLES["hit_lane"], _decode_hits(ds["d_lane"].values))
        ds["hit_random"] = (OBSERVABLES["hit_random"], _decode_hits(ds["d_random"].values))
        ds["hit_blane"] = (OBSERVABLES["hit_blane"], _decode_hits(ds["d_blane"].values))
        ds["paired_q"] = (OBSERVABLES["paired_q"],
                          _paired_q(ds["hit"].values, stimulus["q"].values))
        sa, sb = stimulus["sa"].values, stimulus["sb"].values
        ds["scaled"] = (OBSERVABLES["scaled"],
                        np.stack([_scaled(d, sa, sb) for d in ds["d_signed"].values]))
        ds["loo_linear"] = (OBSERVABLES["loo_linear"],
                            np.stack([_loo_linear(d) for d in ds["d_loo"].values]))
        return ds

    def simulate(self, kernel: Kernel, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        k = KERNELS[kernel.name]
        waves = int(inputs["params"][0])
        a, b = inputs["a"].reshape(waves, LANES, AW), inputs["b"].reshape(waves, LANES, BW)
        c = inputs["c"].reshape(waves, LANES, DWORDS)
        idx = inputs["idx"].reshape(waves, LANES)
        layout = SIM["layout"](k)
        out = np.empty((waves, LANES, DWORDS), np.uint32)
        for s in range(0, waves, 2048):  # bounded memory
            part = slice(s, s + 2048)
            out[part] = model.swmmac(k, a[part], b[part], c[part], idx[part], layout,
                                     SIM["law"], SIM["lane_laws"])
        return {"d": out.reshape(-1)}

    @property
    def plots(self):
        return load_sibling(HERE / "plots.py").PLOTS


# Every other gfx12 WMMA/SWMMAC form is a near relative the kernel must not use instead.
RELATIVES = (r"v_swmmac_.*_iu8", r"v_swmmac_.*_(fp8|bf8)", r"v_swmmac_.*_(f16|bf16)",
             r"v_wmma_.*")


def _evidence(k: int) -> Evidence:
    """Exactly one iu4 SWMMAC of this K; A, B and idx (the accumulator is tied to D) each
    straight from a full-width global load."""
    other = 64 if k == 32 else 32
    return Evidence(rf"v_swmmac_i32_16x16x{k}_iu4",
                    forbidden=(*RELATIVES, rf"v_swmmac_i32_16x16x{other}_iu4"),
                    operands=("unmodified", "unmodified", "unmodified"))


PROBE = SwmmacIu4()
