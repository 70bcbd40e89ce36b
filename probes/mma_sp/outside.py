"""What the device did with metadata outside the contract (the `bad` waves), summarised.

For every kernel and invalid or undefined metadata word, each compressed A element's
outcome is compared with the *literal* reading: its governing field's value taken as the
position in its chunk, whatever the rest of the nibble says (both indices equal, or
descending). The position is named with the PTX reading (`ptx.py`), which the sweep's
valid waves confirmed; a dataset where it was not confirmed gets no summary. Outcomes are
counted as literal, another row of B, no product (NONE) or no row the word sweep measured
(UNMATCHED). These are observations, never evidence: no hypothesis can claim them.
"""

from pathlib import Path

import numpy as np
import xarray as xr

from probelab.kits.sparse import engine as sparse
from probelab.probe import load_sibling

ptx = load_sibling(Path(__file__).parent / "ptx.py")


def literal_rows(law: sparse.Law, word: int) -> np.ndarray:
    """Per A slot, the smallest B slot (lane * b_elems + elem, the law's B has the design's
    b_elems per lane) of the row a literal reading of `word` selects."""
    value = ((int(word) >> (sparse.FIELD_BITS * law.gov_field)) & 3) >> law.shift
    k = law.base + law.stride * value
    slot = np.full(law.a_row.shape, sparse.NONE, np.int64)
    exist = law.a_row >= 0
    kn = law.b_kn[..., 0]
    first = {int(r): int(np.flatnonzero(kn.reshape(-1) == r).min()) for r in np.unique(k[exist])}
    slot[exist] = [first[int(r)] for r in k[exist]]
    return slot


def summary(ds: xr.Dataset, probe) -> list[dict]:
    """One row per (kernel, bad word): counts of literal / other / none / unmatched."""
    design, rows = probe.design, []
    for unit in design.units:
        law = ptx.ptx_law(unit, design)
        sub = ds.sel(kernel=unit.name)
        exist = law.a_row >= 0
        for b, word in enumerate(sub["bad"].values):
            lane = sub["bad_lane"].values[b].astype(np.int64)
            got = np.where(lane >= sparse.CODES, lane,
                           lane * design.b_elems + sub["bad_elem"].values[b])[exist]
            want = literal_rows(law, int(word))[exist]
            rows.append({"kernel": unit.name, "word": f"{int(word):#010x}",
                         "elements": int(exist.sum()), "literal": int((got == want).sum()),
                         "none": int((got == sparse.NONE).sum()),
                         "unmatched": int((got == sparse.UNMATCHED).sum()
                                          + (got == sparse.AMBIGUOUS).sum()),
                         "other": int(((got != want) & (got < sparse.CODES)).sum())})
    return rows
