"""The alignment sweep drawn: D(0, 0) minus the exact sum, in units of the f32 ulp at 1
(2**-23), against s, for both signs of the fifteen small products 2**-s."""

from __future__ import annotations

import numpy as np


def alignment(ds, **_: object) -> dict[str, object]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [str(n) for n in ds["case_name"].values]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for sign, marker in (("+", "o"), ("-", "s")):
        picked = [i for i, n in enumerate(names)
                  if n.startswith("alignment") and n.endswith(f"sign={sign}")]
        s = np.array([int(names[i].split("s=")[1].split()[0]) for i in picked])
        got = ds["d_bits"].values[0][picked].astype(np.uint32).view(np.float32).astype(float)
        exact = 1.0 + (1 if sign == "+" else -1) * 15 * 2.0 ** -s.astype(float)
        ax.plot(s, (got - exact) / 2.0**-23, marker=marker, label=f"small products {sign}2^-s")
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xlabel("s (fifteen products of 2^-s beside one product 1)")
    ax.set_ylabel("D - exact sum (f32 ulps at 1)")
    prov = ds.attrs.get("probelab_device", "")
    ax.set_title(f"{ds['kernel'].values[0]}: alignment sweep {prov}".strip(), fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return {"alignment": fig}
