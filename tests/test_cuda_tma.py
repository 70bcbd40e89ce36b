"""The tensor-map launch path on a real GPU (tma-swizzle-b16 swept through the CUDA backend):
what must hold whatever the swizzle turns out to be, so that a verdict of the sealed files
is about the swizzle and not about the mechanism. Skipped cleanly where there is no GPU."""

import json

import numpy as np
import pytest
from toolchains import cuda_device

from probelab import dataset

BACKEND, DEVICE = cuda_device()

pytestmark = pytest.mark.cuda


def test_the_tensor_maps_reach_the_kernel_and_deliver_exactly_their_boxes(tmp_path, own_lab):
    from probelab.sweep import run_sweep

    if DEVICE.target != "sm_90":
        pytest.skip(f"tma-swizzle targets sm_90a, this is {DEVICE.target}")
    own_lab("tma_swizzle")
    result = run_sweep("tma-swizzle-b16", "cuda", repeats=2, out_root=tmp_path)
    ds = dataset.load(result.path)
    prov = dataset.provenance(ds)
    assert prov["repeats_identical"] is True
    assert all(k["evidence"]["ok"] for k in prov["kernels"].values())
    # each map encoded once over its plane's payload: 128 bytes, one address per plane
    maps = prov["tensor_maps"]
    assert len(maps) == 12 and all(len(bytes.fromhex(m["bytes"])) == 128 for m in maps)
    assert len({m["address"] for m in maps if m["buffer"] == "lo"}) == 1
    assert len({m["address"] for m in maps if m["buffer"] == "hi"}) == 1
    assert json.dumps(maps[0]["box"]) == "[64, 8]" and maps[0]["swizzle"] == 0
    ids = ds["raw_id"].values[0]
    for config, (inner, x0, y0) in enumerate(zip(ds["inner"].values, ds["x0"].values,
                                                 ds["y0"].values, strict=True)):
        box = {(y0 + r) * 256 + x0 + c for r in range(1024 // inner) for c in range(inner)}
        found = ids[config][ids[config] != 0xA5A5]
        assert sorted(found.tolist()) == sorted(box), f"config {config}: not the box, once"
    # without a swizzle the box lands row-major: the map's address, origin and box honoured
    s = np.arange(1024)
    assert np.array_equal(ids[0][:1024], (3 + s // 128) * 256 + 32 + s % 128)
