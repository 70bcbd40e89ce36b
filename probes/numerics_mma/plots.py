"""The alignment sweep drawn: D(0, 0) minus the exact sum, in units of D's ulp at the
case's unit term, against s, for both signs of the K - 1 small products 2**-s. Values are
read from the dataset's own bits and formats (exact arithmetic, so f64 loses nothing)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from probelab.formats import FORMATS
from probelab.numerics.exact import decode


def _exact(v) -> Fraction:
    return (-1) ** v.sign * Fraction(v.significand) * Fraction(2) ** v.exponent


def alignment(ds, **_: object) -> dict[str, object]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fa, fd = (FORMATS[str(ds[n].values)] for n in ("a_format", "d_format"))
    if "d_bits" in ds:
        got = ds["d_bits"].values[0].astype(np.uint64)
    else:
        got = ds["d_lo"].values[0].astype(np.uint64) | (ds["d_hi"].values[0].astype(np.uint64)
                                                         << np.uint64(32))
    names = [str(n) for n in ds["case_name"].values]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for sign, marker in (("+", "o"), ("-", "s")):
        picked = [i for i, n in enumerate(names)
                  if n.startswith("alignment") and n.endswith(f"sign={sign}")]
        s, err = [], []
        for i in picked:
            a = [decode(fa, int(x)) for x in ds["a_bits"].values[i]]
            b = [decode(fa, int(y)) for y in ds["b_bits"].values[i]]
            exact = sum((_exact(x) * _exact(y) for x, y in zip(a, b, strict=True)), Fraction(0))
            unit = _exact(a[0]) * _exact(b[0])  # the case's unit product
            ulp = unit / 2**fd.fraction
            s.append(int(names[i].split("s=")[1].split()[0]))
            err.append(float((_exact(decode(fd, int(got[i]))) - exact) / ulp))
        ax.plot(s, err, marker=marker, label=f"small products {sign}2^-s")
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xlabel("s (K - 1 products of 2^-s beside one unit product)")
    ax.set_ylabel(f"D - exact sum ({fd.name} ulps at the unit)")
    prov = ds.attrs.get("probelab_device", "")
    ax.set_title(f"{ds['kernel'].values[0]}: alignment sweep {prov}".strip(), fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return {"alignment": fig}
