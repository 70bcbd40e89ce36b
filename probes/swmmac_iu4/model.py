"""A simulated gfx12 swmmac iu4 unit with a pluggable lane layout and pairing law.

It exists to test the probe's design (can sweep + decode recover a hidden law, and do they
flag a device that follows none?), never as evidence. Everything is in raw per-lane terms:
A nibble n (lane-local compressed element), B nibble q, D dword e, idx word per lane.
"""

from dataclasses import dataclass, field

import numpy as np

LANES, DWORDS = 32, 8


@dataclass(frozen=True)
class Layout:
    """Where matrix elements live for one K: lane x nibble (A, B) or lane x dword (D)."""

    a_row: np.ndarray  # (32, K/4): A row of lane l's compressed nibble n
    a_ck: np.ndarray  # (32, K/4): its compressed column; dense group = ck // 2
    b_k: np.ndarray  # (32, K/2): B row (dense k) of lane l's nibble q
    b_col: np.ndarray  # (32, K/2)
    d_row: np.ndarray  # (32, 8)
    d_col: np.ndarray  # (32, 8)


def documented_layout(k: int) -> Layout:
    """Lanes l and l+16 share A row l % 16 (two halves of K); B column = lane % 16 with the
    lane's half of K; D rows 0-7 in lanes 0-15, 8-15 in lanes 16-31 (dword = row % 8)."""
    lane = np.arange(LANES)[:, None]
    na, nb = k // 4, k // 2
    return Layout(
        a_row=np.broadcast_to(lane % 16, (LANES, na)).copy(),
        a_ck=(lane // 16) * na + np.arange(na)[None, :],
        b_k=(lane // 16) * nb + np.arange(nb)[None, :],
        b_col=np.broadcast_to(lane % 16, (LANES, nb)).copy(),
        d_row=(lane // 16) * 8 + np.arange(DWORDS)[None, :],
        d_col=np.broadcast_to(lane % 16, (LANES, DWORDS)).copy(),
    )


def shuffled_layout(k: int, rng: np.random.Generator) -> Layout:
    """The documented layout with rows, columns, lanes and K-halves relabelled at random."""
    base = documented_layout(k)
    rows, cols = rng.permutation(16), rng.permutation(16)
    lanes_a, lanes_b, lanes_d = (rng.permutation(LANES) for _ in range(3))
    dword = rng.permutation(DWORDS)
    return Layout(rows[base.a_row[lanes_a]], base.a_ck[lanes_a], base.b_k[lanes_b],
                  cols[base.b_col[lanes_b]], rows[base.d_row[lanes_d][:, dword]],
                  cols[base.d_col[lanes_d][:, dword]])


@dataclass(frozen=True)
class Law:
    """Which idx field governs compressed nibble n, and which dense offset in its group of 4
    a field value selects: dense k = 4 * (ck // 2) + offset[n, value]."""

    field_of: np.ndarray = field(default_factory=lambda: np.arange(16))  # (16,)
    offset: np.ndarray = field(default_factory=lambda: np.tile(np.arange(4), (16, 1)))  # (16, 4)


def nibbles(words: np.ndarray, count: int) -> np.ndarray:
    """(..., dwords) uint32 -> (..., count) signed 4-bit values, nibble 0 = bits 0-3."""
    flat = words.astype(np.uint64)
    shifts = np.arange(8, dtype=np.uint64) * np.uint64(4)
    raw = (flat[..., :, None] >> shifts) & np.uint64(0xF)
    raw = raw.reshape(*words.shape[:-1], -1)[..., :count].astype(np.int64)
    return np.where(raw >= 8, raw - 16, raw)


def swmmac(k: int, a: np.ndarray, b: np.ndarray, c: np.ndarray, idx: np.ndarray,
           layout: Layout, law: Law, lane_laws: dict[int, Law] | None = None) -> np.ndarray:
    """D = A (decompressed by the law) x B + C for W waves.

    a (W, 32, >=K/32), b (W, 32, >=K/16), c (W, 32, 8), idx (W, 32) uint32 -> d (W, 32, 8).
    `lane_laws` gives chosen lanes their own law: a device that is not lane-uniform.
    """
    waves, na, nb = a.shape[0], k // 4, k // 2
    if k == 32:  # K = 32 reads one 16-bit half of the index (index_key 0: bits 0-15)
        idx = idx & np.uint32(0xFFFF)
    a_nib, b_nib = nibbles(a[..., : k // 32], na), nibbles(b[..., : k // 16], nb)
    dense_a = np.zeros((waves, 16, k), np.int64)
    for lane in range(LANES):
        rule = (lane_laws or {}).get(lane, law)
        for n in range(na):
            value = (idx[:, lane].astype(np.int64) >> (2 * rule.field_of[n])) & 3
            dense_k = 4 * (layout.a_ck[lane, n] // 2) + rule.offset[n][value]
            np.add.at(dense_a, (np.arange(waves), layout.a_row[lane, n], dense_k),
                      a_nib[:, lane, n])
    dense_b = np.zeros((waves, k, 16), np.int64)
    dense_b[:, layout.b_k, layout.b_col] = b_nib
    dense_c = np.zeros((waves, 16, 16), np.int64)
    dense_c[:, layout.d_row, layout.d_col] = c.astype(np.int32).astype(np.int64)
    # float64 matmul is exact here (|sums| < 2**53) and uses BLAS; int matmul does not.
    product = np.rint(np.matmul(dense_a.astype(np.float64), dense_b.astype(np.float64)))
    product = product.astype(np.int64) + dense_c
    return (product[:, layout.d_row, layout.d_col] & 0xFFFFFFFF).astype(np.uint32)
