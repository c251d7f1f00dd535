"""Every worked example of the DAP documents, as tests.

Sources, in ``shared/specs``: chapter 2 of ``dap-v0.10.0-docs.txt`` (sections 2.1 to 2.12)
and the "Examples" section of ``dap-v0.9.0.rst``. Each example is transcribed as

* the ``__distarray__()`` dict of every rank, in rank order, with the buffer values shown;
* the full global array (printed by the document, or derived from its text where the
  document only describes it: 2.1 to 2.3 and the v0.9 examples);
* the `Distribution.create` call that describes the same layout.

Where a printed example has a typo, the transcription fixes it and a comment says what the
document printed and why it cannot be right.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from dapx.protocol import validate_distbuffer
from numpy.testing import assert_array_equal, assert_equal

from dapx import Distribution


def f64(values) -> np.ndarray:
    return np.array(values, dtype=np.float64)


COMMON_KEYS = ("dist_type", "size", "proc_grid_size", "proc_grid_rank")


def common(dist_type, size, grid_size, grid_rank) -> dict:
    return dict(zip(COMMON_KEYS, (dist_type, size, grid_size, grid_rank)))


def blk(size, grid_size, grid_rank, start, stop, **extra) -> dict:
    """A block dimension dictionary; `extra` holds the optional keys the document prints."""
    return {**common("b", size, grid_size, grid_rank), "start": start, "stop": stop, **extra}


def cyc(size, grid_size, grid_rank, start, **extra) -> dict:
    return {**common("c", size, grid_size, grid_rank), "start": start, **extra}


def uns(size, grid_size, grid_rank, indices) -> dict:
    return {**common("u", size, grid_size, grid_rank), "indices": np.array(indices)}


@dataclass(frozen=True)
class Example:
    version: str
    create: dict  # keyword arguments of Distribution.create
    full: np.ndarray  # the full (undistributed) array
    ranks: tuple  # (buffer, dim_data) of every rank, in rank order

    def distbuffers(self) -> list[dict]:
        return [
            {"__version__": self.version, "buffer": buf, "dim_data": dd} for buf, dd in self.ranks
        ]


def v010(create, full, *ranks) -> Example:
    return Example("0.10.0", create, full, ranks)


def v09(create, full, *ranks) -> Example:
    return Example("0.9.0", create, full, ranks)


# fmt: off
# -- buffers printed identically by both documents ---------------------------------------
# 2.1 and "Block, No-distribution": a 2x10 array, one row per process.
# Typo, in both documents: each buffer is printed as a 1-D array of 10 values, e.g.
# "array([ 0.2, 0.6, 0.9, ...])", but dim_data holds two dimension dictionaries and the
# first has stop - start == 1. The spec requires len(dim_data) == buffer.ndim and
# stop - start == buffer.shape[i], so each buffer is the (1, 10) row of the 2x10 array.
ROW0 = f64([[0.2, 0.6, 0.9, 0.6, 0.8, 0.4, 0.2, 0.2, 0.3, 0.5]])
ROW1 = f64([[0.9, 0.2, 1.0, 0.4, 0.5, 0.0, 0.6, 0.8, 0.6, 1.0]])
FULL_2x10 = f64([[0.2, 0.6, 0.9, 0.6, 0.8, 0.4, 0.2, 0.2, 0.3, 0.5],
                 [0.9, 0.2, 1.0, 0.4, 0.5, 0.0, 0.6, 0.8, 0.6, 1.0]])

# 2.2 and "Block with padding": 18 indices, padding (1, 1) on both processes.
#   Process 0: B 1 2 3 4 5 6 7 8 C   (global indices 0..9)
#   Process 1: C 9 10 ... 16 B       (global indices 8..17)
# Each communication-padding element equals the element its neighbour owns (0.9 at
# index 9, 0.3 at index 8), so the full array is process 0's first 9 values followed by
# process 1's last 9.
# Typo, in both documents: dim_data is printed as "({'size': 18, ..., 'padding': (1, 1)})",
# which is a bare dict in parentheses, not a tuple; the spec says dim_data "shall be a tuple
# of dictionaries" (2.3 prints the 1-tuple correctly, with "},)"), so it is transcribed as
# a 1-tuple.
PADDED0 = f64([0.2, 0.6, 0.9, 0.6, 0.8, 0.4, 0.2, 0.2, 0.3, 0.9])
PADDED1 = f64([0.3, 0.9, 0.2, 1.0, 0.4, 0.5, 0.0, 0.6, 0.8, 0.6])
FULL_18 = f64([0.2, 0.6, 0.9, 0.6, 0.8, 0.4, 0.2, 0.2, 0.3,
               0.9, 0.2, 1.0, 0.4, 0.5, 0.0, 0.6, 0.8, 0.6])

# 2.3 and "Unstructured": 30 indices over 3 processes with 7, 3 and 20 elements.
# (v0.9 prints the indices as Python lists; see the comment on "v0.9 unstructured".)
UNS_IDX = ([19, 1, 0, 12, 2, 15, 4],
           [6, 13, 3],
           [10, 25, 5, 21, 7, 18, 11, 26, 29, 24, 23, 28, 14, 20, 9, 16, 27, 8, 17, 22])
UNS_BUF = (f64([0.7, 0.5, 0.9, 0.2, 0.7, 0.0, 0.5]), f64([0.1, 0.5, 0.9]),
           f64([0.1, 0.8, 0.4, 0.8, 0.2, 0.4, 0.4, 0.3, 0.5, 0.7,
                0.4, 0.7, 0.6, 0.2, 0.8, 0.5, 0.3, 0.8, 0.4, 0.2]))
# Not printed: full[indices] = buffer on every process (the indices cover 0..29 once).
FULL_30 = f64([0.9, 0.5, 0.7, 0.9, 0.5, 0.4, 0.1, 0.2, 0.8, 0.8,
               0.1, 0.4, 0.2, 0.5, 0.6, 0.0, 0.5, 0.4, 0.4, 0.7,
               0.2, 0.8, 0.2, 0.4, 0.7, 0.8, 0.3, 0.3, 0.7, 0.5])
# The documents omit one_to_one, which the spec reads as False; create would otherwise
# infer it from the indices (True here), so the spec passes it explicitly.
UNSTRUCTURED = {"dist": "u", "indices": UNS_IDX, "one_to_one": False}

# 2.4 to 2.11 print this 5x9 array, 0. to 44. row by row; 2.12 prints 0. to 134. as 5x9x3.
FULL_5x9 = np.arange(45.0).reshape(5, 9)
FULL_5x9x3 = np.arange(135.0).reshape(5, 9, 3)

EXAMPLES = {
    # The prose says "the proc_grid_size of the first dimension is 1": it is dim 1 (the
    # second) that has proc_grid_size 1, as the printed dim_data and the 2x1 grid show.
    "2.1 block, block": v010(
        {"shape": (2, 10), "dist": ("b", "b"), "grid": (2, 1)},
        FULL_2x10,
        (ROW0, (blk(2, 2, 0, 0, 1), blk(10, 1, 0, 0, 10))),
        (ROW1, (blk(2, 2, 1, 1, 2), blk(10, 1, 0, 0, 10))),
    ),
    "2.2 block with padding": v010(
        {"shape": 18, "dist": "b", "grid": (2,), "padding": 1},
        FULL_18,
        (PADDED0, (blk(18, 2, 0, 0, 10, padding=(1, 1)),)),
        (PADDED1, (blk(18, 2, 1, 8, 18, padding=(1, 1)),)),
    ),
    "2.3 unstructured": v010(
        {"shape": 30, "dist": UNSTRUCTURED, "grid": (3,)},
        FULL_30,
        *((UNS_BUF[r], (uns(30, 3, r, UNS_IDX[r]),)) for r in range(3)),
    ),
    "2.4 block, block (3x1)": v010(
        {"shape": (5, 9), "dist": ("b", "b"), "grid": (3, 1)},
        FULL_5x9,
        (f64([[0, 1, 2, 3, 4, 5, 6, 7, 8],
              [9, 10, 11, 12, 13, 14, 15, 16, 17]]),
         (blk(5, 3, 0, 0, 2, padding=[0, 0]), blk(9, 1, 0, 0, 9, padding=[0, 0]))),
        (f64([[18, 19, 20, 21, 22, 23, 24, 25, 26],
              [27, 28, 29, 30, 31, 32, 33, 34, 35]]),
         (blk(5, 3, 1, 2, 4, padding=[0, 0]), blk(9, 1, 0, 0, 9, padding=[0, 0]))),
        (f64([[36, 37, 38, 39, 40, 41, 42, 43, 44]]),
         (blk(5, 3, 2, 4, 5, padding=[0, 0]), blk(9, 1, 0, 0, 9, padding=[0, 0]))),
    ),
    "2.5 block, block (1x3)": v010(
        {"shape": (5, 9), "dist": ("b", "b"), "grid": (1, 3)},
        FULL_5x9,
        (f64([[0, 1, 2], [9, 10, 11], [18, 19, 20], [27, 28, 29], [36, 37, 38]]),
         (blk(5, 1, 0, 0, 5, padding=[0, 0]), blk(9, 3, 0, 0, 3, padding=[0, 0]))),
        (f64([[3, 4, 5], [12, 13, 14], [21, 22, 23], [30, 31, 32], [39, 40, 41]]),
         (blk(5, 1, 0, 0, 5, padding=[0, 0]), blk(9, 3, 1, 3, 6, padding=[0, 0]))),
        (f64([[6, 7, 8], [15, 16, 17], [24, 25, 26], [33, 34, 35], [42, 43, 44]]),
         (blk(5, 1, 0, 0, 5, padding=[0, 0]), blk(9, 3, 2, 6, 9, padding=[0, 0]))),
    ),
    "2.6 block, block (2x2)": v010(
        {"shape": (5, 9), "dist": ("b", "b"), "grid": (2, 2)},
        FULL_5x9,
        (f64([[0, 1, 2, 3, 4], [9, 10, 11, 12, 13], [18, 19, 20, 21, 22]]),
         (blk(5, 2, 0, 0, 3), blk(9, 2, 0, 0, 5))),
        (f64([[5, 6, 7, 8], [14, 15, 16, 17], [23, 24, 25, 26]]),
         (blk(5, 2, 0, 0, 3), blk(9, 2, 1, 5, 9))),
        (f64([[27, 28, 29, 30, 31], [36, 37, 38, 39, 40]]),
         (blk(5, 2, 1, 3, 5), blk(9, 2, 0, 0, 5))),
        (f64([[32, 33, 34, 35], [41, 42, 43, 44]]),
         (blk(5, 2, 1, 3, 5), blk(9, 2, 1, 5, 9))),
    ),
    "2.7 block, cyclic": v010(
        {"shape": (5, 9), "dist": ("b", "c"), "grid": (2, 2)},
        FULL_5x9,
        (f64([[0, 2, 4, 6, 8], [9, 11, 13, 15, 17], [18, 20, 22, 24, 26]]),
         (blk(5, 2, 0, 0, 3), cyc(9, 2, 0, 0))),
        (f64([[1, 3, 5, 7], [10, 12, 14, 16], [19, 21, 23, 25]]),
         (blk(5, 2, 0, 0, 3), cyc(9, 2, 1, 1))),
        (f64([[27, 29, 31, 33, 35], [36, 38, 40, 42, 44]]),
         (blk(5, 2, 1, 3, 5), cyc(9, 2, 0, 0))),
        (f64([[28, 30, 32, 34], [37, 39, 41, 43]]),
         (blk(5, 2, 1, 3, 5), cyc(9, 2, 1, 1))),
    ),
    "2.8 cyclic, cyclic": v010(
        {"shape": (5, 9), "dist": ("c", "c"), "grid": (2, 2)},
        FULL_5x9,
        (f64([[0, 2, 4, 6, 8], [18, 20, 22, 24, 26], [36, 38, 40, 42, 44]]),
         (cyc(5, 2, 0, 0), cyc(9, 2, 0, 0))),
        (f64([[1, 3, 5, 7], [19, 21, 23, 25], [37, 39, 41, 43]]),
         (cyc(5, 2, 0, 0), cyc(9, 2, 1, 1))),
        (f64([[9, 11, 13, 15, 17], [27, 29, 31, 33, 35]]),
         (cyc(5, 2, 1, 1), cyc(9, 2, 0, 0))),
        (f64([[10, 12, 14, 16], [28, 30, 32, 34]]),
         (cyc(5, 2, 1, 1), cyc(9, 2, 1, 1))),
    ),
    "2.9 irregular-block, irregular-block": v010(
        {"shape": (5, 9), "grid": (2, 2),
         "dist": ({"dist": "b", "bounds": [0, 1, 5]}, {"dist": "b", "bounds": [0, 2, 9]})},
        FULL_5x9,
        (f64([[0, 1]]),
         (blk(5, 2, 0, 0, 1, padding=[0, 0]), blk(9, 2, 0, 0, 2, padding=[0, 0]))),
        (f64([[2, 3, 4, 5, 6, 7, 8]]),
         (blk(5, 2, 0, 0, 1, padding=[0, 0]), blk(9, 2, 1, 2, 9, padding=[0, 0]))),
        (f64([[9, 10], [18, 19], [27, 28], [36, 37]]),
         (blk(5, 2, 1, 1, 5, padding=[0, 0]), blk(9, 2, 0, 0, 2, padding=[0, 0]))),
        (f64([[11, 12, 13, 14, 15, 16, 17],
              [20, 21, 22, 23, 24, 25, 26],
              [29, 30, 31, 32, 33, 34, 35],
              [38, 39, 40, 41, 42, 43, 44]]),
         (blk(5, 2, 1, 1, 5, padding=[0, 0]), blk(9, 2, 1, 2, 9, padding=[0, 0]))),
    ),
    "2.10 block-cyclic, block-cyclic": v010(
        {"shape": (5, 9), "dist": {"dist": "c", "block_size": 2}, "grid": (2, 2)},
        FULL_5x9,
        (f64([[0, 1, 4, 5, 8], [9, 10, 13, 14, 17], [36, 37, 40, 41, 44]]),
         (cyc(5, 2, 0, 0, block_size=2), cyc(9, 2, 0, 0, block_size=2))),
        (f64([[2, 3, 6, 7], [11, 12, 15, 16], [38, 39, 42, 43]]),
         (cyc(5, 2, 0, 0, block_size=2), cyc(9, 2, 1, 2, block_size=2))),
        (f64([[18, 19, 22, 23, 26], [27, 28, 31, 32, 35]]),
         (cyc(5, 2, 1, 2, block_size=2), cyc(9, 2, 0, 0, block_size=2))),
        (f64([[20, 21, 24, 25], [29, 30, 33, 34]]),
         (cyc(5, 2, 1, 2, block_size=2), cyc(9, 2, 1, 2, block_size=2))),
    ),
    "2.11 unstructured, unstructured": v010(
        {"shape": (5, 9), "grid": (2, 2),
         "dist": ({"dist": "u", "indices": [[3, 0], [4, 2, 1]], "one_to_one": False},
                  {"dist": "u", "indices": [[2, 3, 7, 1], [6, 5, 8, 0, 4]],
                   "one_to_one": False})},
        FULL_5x9,
        (f64([[29, 30, 34, 28], [2, 3, 7, 1]]),
         (uns(5, 2, 0, [3, 0]), uns(9, 2, 0, [2, 3, 7, 1]))),
        (f64([[33, 32, 35, 27, 31], [6, 5, 8, 0, 4]]),
         (uns(5, 2, 0, [3, 0]), uns(9, 2, 1, [6, 5, 8, 0, 4]))),
        (f64([[38, 39, 43, 37], [20, 21, 25, 19], [11, 12, 16, 10]]),
         (uns(5, 2, 1, [4, 2, 1]), uns(9, 2, 0, [2, 3, 7, 1]))),
        (f64([[42, 41, 44, 36, 40], [24, 23, 26, 18, 22], [15, 14, 17, 9, 13]]),
         (uns(5, 2, 1, [4, 2, 1]), uns(9, 2, 1, [6, 5, 8, 0, 4]))),
    ),
    "2.12 cyclic, block, cyclic": v010(
        {"shape": (5, 9, 3), "dist": ("c", "b", "c"), "grid": (2, 2, 2)},
        FULL_5x9x3,
        (f64([[[0, 2], [3, 5], [6, 8], [9, 11], [12, 14]],
              [[54, 56], [57, 59], [60, 62], [63, 65], [66, 68]],
              [[108, 110], [111, 113], [114, 116], [117, 119], [120, 122]]]),
         (cyc(5, 2, 0, 0), blk(9, 2, 0, 0, 5), cyc(3, 2, 0, 0))),
        (f64([[[1], [4], [7], [10], [13]],
              [[55], [58], [61], [64], [67]],
              [[109], [112], [115], [118], [121]]]),
         (cyc(5, 2, 0, 0), blk(9, 2, 0, 0, 5), cyc(3, 2, 1, 1))),
        (f64([[[15, 17], [18, 20], [21, 23], [24, 26]],
              [[69, 71], [72, 74], [75, 77], [78, 80]],
              [[123, 125], [126, 128], [129, 131], [132, 134]]]),
         (cyc(5, 2, 0, 0), blk(9, 2, 1, 5, 9), cyc(3, 2, 0, 0))),
        (f64([[[16], [19], [22], [25]],
              [[70], [73], [76], [79]],
              [[124], [127], [130], [133]]]),
         (cyc(5, 2, 0, 0), blk(9, 2, 1, 5, 9), cyc(3, 2, 1, 1))),
        (f64([[[27, 29], [30, 32], [33, 35], [36, 38], [39, 41]],
              [[81, 83], [84, 86], [87, 89], [90, 92], [93, 95]]]),
         (cyc(5, 2, 1, 1), blk(9, 2, 0, 0, 5), cyc(3, 2, 0, 0))),
        (f64([[[28], [31], [34], [37], [40]],
              [[82], [85], [88], [91], [94]]]),
         (cyc(5, 2, 1, 1), blk(9, 2, 0, 0, 5), cyc(3, 2, 1, 1))),
        (f64([[[42, 44], [45, 47], [48, 50], [51, 53]],
              [[96, 98], [99, 101], [102, 104], [105, 107]]]),
         (cyc(5, 2, 1, 1), blk(9, 2, 1, 5, 9), cyc(3, 2, 0, 0))),
        (f64([[[43], [46], [49], [52]],
              [[97], [100], [103], [106]]]),
         (cyc(5, 2, 1, 1), blk(9, 2, 1, 5, 9), cyc(3, 2, 1, 1))),
    ),
    # -- dap-v0.9.0.rst ------------------------------------------------------------------
    "v0.9 block, no-distribution": v09(
        {"shape": (2, 10), "dist": ("b", "n"), "grid": (2, 1)},
        FULL_2x10,
        (ROW0, (blk(2, 2, 0, 0, 1), {"size": 10, "dist_type": "n"})),
        (ROW1, (blk(2, 2, 1, 1, 2), {"size": 10, "dist_type": "n"})),
    ),
    # v0.9's start/stop exclude communication padding: process 0 owns 0..8 (the boundary
    # element 0 included) and holds a copy of 9; process 1 owns 9..17 and holds a copy of 8.
    "v0.9 block with padding": v09(
        {"shape": 18, "dist": "b", "grid": (2,), "padding": 1},
        FULL_18,
        (PADDED0, (blk(18, 2, 0, 0, 9, padding=(1, 1)),)),
        (PADDED1, (blk(18, 2, 1, 9, 18, padding=(1, 1)),)),
    ),
    # Typo: the document prints each 'indices' as a Python list, e.g.
    # "'indices': [19, 1, 0, 12, 2, 15, 4]", but the spec requires "buffer (or
    # buffer-compatible) of int", which a list is not (memoryview([...]) raises TypeError);
    # uns() transcribes them as integer arrays, as the v0.10 document prints them.
    "v0.9 unstructured": v09(
        {"shape": 30, "dist": UNSTRUCTURED, "grid": (3,)},
        FULL_30,
        *((UNS_BUF[r], (uns(30, 3, r, UNS_IDX[r]),)) for r in range(3)),
    ),
}

# The v0.9 examples describe the same arrays as 2.1 to 2.3 with the same buffers.
V09_COUNTERPARTS = [
    ("v0.9 block, no-distribution", "2.1 block, block"),
    ("v0.9 block with padding", "2.2 block with padding"),
    ("v0.9 unstructured", "2.3 unstructured"),
]
# fmt: on


@pytest.mark.parametrize("name", EXAMPLES)
def test_from_distbuffers_reassembles_full_array(name):
    ex = EXAMPLES[name]
    dist = Distribution.from_distbuffers(ex.distbuffers())
    assert dist.global_shape == ex.full.shape
    assert dist.nranks == len(ex.ranks)
    assembled = np.full(ex.full.shape, np.nan)
    for rank, (buf, _) in enumerate(ex.ranks):
        assert dist.local_shape(rank) == buf.shape
        where = np.ix_(*dist.global_indices(rank))
        # Every local element, padding included, holds the value at its global index.
        assert_array_equal(buf, ex.full[where], err_msg=f"rank {rank}")
        assembled[where] = buf
    assert_array_equal(assembled, ex.full)


@pytest.mark.parametrize("name", EXAMPLES)
def test_owner_finds_every_element(name):
    ex = EXAMPLES[name]
    dist = Distribution.from_distbuffers(ex.distbuffers())
    ranks, local = dist.owner(tuple(np.indices(ex.full.shape)))
    assert_array_equal(np.unique(ranks), np.arange(dist.nranks))
    for rank, (buf, _) in enumerate(ex.ranks):
        mine = ranks == rank
        assert_array_equal(buf[tuple(i[mine] for i in local)], ex.full[mine], f"rank {rank}")


@pytest.mark.parametrize("name", EXAMPLES)
def test_create_matches_document(name):
    ex = EXAMPLES[name]
    created = Distribution.create(**ex.create)
    distbuffers = ex.distbuffers()
    assert created.nranks == len(distbuffers)
    for rank, db in enumerate(distbuffers):
        expected = validate_distbuffer(db, rank=rank).dim_data
        assert_equal(created.dim_data(rank), expected, err_msg=f"rank {rank}")
    assert created == Distribution.from_distbuffers(distbuffers)


@pytest.mark.parametrize(("old", "new"), V09_COUNTERPARTS)
def test_v09_example_imports_as_its_v010_counterpart(old, new):
    old_dbs, new_dbs = EXAMPLES[old].distbuffers(), EXAMPLES[new].distbuffers()
    assert {db["__version__"] for db in old_dbs} == {"0.9.0"}
    for rank, (a, b) in enumerate(zip(old_dbs, new_dbs)):
        assert_equal(validate_distbuffer(a).dim_data, validate_distbuffer(b).dim_data, f"{rank}")
    assert Distribution.from_distbuffers(old_dbs) == Distribution.from_distbuffers(new_dbs)
