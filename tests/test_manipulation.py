"""Shape manipulation, comparisons, copies, sorting and einsum, checked against NumPy.

Every test builds the same data as a NumPy array (the oracle) and as a
DistributedArray in one of the common layouts (even and irregular block,
cyclic, block-cyclic, unstructured) on 1 to 6 simulated ranks.
"""

from __future__ import annotations

import numpy as np
import pytest

import dapx
from dapx.testing import assert_eq
from dapx.testing import distribute as dist

LAYOUTS = ("b", "b-irregular", "c", "c2", "u")
DTYPES = (np.float64, np.int64, np.bool_, np.complex128)


@pytest.fixture(params=LAYOUTS)
def kind(request):
    return request.param


def data(shape, dtype=np.float64, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind == "i":
        return rng.integers(-20, 20, shape).astype(dtype)
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


# -- transpose, swapaxes, moveaxis -----------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5, 4), (3, 0), (2, 3, 5), (7,)])
def test_transpose_family(backend, kind, shape):
    x = data(shape, np.int64)
    a = dist(x, kind, backend)
    assert_eq(np.transpose(a), np.transpose(x))
    assert_eq(a.T, x.T)
    if x.ndim >= 2:
        assert_eq(np.swapaxes(a, 0, -1), np.swapaxes(x, 0, -1))
        assert_eq(np.moveaxis(a, 0, -1), np.moveaxis(x, 0, -1))
        assert_eq(a.transpose(1, 0, *range(2, x.ndim)), x.transpose(1, 0, *range(2, x.ndim)))
        assert_eq(np.matrix_transpose(a), np.matrix_transpose(x))
    if x.ndim == 3:
        for axes in [(1, 2, 0), (2, 0, 1), (0, 2, 1)]:
            assert_eq(np.transpose(a, axes), np.transpose(x, axes))
            assert_eq(a.transpose(axes), x.transpose(axes))


@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose_dtypes_and_grids(backend, dtype):
    x = data((4, 6), dtype)
    for grid in {(backend.nranks, 1), (1, backend.nranks), dapx.dims_create(backend.nranks, 2)}:
        a = dapx.asarray(x, dist=("b", "c"), grid=grid, backend=backend)
        t = a.T
        assert t.distribution.grid_shape == grid[::-1]
        assert_eq(t, x.T)


def test_transpose_is_a_view_when_no_block_moves(backend):
    x = data((6, 4))
    a = dapx.asarray(x, dist=("b", "n"), backend=backend)
    t = a.T
    assert all(np.shares_memory(t.local(r), a.local(r)) for r in backend.local_ranks)
    if 0 in backend.local_ranks:  # rank 0 holds element (0, 0)
        a.local(0)[0, 0] = 42.0
    assert t.gather()[0, 0] == 42.0


def test_transpose_errors(backend):
    a = dapx.zeros((2, 3), backend=backend)
    with pytest.raises(ValueError, match="repeated axis"):
        np.transpose(a, (0, 0))
    with pytest.raises(ValueError, match="axes don't match"):
        np.transpose(a, (0,))
    with pytest.raises(np.exceptions.AxisError):
        np.swapaxes(a, 0, 2)
    with pytest.raises(ValueError, match="same number of elements"):
        np.moveaxis(a, (0, 1), 0)


# -- reshape, ravel, squeeze, expand_dims ----------------------------------------------------------

RESHAPES = [
    ((12,), (3, 4)),
    ((12,), (2, 2, 3)),
    ((3, 4), (12,)),
    ((3, 4), (2, 6)),
    ((3, 4), (4, -1)),
    ((2, 3, 5), (6, 5)),
    ((2, 3, 5), (2, 15)),
    ((2, 3, 5), (5, 3, 2)),
    ((7,), (7, 1)),
    ((7,), (1, 7, 1)),
    ((1, 7), (7,)),
    ((3, 0), (0, 5)),
    ((0,), (2, 0, 3)),
    ((5, 1), (1, 5)),
]


@pytest.mark.parametrize(("old", "new"), RESHAPES)
def test_reshape(backend, kind, old, new):
    x = data(old, np.int64)
    a = dist(x, kind, backend)
    assert_eq(np.reshape(a, new), np.reshape(x, new))
    assert_eq(a.reshape(new), x.reshape(new))
    assert_eq(a.reshape(*new), x.reshape(*new))


def test_reshape_local_cases_share_memory(backend):
    P = backend.nranks
    x = data((2 * P, 3, 4))
    a = dapx.asarray(x, dist=("b", "n", "n"), backend=backend)
    for new in [(2 * P, 12), (2 * P * 3, 4), (P, 2, 12), (2 * P * 12,)]:
        b = a.reshape(new)
        assert_eq(b, x.reshape(new))
        assert all(np.shares_memory(b.local(r), a.local(r)) for r in backend.local_ranks)
        v = a.reshape(new, copy=False)
        assert all(np.shares_memory(v.local(r), a.local(r)) for r in backend.local_ranks)
    c = a.reshape((2 * P, 12), copy=True)
    assert not any(np.shares_memory(c.local(r), a.local(r)) for r in backend.local_ranks)


@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_dtypes_and_scalars(backend, kind, dtype):
    x = data((4, 5), dtype)
    a = dist(x, kind, backend)
    assert_eq(a.reshape(5, 2, 2), x.reshape(5, 2, 2))
    one = dist(x[:1, :1], kind, backend)
    s = one.reshape(())
    assert s.ndim == 0 and s.item() == x[0, 0]
    assert_eq(s.reshape(1, 1), x[:1, :1])
    assert bool(one) == bool(x[0, 0])


def test_reshape_errors(backend):
    a = dapx.arange(12, dist="c", backend=backend)
    with pytest.raises(ValueError, match="cannot reshape array of size 12 into shape"):
        a.reshape(5)
    with pytest.raises(ValueError, match="one unknown dimension"):
        a.reshape(-1, -1)
    with pytest.raises(ValueError, match="order"):
        a.reshape(3, 4, order="X")
    with pytest.raises(NotImplementedError, match="order='F'"):
        np.reshape(a, (3, 4), order="F")
    if backend.nranks > 1:
        with pytest.raises(ValueError, match="Unable to avoid creating a copy"):
            np.reshape(a, (3, 4), copy=False)


def test_ravel_flatten_squeeze_expand_dims(backend, kind):
    x = data((3, 1, 4), np.int64)
    a = dist(x, kind, backend)
    assert_eq(np.ravel(a), np.ravel(x))
    assert_eq(a.ravel(), x.ravel())
    flat = a.flatten()
    assert_eq(flat, x.flatten())
    assert not any(np.shares_memory(flat.local(r), a.local(r)) for r in backend.local_ranks)
    assert_eq(np.squeeze(a), np.squeeze(x))
    assert_eq(a.squeeze(axis=1), x.squeeze(axis=1))
    assert_eq(np.expand_dims(a, (0, -1)), np.expand_dims(x, (0, -1)))
    assert_eq(np.expand_dims(dapx.asarray(np.float64(2.5), backend=backend), 0), np.array([2.5]))
    with pytest.raises(ValueError, match="size not equal to one"):
        np.squeeze(a, axis=0)
    with pytest.raises(NotImplementedError):
        np.ravel(a, order="F")


# -- concatenate and stack -------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5,), (4, 3), (2, 3, 4), (0, 3)])
def test_concatenate(backend, kind, shape):
    x = data(shape, np.float64, seed=1)
    a = dist(x, kind, backend)
    for axis in range(x.ndim):
        other_shape = list(shape)
        other_shape[axis] = 3
        y = data(tuple(other_shape), np.int64, seed=2)
        b = dist(y, "c", backend, seed=3)
        expected = np.concatenate([x, y, x], axis=axis)
        assert_eq(np.concatenate([a, b, a], axis=axis), expected)
        assert_eq(np.concatenate([y, a, y], axis=axis), np.concatenate([y, x, y], axis=axis))
        assert_eq(np.concat((b, x), axis=axis), np.concat((y, x), axis=axis))
    assert_eq(np.concatenate([a, a], axis=None), np.concatenate([x, x], axis=None))


@pytest.mark.parametrize("dtype", DTYPES)
def test_concatenate_dtypes_and_out(backend, dtype):
    x = data((6, 2), dtype)
    a = dist(x, "b-irregular", backend)
    b = dist(x, "u", backend, seed=5)
    assert_eq(np.concatenate([a, b], axis=1), np.concatenate([x, x], axis=1))
    out = dapx.zeros((12, 2), dtype, dist="c", backend=backend)
    result = np.concatenate([a, b], out=out)
    assert result is out
    assert_eq(out, np.concatenate([x, x]))
    expected = np.concatenate([x, x], dtype=np.complex128)
    assert_eq(np.concatenate([a, b], dtype=np.complex128), expected)


def test_concatenate_padded_and_shared_inputs(backend):
    x = np.arange(12.0)
    padded = dapx.asarray(x, padding=1, backend=backend)
    assert_eq(np.concatenate([padded, x, padded]), np.concatenate([x, x, x]))
    if backend.nranks == 2:
        spec = {"dist": "u", "indices": [list(range(8)), list(range(4, 12))], "one_to_one": False}
        shared = dapx.asarray(x, dist=spec, backend=backend)
        assert_eq(np.concatenate([shared, padded]), np.concatenate([x, x]))
        assert_eq(np.concatenate([padded, shared]), np.concatenate([x, x]))


def test_concatenate_errors(backend):
    a = dapx.zeros((2, 3), backend=backend)
    with pytest.raises(ValueError, match="along dimension 1, the array at index 0 has size 3"):
        np.concatenate([a, dapx.zeros((2, 4), backend=backend)])
    with pytest.raises(ValueError, match="same number of dimensions"):
        np.concatenate([a, np.zeros(3)])
    with pytest.raises(ValueError, match="zero-dimensional"):
        np.concatenate([dapx.asarray(1.0, backend=backend), dapx.asarray(2.0, backend=backend)])
    with pytest.raises(np.exceptions.AxisError):
        np.concatenate([a, a], axis=2)
    with pytest.raises(TypeError, match="same_kind"):
        np.concatenate([a, a], dtype=np.int64)
    with pytest.raises(TypeError, match="out= must be a DistributedArray"):
        np.concatenate([a, a], out=np.zeros((4, 3)))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_stack(backend, kind, axis):
    x, y = data((4, 3), np.int64, 1), data((4, 3), np.int64, 2)
    a, b = dist(x, kind, backend), dist(y, "c", backend)
    assert_eq(np.stack([a, b, x], axis=axis), np.stack([x, y, x], axis=axis))
    s = [dapx.asarray(np.float64(v), backend=backend) for v in (1.0, 2.0)]
    assert_eq(np.stack(s), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="same shape"):
        np.stack([a, dapx.zeros((3, 3), backend=backend)])
    with pytest.raises(ValueError, match="at least one array"):
        np.stack([])


# -- pad, roll, diff -------------------------------------------------------------------------------

PAD_CASES = [
    ("constant", {}),
    ("constant", {"constant_values": ((1, 2), (3, 4))}),
    ("edge", {}),
    ("reflect", {}),
    ("symmetric", {}),
    ("wrap", {}),
]


def dict_widths(widths: list) -> list:
    """`widths` where NumPy, the oracle, takes a dict pad_width (NumPy 2.3+), else none."""
    return widths if np.lib.NumpyVersion(np.__version__) >= "2.3.0" else []


@pytest.mark.parametrize(("mode", "kwargs"), PAD_CASES)
@pytest.mark.parametrize("width", [2, ((1, 0), (0, 3)), ((6, 1), (2, 7))])
def test_pad_2d(backend, kind, mode, kwargs, width):
    x = data((5, 4), np.int64)
    a = dist(x, kind, backend)
    assert_eq(np.pad(a, width, mode=mode, **kwargs), np.pad(x, width, mode=mode, **kwargs))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
def test_pad_1d_dtypes(backend, kind, dtype, mode):
    x = data((7,), dtype)
    a = dist(x, kind, backend)
    for width in [(0, 0), (3, 1), (9, 12), *dict_widths([{0: (1, 2)}])]:
        assert_eq(np.pad(a, width, mode=mode), np.pad(x, width, mode=mode))
    assert_eq(np.pad(dist(x[:1], kind, backend), 3, mode=mode), np.pad(x[:1], 3, mode=mode))


def test_pad_3d_and_empty(backend, kind):
    x = data((2, 3, 4))
    a = dist(x, kind, backend)
    width = ((1, 0), (2, 2), (0, 1))
    assert_eq(
        np.pad(a, width, mode="constant", constant_values=7.5),
        np.pad(x, width, mode="constant", constant_values=7.5),
    )
    assert_eq(np.pad(a, width, mode="reflect"), np.pad(x, width, mode="reflect"))
    e = np.zeros((0, 3))
    assert_eq(np.pad(dist(e, kind, backend), 2), np.pad(e, 2))
    assert_eq(
        np.pad(dist(e, kind, backend), ((0, 0), (1, 1)), mode="edge"),
        np.pad(e, ((0, 0), (1, 1)), mode="edge"),
    )


def test_pad_errors(backend):
    a = dapx.arange(4.0, backend=backend)
    with pytest.raises(ValueError, match="can't extend empty axis 0"):
        np.pad(dapx.zeros((0, 2), backend=backend), 1, mode="edge")
    with pytest.raises(ValueError, match="negative"):
        np.pad(a, -1)
    with pytest.raises(TypeError, match="integral"):
        np.pad(a, 1.5)
    with pytest.raises(ValueError, match="unsupported keyword arguments for mode 'edge'"):
        np.pad(a, 1, mode="edge", constant_values=3)
    with pytest.raises(ValueError, match="not supported"):
        np.pad(a, 1, mode="foo")
    with pytest.raises(NotImplementedError, match="'mean'"):
        np.pad(a, 1, mode="mean")
    with pytest.raises(NotImplementedError, match="odd"):
        np.pad(a, 1, mode="reflect", reflect_type="odd")


PAD_MODES = {
    "constant": {"constant_values": ((1, 2), (3, 4))},
    "edge": {},
    "reflect": {},
    "symmetric": {},
    "wrap": {},
}


@pytest.mark.parametrize("mode", list(PAD_MODES))
def test_pad_of_block_axes_keeps_the_blocks_and_moves_only_edges(backend, mode, monkeypatch):
    """Each rank keeps its block, the edge ranks take the edges; only remote edges move.

    Constant, edge, reflect and symmetric edges read the edge ranks' own
    data, so they make no collective call; wrap moves at most the edges.
    """
    x = data((12, 10))
    # Both axes split, with edge blocks wide enough for every mode's edge rows:
    a = dapx.asarray(x, grid=dapx.dims_create(backend.nranks, 2), backend=backend)
    width, kwargs = ((2, 1), (1, 3)), PAD_MODES[mode]
    moved = []
    alltoallv = type(backend).alltoallv

    def counting(self, sends, recvcounts, sparse=False):
        moved.extend(int(counts.sum() - counts[r]) for r, (_, counts) in sends.items())
        return alltoallv(self, sends, recvcounts, sparse)

    def refuse(*args, **kwargs):
        raise AssertionError(f"np.pad(mode={mode!r}) communicated")

    with monkeypatch.context() as m:  # undone before the MPI plugin shares the outcome
        m.setattr(type(backend), "alltoallv", counting if mode == "wrap" else refuse)
        for method in ("allgather", "allgather_array", "bcast", "barrier", "combine"):
            m.setattr(type(backend), method, refuse)
        result = np.pad(a, width, mode=mode, **kwargs)
    expected = np.pad(x, width, mode=mode, **kwargs)
    assert sum(moved) <= expected.size - x.size
    for k, (old, new) in enumerate(zip(a.distribution.maps, result.distribution.maps)):
        shifted = old.bounds + width[k][0]
        shifted[0], shifted[-1] = 0, expected.shape[k]
        np.testing.assert_array_equal(new.bounds, shifted)
    assert_eq(result, expected)


def _edge_bounds(n: int, p: int) -> list[int]:
    """Block bounds whose first block is empty and (from 3 blocks) last block holds one element."""
    if p < 3:
        return [0, 0, n][-p - 1 :]
    return [0, 0, *np.linspace(1, n - 1, p - 1).astype(int)[1:-1].tolist(), n - 1, n]


@pytest.mark.parametrize("mode", list(PAD_MODES))
def test_pad_of_block_axes_whose_edge_ranks_lack_data(backend, mode):
    """Edge ranks with empty or small blocks, widths wider than the array, and halos."""
    x = data((9, 7), np.int64)
    kwargs = PAD_MODES[mode]
    grid = dapx.dims_create(backend.nranks, 2)
    specs = [{"dist": "b", "bounds": _edge_bounds(n, p)} for n, p in zip(x.shape, grid)]
    arrays = [
        dapx.asarray(x, dist=specs, grid=grid, backend=backend),
        dapx.asarray(x, dist=("b", "n"), backend=backend),
        dapx.asarray(x, dist=("b", "b"), padding=1, backend=backend),
        dapx.asarray(x, dist=("c", "b"), grid=grid, backend=backend),
    ]
    for a in arrays:
        for width in [1, ((3, 0), (2, 5)), ((11, 20), (0, 15)), *dict_widths([{1: (4, 1)}])]:
            assert_eq(
                np.pad(a, width, mode=mode, **kwargs),
                np.pad(x, width, mode=mode, **kwargs),
                err_msg=f"{a.distribution} width {width}",
            )


@pytest.mark.parametrize("shape", [(7,), (4, 5), (2, 3, 4), (0, 3)])
def test_roll(backend, kind, shape):
    x = data(shape, np.int64)
    a = dist(x, kind, backend)
    for shift, axis in [(2, None), (-9, None), (1, 0), (-1, -1), (11, 0)]:
        assert_eq(np.roll(a, shift, axis), np.roll(x, shift, axis))
    if x.ndim >= 2:
        assert_eq(np.roll(a, (1, -2), (0, 1)), np.roll(x, (1, -2), (0, 1)))
        assert_eq(np.roll(a, (1, 2), (1, 1)), np.roll(x, (1, 2), (1, 1)))
        assert_eq(np.roll(a, 3, (0, 1)), np.roll(x, 3, (0, 1)))
    r = np.roll(a, 1, 0)
    assert r.distribution.dist_types == a.distribution.dist_types


@pytest.mark.parametrize("dtype", DTYPES)
def test_roll_dtypes_padded_shared_scalar(backend, dtype):
    x = data((9,), dtype)
    padded = dapx.asarray(x, padding=1, backend=backend)
    assert_eq(np.roll(padded, 4), np.roll(x, 4))
    s = dapx.asarray(x[0], backend=backend)
    assert_eq(np.roll(s, 3), np.roll(x[0], 3))
    if backend.nranks == 2:
        shared = dapx.asarray(
            x,
            dist={"dist": "u", "indices": [[0, 1, 2, 3, 4], [4, 5, 6, 7, 8]], "one_to_one": False},
            backend=backend,
        )
        assert_eq(np.roll(shared, -2), np.roll(x, -2))
    with pytest.raises(ValueError, match="scalars or 1D"):
        np.roll(padded, [[1]], 0)


@pytest.mark.parametrize("shape", [(8,), (5, 4), (2, 3, 4), (1,), (0, 3)])
def test_diff(backend, kind, shape):
    x = data(shape, np.float64)
    a = dist(x, kind, backend)
    for n in [0, 1, 2, 3]:
        for axis in range(-x.ndim, x.ndim):
            assert_eq(np.diff(a, n, axis), np.diff(x, n, axis))
    assert_eq(
        np.diff(a, prepend=1.5, append=x[..., :2]), np.diff(x, prepend=1.5, append=x[..., :2])
    )
    assert_eq(np.diff(a, axis=0, append=a), np.diff(x, axis=0, append=x))


@pytest.mark.parametrize("dtype", DTYPES)
def test_diff_dtypes(backend, kind, dtype):
    x = data((9,), dtype)
    a = dist(x, kind, backend)
    assert_eq(np.diff(a), np.diff(x))
    assert_eq(np.diff(a, 2), np.diff(x, 2))


def test_diff_errors(backend):
    with pytest.raises(ValueError, match="at least one dimensional"):
        np.diff(dapx.asarray(1.0, backend=backend))
    with pytest.raises(ValueError, match="non-negative"):
        np.diff(dapx.arange(3, backend=backend), n=-1)
    with pytest.raises(np.exceptions.AxisError):
        np.diff(dapx.arange(3, backend=backend), axis=1)


# -- where, clip, round, comparisons ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_where_clip_round(backend, kind, dtype):
    x = data((5, 3), dtype, 1)
    y = data((5, 3), dtype, 2)
    a, b = dist(x, kind, backend), dist(y, "c", backend)
    c = data((5, 3), bool, 3)
    cond = dist(c, "b", backend)
    assert_eq(np.where(cond, a, b), np.where(c, x, y))
    assert_eq(np.where(c, a, 0), np.where(c, x, 0))
    assert_eq(np.where(cond, x[0], b), np.where(c, x[0], y))
    if dtype != np.complex128:
        assert_eq(np.clip(a, 0, 1), np.clip(x, 0, 1))
        assert_eq(np.clip(a, b, None), np.clip(x, y, None))
        assert_eq(np.clip(a, min=y[0]), np.clip(x, min=y[0]))
        assert_eq(a.clip(max=0), x.clip(max=0))
    if dtype != np.bool_:
        assert_eq(np.round(a * 3.14159, 2), np.round(x * 3.14159, 2))
        assert_eq(np.around(a, -1), np.around(x, -1))
        assert_eq(a.round(1), x.round(1))


def test_where_clip_round_scalars_and_out(backend):
    s = dapx.asarray(np.float64(2.345), backend=backend)
    assert_eq(np.round(s, 1), np.round(np.float64(2.345), 1)[()])
    assert_eq(np.where(s > 1, s, 0.0), np.where(2.345 > 1, np.array(2.345), 0.0))
    x = data((6,))
    a = dist(x, "c", backend)
    out = dapx.zeros(6, dist="b", backend=backend)
    assert np.clip(a, -0.5, 0.5, out=out) is out
    assert_eq(out, np.clip(x, -0.5, 0.5))
    assert np.round(a, 1, out=out) is out
    assert_eq(out, np.round(x, 1))
    with pytest.raises(ValueError, match="both or neither"):
        np.where(a > 0, a)
    with pytest.raises(TypeError, match="a_max"):
        np.clip(a, 0)
    with pytest.raises(ValueError, match="forbidden"):
        np.clip(a, 0, 1, min=0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_isclose_allclose_array_equal(backend, kind, dtype):
    x = data((4, 5), dtype)
    a = dist(x, kind, backend)
    b = dist(x, "c", backend)
    assert np.array_equal(a, b) is True
    assert np.array_equal(a, x) is True
    assert np.allclose(a, b) is True
    assert_eq(np.isclose(a, b), np.isclose(x, x))
    if x.size and dtype != np.bool_:
        y = x.copy()
        y[3, 4] = y[3, 4] + 1
        c = dist(y, "u", backend)
        assert np.array_equal(a, c) is False
        assert np.allclose(a, c) is False
        assert_eq(np.isclose(a, c), np.isclose(x, y))
    assert np.array_equal(a, x[:2]) is False
    assert np.array_equal(a, "not an array") is False


def test_nan_comparisons(backend, kind):
    x = np.array([1.0, np.nan, 3.0, np.inf, -0.0, np.nan])
    y = np.array([1.0, np.nan, 3.0 + 1e-9, np.inf, 0.0, 2.0])
    a, b = dist(x, kind, backend), dist(y, "c", backend)
    assert np.array_equal(a, a) == np.array_equal(x, x)
    assert np.array_equal(a, a, equal_nan=True) == np.array_equal(x, x, equal_nan=True)
    assert np.array_equal(a, b, equal_nan=True) == np.array_equal(x, y, equal_nan=True)
    assert np.allclose(b, y, equal_nan=True) is True
    assert np.allclose(a, b) == np.allclose(x, y)
    assert_eq(np.isclose(a, b, equal_nan=True), np.isclose(x, y, equal_nan=True))
    s = dapx.asarray(np.float64(np.nan), backend=backend)
    assert np.array_equal(s, s, equal_nan=True) is True
    assert np.array_equal(s, s) is False


# -- nonzero, argwhere -----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(9,), (4, 5), (2, 3, 4), (0, 3)])
def test_nonzero_family(backend, kind, shape):
    x = data(shape, np.int64) * data(shape, bool, 7)
    a = dist(x, kind, backend)
    got, expected = np.nonzero(a), np.nonzero(x)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert_eq(g, e)
    for g, e in zip(np.where(a), np.where(x)):
        assert_eq(g, e)
    for g, e in zip(a.nonzero(), x.nonzero()):
        assert_eq(g, e)
    assert_eq(np.argwhere(a), np.argwhere(x))
    assert_eq(np.flatnonzero(a), np.flatnonzero(x))


def test_nonzero_scalars(backend):
    for v in (0, 5):
        s = dapx.asarray(v, backend=backend)
        assert_eq(np.argwhere(s), np.argwhere(v))
    with pytest.raises(ValueError, match="0d arrays"):
        np.nonzero(dapx.asarray(1, backend=backend))


# -- like, copy, astype, dtypes, real/imag ---------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_like_and_copy(backend, kind, dtype):
    x = data((5, 3), dtype)
    a = dist(x, kind, backend)
    for func in (np.zeros_like, np.ones_like):
        r = func(a)
        assert r.distribution == a.distribution
        assert_eq(r, func(x))
        assert_eq(func(a, dtype=np.float32), func(x, dtype=np.float32))
    assert_eq(np.full_like(a, 3), np.full_like(x, 3))
    assert_eq(np.full_like(a, 2, shape=(2, 7)), np.full_like(x, 2, shape=(2, 7)))
    e = np.empty_like(a, dtype=np.int64)
    assert e.shape == x.shape and e.dtype == np.int64
    for c in (np.copy(a), a.copy()):
        assert_eq(c, x)
        assert not any(np.shares_memory(c.local(r), a.local(r)) for r in backend.local_ranks)
    with pytest.raises(NotImplementedError, match="order='F'"):
        np.zeros_like(a, order="F")
    with pytest.raises(ValueError, match="order must be"):
        np.copy(a, order="X")
    with pytest.raises(ValueError, match="Device"):
        np.ones_like(a, device="gpu")


@pytest.mark.parametrize("dtype", DTYPES)
def test_astype_result_type(backend, dtype):
    x = data((7,), dtype)
    a = dist(x, "c", backend)
    for target in DTYPES:
        if np.dtype(dtype).kind == "c" and np.dtype(target).kind != "c":
            continue
        assert_eq(a.astype(target), x.astype(target))
        assert_eq(np.astype(a, target), np.astype(x, target))
    assert a.astype(dtype, copy=False) is a
    assert a.astype(dtype) is not a
    if np.dtype(dtype) != np.bool_:
        with pytest.raises(TypeError, match="according to the rule 'safe'"):
            a.astype(np.bool_, casting="safe")
    assert_eq(a.astype(np.complex128, casting="safe"), x.astype(np.complex128, casting="safe"))
    assert np.result_type(a, 1.5) == np.result_type(x, 1.5)
    assert np.result_type(a, np.float32, a) == np.result_type(x, np.float32, x)


def test_real_imag_conj(backend, kind):
    x = data((4, 3), np.complex128)
    a = dist(x, kind, backend)
    assert_eq(a.real, x.real)
    assert_eq(a.imag, x.imag)
    assert_eq(np.real(a), np.real(x))
    assert_eq(np.imag(a), np.imag(x))
    assert_eq(a.conj(), x.conj())
    assert_eq(a.conjugate(), x.conjugate())
    assert all(
        np.shares_memory(a.real.local(r), a.local(r))
        for r in backend.local_ranks
        if a.local(r).size
    )
    a.imag = 1.0
    a.real = dist(x.imag, "c", backend)
    assert_eq(a, x.imag + 1j)
    f = dist(x.real, kind, backend)
    assert_eq(f.imag, np.zeros_like(x.real))
    assert_eq(f.conj(), x.real)
    f.real = np.arange(3.0)
    assert_eq(f, np.broadcast_to(np.arange(3.0), (4, 3)))
    with pytest.raises(TypeError, match="imaginary part"):
        f.imag = 1.0
    with pytest.raises(ValueError, match="broadcast"):
        f.real = np.arange(4.0)


# -- sorting and searching -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", [0, 1, 13, 40])
def test_sort_1d(backend, kind, dtype, size):
    x = data((size,), dtype)
    if np.dtype(dtype).kind == "i":
        x = x % 5  # many ties
    if np.dtype(dtype).kind == "f" and size > 3:
        x[[1, 3]] = np.nan
    a = dist(x, kind, backend)
    got = np.argsort(a)
    assert got.distribution == a.distribution
    assert_eq(got, np.argsort(x, kind="stable"))
    assert_eq(np.sort(a), np.sort(x))
    assert_eq(a.argsort(stable=True), x.argsort(stable=True))


@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_sort_nd(backend, kind, axis):
    x = data((6, 5), np.int64) % 4
    a = dist(x, kind, backend)
    assert_eq(np.argsort(a, axis=axis), np.argsort(x, axis=axis, kind="stable"))
    assert_eq(np.sort(a, axis=axis), np.sort(x, axis=axis))
    y = data((3, 4, 5))
    b = dist(y, kind, backend)
    assert_eq(
        np.argsort(b, axis=1 if axis is None else axis),
        np.argsort(y, axis=1 if axis is None else axis),
    )


def test_sort_scalars_and_errors(backend):
    s = dapx.asarray(3.0, backend=backend)
    assert_eq(np.argsort(s), np.argsort(np.array(3.0)))
    with pytest.raises(np.exceptions.AxisError):
        np.sort(s)
    a = dapx.arange(5, backend=backend)
    with pytest.raises(ValueError, match="can't be provided at the same time"):
        np.argsort(a, kind="stable", stable=True)
    with pytest.raises(NotImplementedError, match="order="):
        np.sort(a, order="f")


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(backend, kind, side):
    x = np.sort(data((17,), np.int64) % 7).astype(np.float64)
    a = dist(x, kind, backend)
    v = np.array([-1.0, 0.0, 3.0, 3.5, 6.0, 10.0])
    got = np.searchsorted(a, v, side=side)
    np.testing.assert_array_equal(got, np.searchsorted(x, v, side=side))
    assert np.searchsorted(a, 3.0, side) == np.searchsorted(x, 3.0, side)
    assert a.searchsorted(2.0, side) == x.searchsorted(2.0, side)
    scalar = dapx.asarray(4.0, backend=backend)
    assert np.searchsorted(a, scalar, side) == np.searchsorted(x, 4.0, side)
    empty = dist(np.zeros(0), kind, backend)
    np.testing.assert_array_equal(np.searchsorted(empty, v, side), np.zeros(6, np.intp))


def test_searchsorted_errors(backend):
    a = dapx.arange(5.0, backend=backend)
    with pytest.raises(ValueError, match="search side"):
        np.searchsorted(a, 1, side="middle")
    # A distributed v: `a` and `v` sorted together, nothing gathered (the suite's threshold is 0).
    assert_eq(np.searchsorted(a, a), np.arange(5))
    order = np.arange(5)[::-1].copy()
    reversed_a = dapx.asarray(np.arange(5.0)[::-1].copy(), backend=backend)
    assert int(np.searchsorted(reversed_a, 2.5, sorter=order)) == 3
    with pytest.raises(ValueError, match="too deep"):
        np.searchsorted(dapx.zeros((2, 2), backend=backend), 1)


# -- einsum ----------------------------------------------------------------------------------------

EINSUMS = [
    ("ij,ij->", [(4, 5), (4, 5)]),
    ("ij,j->i", [(4, 5), (5,)]),
    ("ij,i->j", [(4, 5), (4,)]),
    ("ij->ji", [(4, 5)]),
    ("ij->", [(4, 5)]),
    ("ij->j", [(4, 5)]),
    ("ij", [(4, 5)]),
    ("ijk,ik->kj", [(3, 4, 5), (3, 5)]),
    ("ijk->k", [(3, 4, 5)]),
    ("i,i", [(7,), (7,)]),
    ("ij,ij->ij", [(4, 5), (1, 5)]),
]


@pytest.mark.parametrize(("expr", "shapes"), EINSUMS)
def test_einsum(backend, kind, expr, shapes):
    xs = [data(s, np.float64, seed=k) for k, s in enumerate(shapes)]
    arrays = [dist(x, kind if k == 0 else "c", backend, seed=k) for k, x in enumerate(xs)]
    expected = np.einsum(expr, *xs)
    got = np.einsum(expr, *arrays)
    if np.ndim(expected) == 0:
        assert got.ndim == 0
        np.testing.assert_allclose(float(got), expected, rtol=1e-12)
    else:
        assert_eq(got, expected)
    mixed = np.einsum(expr, arrays[0], *xs[1:])
    assert_eq(mixed, np.asarray(expected), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.int64, np.complex128])
def test_einsum_dtypes_sublists_out(backend, dtype):
    x = data((4, 6), dtype)
    a = dist(x, "c2", backend)
    assert_eq(np.einsum(a, [0, 1], [1]), np.einsum(x, [0, 1], [1]))
    assert_eq(np.einsum("ij,j", a, x[0]), np.einsum("ij,j", x, x[0]))
    assert_eq(np.einsum("ij->i", a, dtype=np.complex128), np.einsum("ij->i", x, dtype=complex))
    y = data((6, 3), dtype, seed=4)
    assert_eq(np.einsum("ij,jk->ki", a, y), np.einsum("ij,jk->ki", x, y))
    assert_eq(np.einsum("ij,jk", a, y), x @ y)
    out = dapx.zeros(6, dtype, backend=backend)
    assert np.einsum("ij->j", a, out=out) is out
    assert_eq(out, x.sum(axis=0))


def test_einsum_errors(backend):
    a = dapx.zeros((3, 3), backend=backend)
    b = dapx.zeros((3, 4), backend=backend)
    with pytest.raises(NotImplementedError, match="repeats a subscript"):
        np.einsum("ii->i", a)
    with pytest.raises(NotImplementedError, match="no distributed operand"):
        np.einsum("ij,jk->ik", a, b)
    with pytest.raises(ValueError, match="ellipsis"):  # as NumPy: "...i->i" drops a dimension
        np.einsum("...i->i", a)
    with pytest.raises(ValueError, match="ellipsis"):
        np.einsum("...i->i", np.zeros((3, 3)))
    with pytest.raises(ValueError):
        np.einsum("ij,ij->", a, b)
    with pytest.raises(ValueError):
        np.einsum("ijk->", a)
    assert_eq(np.einsum("ij,jk->ik", a, np.ones((3, 4))), np.zeros((3, 4)))


# -- padded and shared layouts ---------------------------------------------------------------------


def test_padded_inputs(backend):
    x = data((7, 6))
    a = dapx.asarray(x, dist=("b", "b"), padding=1, backend=backend)
    assert_eq(a.T, x.T)
    assert_eq(a.reshape(6, 7), x.reshape(6, 7))
    assert_eq(np.pad(a, 2, mode="wrap"), np.pad(x, 2, mode="wrap"))
    assert_eq(np.diff(a, axis=0), np.diff(x, axis=0))
    assert_eq(np.sort(a, axis=0), np.sort(x, axis=0))
    assert_eq(np.argsort(a, axis=None), np.argsort(x, axis=None, kind="stable"))
    for g, e in zip(np.nonzero(a > 0), np.nonzero(x > 0)):
        assert_eq(g, e)
    assert np.allclose(a, x) and np.array_equal(a, x)
    assert not np.array_equal(a, x + 1)
    np.testing.assert_allclose(float(np.einsum("ij,ij->", a, a)), np.sum(x * x), rtol=1e-12)
    assert_eq(np.einsum("ij->j", a), x.sum(axis=0))
    b = np.sort(data((20,)))
    p = dapx.asarray(b, padding=2, backend=backend)
    np.testing.assert_array_equal(np.searchsorted(p, b[::3]), np.searchsorted(b, b[::3]))


def test_shared_inputs():
    backend = dapx.simulated(2)
    x = data((9,))
    spec = {"dist": "u", "indices": [[0, 1, 2, 3, 4, 5], [4, 5, 6, 7, 8, 0]], "one_to_one": False}
    a = dapx.asarray(x, dist=spec, backend=backend)
    assert_eq(np.sort(a), np.sort(x))
    assert_eq(np.argsort(a), np.argsort(x))
    assert_eq(np.pad(a, (1, 3), mode="symmetric"), np.pad(x, (1, 3), mode="symmetric"))
    assert_eq(np.diff(a, 2), np.diff(x, 2))
    assert_eq(np.reshape(a, (3, 3)), x.reshape(3, 3))
    assert_eq(np.flatnonzero(a > 0), np.flatnonzero(x > 0))
    assert np.array_equal(a, x) and np.allclose(a, x)
    np.testing.assert_allclose(float(np.einsum("i,i", a, a)), x @ x, rtol=1e-12)
    assert np.searchsorted(np.sort(a), 0.1) == np.searchsorted(np.sort(x), 0.1)
