"""SUMMA matrix products (`dapx.functions.summa`) against NumPy, with their grid and memory."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dapx
from dapx.functions.summa import summa, summa_grid
from dapx.testing import assert_eq
from tests.test_manipulation import data

#: The grid SUMMA picks for M >= N on each rank count of the suite (balanced factors).
GRIDS = {1: (1, 1), 2: (2, 1), 3: (3, 1), 4: (2, 2), 5: (5, 1), 6: (3, 2), 8: (4, 2)}
SHAPES = [(7, 5, 6), (13, 11, 9), (4, 9, 11)]
DTYPES = (np.float64, np.float32, np.complex128, np.int64, np.bool_)


def _layout(kind: str, shape, backend) -> dict:
    """``dist=``/``grid=`` of the input layouts: row, column and 2-D blocks, cyclic."""
    p = backend.nranks
    if kind == "rows":
        return {"dist": ("b", "n")}
    if kind == "cols":
        return {"dist": ("n", "b")}
    if kind == "2d":  # the grid dapx picks for 2-D blocks (4 ranks: 2 x 2)
        return {"dist": ("b", "b"), "grid": dapx.dims_create(p, 2)}
    if kind == "2d-irregular":
        rng = np.random.default_rng(sum(shape))
        grid = dapx.dims_create(p, 2)
        specs = []
        for n, g in zip(shape, grid):
            cuts = np.sort(rng.integers(0, n + 1, size=g - 1)).tolist()
            specs.append({"dist": "b", "bounds": [0, *cuts, n]})
        return {"dist": tuple(specs), "grid": grid}
    if kind == "cyclic":
        return {"dist": ("c", "c"), "grid": dapx.dims_create(p, 2)}
    if kind == "block-cyclic":  # ScaLAPACK's layout
        return {"dist": ({"dist": "c", "block_size": 2},) * 2, "grid": dapx.dims_create(p, 2)}
    raise ValueError(kind)


def _dist(x, kind, backend):
    return dapx.asarray(x, backend=backend, **_layout(kind, x.shape, backend))


def check(c, x, y) -> None:
    """`c` equals ``x @ y``: exactly for integers and bools, else within the dot product's bound.

    A sum of ``k`` products in any order is within ``k * eps * (|x| @ |y|)`` of
    the exact one (Higham's gamma_k, first order), elementwise; ``eps`` is that
    of the result dtype. Relative tolerances alone fail on cancelling sums.
    """
    expected = np.matmul(x, y)
    got = c.gather()
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if expected.dtype.kind not in "fc":
        np.testing.assert_array_equal(got, expected)
        return
    bound = np.abs(x).astype(np.float64) @ np.abs(y).astype(np.float64)
    eps = np.finfo(expected.dtype).eps
    err = np.abs(got.astype(np.complex128) - expected)
    assert (err <= 2 * (x.shape[1] + 1) * eps * bound).all(), float((err / bound).max())


def _expected_grid(nranks: int, m: int, n: int) -> tuple[int, int]:
    if nranks not in GRIDS:
        pytest.skip(f"no grid listed for {nranks} ranks")
    big, small = GRIDS[nranks]
    return (big, small) if m >= n else (small, big)


class Recorder:
    """Wraps the backend class's ``alltoallv``: what each local rank receives, call by call."""

    def __init__(self, backend, monkeypatch):
        self.calls: list[tuple[bool, dict[int, int]]] = []
        original = type(backend).alltoallv
        recorder = self

        def alltoallv(self, sends, recvcounts, sparse=False):
            received = original(self, sends, recvcounts, sparse=sparse)
            sizes = {r: sum(p.size for p in pieces.values()) for r, pieces in received.items()}
            recorder.calls.append((bool(sparse), sizes))
            return received

        monkeypatch.setattr(type(backend), "alltoallv", alltoallv)

    def largest(self, sparse: bool) -> int:
        return max((max(s.values(), default=0) for sp, s in self.calls if sp == sparse), default=0)

    def total(self, rank: int, sparse: bool) -> int:
        return sum(s.get(rank, 0) for sp, s in self.calls if sp == sparse)

    def count(self, sparse: bool) -> int:
        return sum(sp == sparse for sp, _ in self.calls)


# -- against NumPy ------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize(("m", "k", "n"), SHAPES)
def test_summa_matches_numpy_for_every_dtype(backend, dtype, m, k, n):
    x, y = data((m, k), dtype), data((k, n), dtype, seed=1)
    a, b = _dist(x, "cyclic", backend), _dist(y, "block-cyclic", backend)
    c = a @ b
    check(c, x, y)  # exact for int and bool (or of ands), the dot-product bound for floats
    assert c.distribution.grid_shape == _expected_grid(backend.nranks, m, n)
    assert c.distribution.dist_types == ("b", "b")


@pytest.mark.parametrize(
    ("kind_a", "kind_b"),
    [
        ("rows", "rows"),
        ("cols", "cols"),
        ("rows", "cols"),
        ("2d", "2d"),
        ("2d-irregular", "2d-irregular"),
        ("cyclic", "2d"),
        ("block-cyclic", "block-cyclic"),
        ("cols", "cyclic"),
    ],
)
@pytest.mark.parametrize(("m", "k", "n"), SHAPES[:2])
def test_summa_matches_numpy_for_every_input_layout(backend, kind_a, kind_b, m, k, n):
    x, y = data((m, k), seed=2), data((k, n), seed=3)
    a, b = _dist(x, kind_a, backend), _dist(y, kind_b, backend)
    check(a @ b, x, y)
    check(np.matmul(a, b), x, y)
    check(np.dot(a, b), x, y)
    check(np.tensordot(a, b, axes=1), x, y)


@pytest.mark.parametrize(("m", "k", "n"), [(0, 3, 4), (5, 0, 3), (4, 3, 0), (0, 0, 0), (1, 1, 1)])
@pytest.mark.parametrize("dtype", (np.float64, np.bool_), ids=lambda d: np.dtype(d).name)
def test_summa_with_empty_and_tiny_dimensions(backend, m, k, n, dtype):
    x, y = data((m, k), dtype), data((k, n), dtype, seed=1)
    a, b = _dist(x, "2d", backend), _dist(y, "2d", backend)
    check(a @ b, x, y)


def test_summa_promotes_dtypes_as_numpy(backend):
    x, y = data((7, 5), np.int64), data((5, 6), np.float32, seed=1)
    u, v = data((7, 5), np.bool_, seed=2), data((5, 6), np.complex64, seed=3)
    a, b = _dist(x, "rows", backend), _dist(y, "2d", backend)
    ab, av = _dist(u, "cols", backend), _dist(v, "cyclic", backend)
    check(a @ b, x, y)  # float64
    check(ab @ b, u, y)  # float32
    check(ab @ av, u, v)  # complex64
    check(a.astype(np.int8) @ ab.T.astype(np.uint8), x.astype(np.int8), u.T.astype(np.uint8))
    assert_eq(np.matmul(a, b, dtype=np.float32), np.matmul(x, y, dtype=np.float32))


def test_summa_next_to_numpy_operands(backend):
    x, y, z = data((7, 5)), data((5, 6), seed=1), data((6, 4), seed=2)
    a, b = _dist(x, "2d", backend), _dist(y, "cols", backend)
    assert_eq(a @ y, x @ y)  # a NumPy operand: the einsum route
    assert_eq(x @ b, x @ y)
    assert_eq((a @ b) @ z, x @ y @ z)
    assert_eq(np.linalg.multi_dot([a, b, _dist(z, "rows", backend)]), x @ y @ z)


def test_summa_rejects_what_numpy_rejects(backend):
    a = _dist(data((4, 3)), "2d", backend)
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        a @ a
    with pytest.raises(ValueError, match=r"\(M, K\) by \(K, N\)"):
        summa(a, a)
    when = np.full((2, 2), np.datetime64("2020-01-01"))
    dates = dapx.asarray(when, dist=("b", "b"), backend=backend)
    with pytest.raises(TypeError, match="matmul"):
        np.matmul(when, when)  # NumPy has no matmul loop for dates ...
    with pytest.raises(TypeError, match="matmul"):
        dates @ dates  # ... and neither has dapx


# -- the grid and the layouts -------------------------------------------------------------------


@pytest.mark.parametrize(("m", "n"), [(13, 9), (9, 13)])
def test_summa_grid_is_balanced_with_the_larger_factor_along_the_longer_side(backend, m, n):
    # Cyclic inputs lend no grid (row blocks would lend P x 1 when P is prime).
    a = _dist(data((m, 11)), "cyclic", backend)
    b = _dist(data((11, n), seed=1), "block-cyclic", backend)
    expected = _expected_grid(backend.nranks, m, n)
    assert summa_grid(a, b) == expected
    c = a @ b
    assert c.distribution.grid_shape == expected
    check(c, data((m, 11)), data((11, n), seed=1))


def _cuts(n: int, parts: int, seed: int) -> list[int]:
    """Irregular block bounds of `n` over `parts` (empty blocks allowed)."""
    inner = np.sort(np.random.default_rng(seed).integers(0, n + 1, size=parts - 1))
    return [0, *inner.tolist(), n]


def test_operands_on_a_balanced_grid_are_used_as_they_are(backend, monkeypatch):
    """Irregular 2-D blocks on the transposed grid: no redistribution, their bounds kept."""
    big, small = _expected_grid(backend.nranks, 1, 1)
    grid = (small, big)  # not the orientation SUMMA would pick for M >= N
    x, y = data((13, 11)), data((11, 9), seed=1)
    rows, k_a = _cuts(13, small, 1), _cuts(11, big, 2)
    k_b, cols = _cuts(11, small, 3), _cuts(9, big, 4)

    def blocks(z, first, second):
        dist = ({"dist": "b", "bounds": first}, {"dist": "b", "bounds": second})
        return dapx.asarray(z, dist=dist, grid=grid, backend=backend)

    a, b = blocks(x, rows, k_a), blocks(y, k_b, cols)
    recorder = Recorder(backend, monkeypatch)
    c = a @ b
    assert recorder.count(sparse=False) == 0  # no redistribution
    assert c.distribution.grid_shape == grid
    assert c.distribution.maps[0].bounds.tolist() == rows
    assert c.distribution.maps[1].bounds.tolist() == cols
    check(c, x, y)


# -- memory and traffic -------------------------------------------------------------------------


def _even(n: int, p: int) -> list[int]:
    q, r = divmod(n, p)
    return [i * q + min(i, r) for i in range(p + 1)]


@pytest.mark.parametrize(("m", "k", "n"), [(13, 11, 9), (40, 30, 20)])
def test_no_call_moves_more_than_a_panel(backend, monkeypatch, m, k, n):
    pr, pc = _expected_grid(backend.nranks, m, n)
    x, y = data((m, k)), data((k, n), seed=1)
    a = dapx.asarray(x, dist=("b", "b"), grid=(pr, pc), backend=backend)
    b = dapx.asarray(y, dist=("b", "b"), grid=(pr, pc), backend=backend)
    recorder = Recorder(backend, monkeypatch)
    c = a @ b
    check(c, x, y)
    rows, cols = _even(m, pr), _even(n, pc)
    k_a, k_b = _even(k, pc), _even(k, pr)
    panels = np.union1d(k_a, k_b)
    widest = int(np.diff(panels).max())
    panel = max(max(np.diff(rows)) * widest, widest * max(np.diff(cols)))
    assert recorder.count(sparse=False) == 0
    assert recorder.largest(sparse=True) <= panel
    # One call per round of each binomial-tree broadcast, per panel.
    rounds = math.ceil(math.log2(pc)) + math.ceil(math.log2(pr))
    assert recorder.count(sparse=True) == (len(panels) - 1) * rounds
    for r in backend.local_ranks:
        i, j = divmod(r, pc)
        # Exactly the rest of its row strip of A and column strip of B, each element once.
        strip_a = (rows[i + 1] - rows[i]) * (k - (k_a[j + 1] - k_a[j]))
        strip_b = (cols[j + 1] - cols[j]) * (k - (k_b[i + 1] - k_b[i]))
        assert recorder.total(r, sparse=True) == strip_a + strip_b
        if pr > 1 and pc > 1:  # a ring of row blocks brings every rank the whole of B
            assert recorder.total(r, sparse=True) < min(m * k, k * n)


def test_one_redistribution_moves_at_most_a_block(backend, monkeypatch):
    m, k, n = 24, 20, 16
    pr, pc = _expected_grid(backend.nranks, m, n)
    x, y = data((m, k)), data((k, n), seed=1)
    a, b = _dist(x, "rows", backend), _dist(y, "cyclic", backend)
    recorder = Recorder(backend, monkeypatch)
    check(a @ b, x, y)
    block = max(
        max(np.diff(_even(m, pr))) * max(np.diff(_even(k, pc))),
        max(np.diff(_even(k, pr))) * max(np.diff(_even(n, pc))),
    )
    assert recorder.count(sparse=False) <= 2  # at most one exchange per operand
    assert recorder.largest(sparse=False) <= block
    widest = int(np.diff(np.union1d(_even(k, pc), _even(k, pr))).max())
    panel = max(max(np.diff(_even(m, pr))) * widest, widest * max(np.diff(_even(n, pc))))
    assert recorder.largest(sparse=True) <= panel


# -- determinism --------------------------------------------------------------------------------


def _bits(x: np.ndarray) -> bytes:
    return np.ascontiguousarray(x).tobytes()


@pytest.mark.parametrize("dtype", (np.float64, np.float32, np.complex128), ids=str)
def test_summa_is_bitwise_reproducible_and_the_same_on_the_simulated_backend(backend, dtype):
    x, y = data((29, 23), dtype), data((23, 19), dtype, seed=1)
    a, b = _dist(x, "rows", backend), _dist(y, "cyclic", backend)
    first = (a @ b).gather()
    assert _bits(first) == _bits((a @ b).gather())
    # Other input layouts, same grid: the same blocks, panels and sums, so the same bits.
    assert _bits(first) == _bits((_dist(x, "2d", backend) @ _dist(y, "cols", backend)).gather())
    # The simulated backend with as many ranks (under mpiexec: MPI next to simulated).
    simulated = dapx.simulated(backend.nranks)
    same = dapx.asarray(x, backend=simulated) @ dapx.asarray(y, backend=simulated)
    assert _bits(first) == _bits(same.gather())
    check(a @ b, x, y)
