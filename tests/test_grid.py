"""`dapx.layout.grid`: row-major rank <-> coordinates, neighbours, and MPI_Dims_create."""

from __future__ import annotations

import copy
import itertools
import math
import pickle

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dapx
from dapx.layout.grid import ProcessGrid, default_grid, dims_create
from tests._strategies import SETTINGS

grid_shapes = st.lists(st.integers(1, 5), min_size=0, max_size=4).map(tuple)


@st.composite
def grids_and_ranks(draw):
    shape = draw(grid_shapes)
    g = ProcessGrid(shape)
    return g, draw(st.integers(0, g.nranks - 1))


@pytest.fixture(scope="module")
def MPI():
    # Importing mpi4py.MPI outside mpiexec initialises a singleton MPI world.
    return pytest.importorskip("mpi4py.MPI")


# -- rank <-> coordinates --------------------------------------------------------------


@SETTINGS
@given(grid_shapes)
def test_coords_are_row_major(shape):
    g = ProcessGrid(shape)
    assert g.shape == shape
    assert g.ndim == len(shape)
    assert g.nranks == math.prod(shape)
    seen = []
    for rank in range(g.nranks):
        c = g.coords(rank)
        assert isinstance(c, tuple)
        assert all(type(x) is int for x in c)
        assert c == tuple(int(x) for x in np.unravel_index(rank, shape))
        assert g.rank(c) == rank
        assert type(g.rank(c)) is int
        seen.append(c)
    # Row-major: ranks enumerate the coordinates in lexicographic order.
    assert seen == list(itertools.product(*[range(n) for n in shape]))


@SETTINGS
@given(st.integers(1, 6), st.integers(1, 6))
def test_two_d_rule_of_the_spec(N, M):
    # "process grid coordinate (i, j) corresponds to the process with rank i*M + j"
    g = ProcessGrid((N, M))
    for i in range(N):
        for j in range(M):
            assert g.rank((i, j)) == i * M + j
            assert g.coords(i * M + j) == (i, j)


@SETTINGS
@given(grid_shapes, st.data())
def test_ranks_from_coords_is_vectorised_rank(shape, data):
    g = ProcessGrid(shape)
    n = data.draw(st.integers(0, 10))
    coords = [
        np.array(data.draw(st.lists(st.integers(0, s - 1), min_size=n, max_size=n)), dtype=np.intp)
        for s in shape
    ]
    ranks = g.ranks_from_coords(coords)
    if shape:
        expected = [g.rank(tuple(int(c[k]) for c in coords)) for k in range(n)]
        assert np.asarray(ranks).tolist() == expected


def test_zero_dimensional_grid():
    g = ProcessGrid(())
    assert (g.ndim, g.nranks, g.coords(0), g.rank(())) == (0, 1, (), 0)
    assert g.shift(0, ()) == 0
    assert g.neighbors(0) == {}


@pytest.mark.parametrize(
    ("call", "exc"),
    [
        (lambda: ProcessGrid((2, 0)), ValueError),
        (lambda: ProcessGrid((2, -1)), ValueError),
        (lambda: ProcessGrid((2.0,)), TypeError),
        (lambda: ProcessGrid((2, 3)).coords(6), ValueError),
        (lambda: ProcessGrid((2, 3)).coords(-1), ValueError),
        (lambda: ProcessGrid((2, 3)).coords(1.0), TypeError),
        (lambda: ProcessGrid((2, 3)).rank((2, 0)), ValueError),
        (lambda: ProcessGrid((2, 3)).rank((0, -1)), ValueError),
        (lambda: ProcessGrid((2, 3)).rank((0,)), ValueError),
        (lambda: ProcessGrid((2, 3)).shift(0, (1,)), ValueError),
        (lambda: ProcessGrid((2, 3)).shift(0, (1, 0), periodic=(True,)), ValueError),
    ],
)
def test_grid_errors(call, exc):
    with pytest.raises(exc):
        call()


# -- shift and neighbours ------------------------------------------------------------------


def shift_oracle(shape, rank, offset, periodic):
    coords = np.array(np.unravel_index(rank, shape), dtype=int) + np.array(offset, dtype=int)
    shape_a = np.array(shape)
    per = np.array(periodic, dtype=bool)
    coords = np.where(per, coords % shape_a, coords)
    if ((coords < 0) | (coords >= shape_a)).any():
        return None
    return int(np.ravel_multi_index(tuple(coords), shape))


@SETTINGS
@given(grids_and_ranks(), st.data())
def test_shift_matches_oracle(grid_rank, data):
    g, rank = grid_rank
    offset = tuple(data.draw(st.lists(st.integers(-6, 6), min_size=g.ndim, max_size=g.ndim)))
    periodic = tuple(data.draw(st.lists(st.booleans(), min_size=g.ndim, max_size=g.ndim)))
    assert g.shift(rank, offset, periodic) == shift_oracle(g.shape, rank, offset, periodic)
    # A single bool applies to every dimension.
    for p in (True, False):
        assert g.shift(rank, offset, p) == shift_oracle(g.shape, rank, offset, (p,) * g.ndim)
    assert g.shift(rank, offset) == shift_oracle(g.shape, rank, offset, (False,) * g.ndim)
    assert g.shift(rank, (0,) * g.ndim) == rank
    # Shifting there and back again returns home when nothing fell off an edge.
    there = g.shift(rank, offset, periodic)
    if there is not None:
        assert g.shift(there, tuple(-o for o in offset), periodic) == rank


@SETTINGS
@given(grids_and_ranks(), st.data(), st.integers(1, 2))
def test_neighbors_match_oracle(grid_rank, data, width):
    g, rank = grid_rank
    periodic = tuple(data.draw(st.lists(st.booleans(), min_size=g.ndim, max_size=g.ndim)))
    expected = {}
    for offset in itertools.product(range(-width, width + 1), repeat=g.ndim):
        if any(offset):
            other = shift_oracle(g.shape, rank, offset, periodic)
            if other is not None:
                expected[offset] = other
    assert g.neighbors(rank, periodic, width=width) == expected
    if all(periodic):
        assert len(g.neighbors(rank, periodic, width=width)) == (2 * width + 1) ** g.ndim - 1


def test_neighbors_of_a_corner():
    g = ProcessGrid((3, 4))
    # Rank 0 sits in the top-left corner.
    assert g.neighbors(0) == {(0, 1): 1, (1, 0): 4, (1, 1): 5}
    assert g.neighbors(0, periodic=True) == {
        (-1, -1): 11,
        (-1, 0): 8,
        (-1, 1): 9,
        (0, -1): 3,
        (0, 1): 1,
        (1, -1): 7,
        (1, 0): 4,
        (1, 1): 5,
    }
    assert g.neighbors(0, periodic=(True, False)) == {
        (-1, 0): 8,
        (-1, 1): 9,
        (0, 1): 1,
        (1, 0): 4,
        (1, 1): 5,
    }
    # Bottom-right corner, rank 11.
    assert g.neighbors(11) == {(-1, -1): 6, (-1, 0): 7, (0, -1): 10}
    assert g.shift(11, (1, 1)) is None
    assert g.shift(11, (1, 1), periodic=True) == 0
    assert g.shift(11, (1, 1), periodic=(False, True)) is None
    assert g.shift(11, (0, 1), periodic=(False, True)) == 8
    # An interior rank of a 3x4 grid has all 8 neighbours.
    assert len(g.neighbors(5)) == 8


def test_periodic_shift_on_a_grid_of_one():
    g = ProcessGrid((1,))
    assert g.shift(0, (1,), periodic=True) == 0
    assert g.shift(0, (-3,), periodic=True) == 0
    assert g.shift(0, (1,)) is None


# -- value semantics --------------------------------------------------------------------


@SETTINGS
@given(grid_shapes, grid_shapes)
def test_grid_value_semantics(a, b):
    ga, gb = ProcessGrid(a), ProcessGrid(b)
    assert (ga == gb) == (a == b)
    if a == b:
        assert hash(ga) == hash(gb)
    for other in (pickle.loads(pickle.dumps(ga)), copy.deepcopy(ga)):
        assert other == ga
        assert hash(other) == hash(ga)
    assert ga != a  # a grid is not its shape tuple
    with pytest.raises(AttributeError):
        ga.shape = b
    with pytest.raises(AttributeError):
        ga._shape = b
    assert ga.shape == a


def test_grid_attributes_cannot_be_deleted():
    g = ProcessGrid((2, 3))
    with pytest.raises(AttributeError):
        del g._shape
    assert g.shape == (2, 3)


def test_grid_shape_accepts_numpy_integers():
    g = ProcessGrid(np.array([2, 3]))
    assert g.shape == (2, 3)
    assert all(type(n) is int for n in g.shape)


# -- dims_create vs MPI_Dims_create ----------------------------------------------------------

#: (nnodes, dims) -> MPI_Dims_create's answer (checked against mpi4py below).
DIMS_TABLE = [
    (1, 1, (1,)),
    (1, 3, (1, 1, 1)),
    (2, 2, (2, 1)),
    (6, 2, (3, 2)),
    (7, 2, (7, 1)),
    (12, 2, (4, 3)),
    (12, 3, (3, 2, 2)),
    (16, 2, (4, 4)),
    (16, 4, (2, 2, 2, 2)),
    (24, 3, (4, 3, 2)),
    (36, 2, (6, 6)),
    (60, 3, (5, 4, 3)),
    (64, 3, (4, 4, 4)),
    (64, 4, (4, 4, 2, 2)),
    (30, (0, 0, 5), (3, 2, 5)),
    (24, (0, 3, 0), (4, 3, 2)),
    (8, (2, 0, 0), (2, 2, 2)),
    (12, (0, 1, 0), (4, 1, 3)),
    (9, (3, 0), (3, 3)),
    (16, (0, 4), (4, 4)),
    (6, (6,), (6,)),
    (1, (1, 0, 1), (1, 1, 1)),
]


@pytest.mark.parametrize(("n", "dims", "expected"), DIMS_TABLE)
def test_dims_create_table(n, dims, expected):
    assert dims_create(n, dims) == expected
    if not isinstance(dims, int):
        assert dims_create(n, [None if d == 0 else d for d in dims]) == expected


@pytest.mark.parametrize(("n", "dims", "expected"), DIMS_TABLE)
def test_dims_create_table_is_what_mpi_says(MPI, n, dims, expected):
    assert tuple(MPI.Compute_dims(n, dims if isinstance(dims, int) else list(dims))) == expected


@SETTINGS
@given(st.integers(1, 64), st.integers(1, 4))
def test_dims_create_matches_mpi(MPI, n, d):
    result = dims_create(n, d)
    assert result == tuple(MPI.Compute_dims(n, d))
    assert math.prod(result) == n
    assert list(result) == sorted(result, reverse=True)
    assert all(type(x) is int for x in result)


@SETTINGS
@given(st.integers(1, 64), st.lists(st.integers(0, 4), min_size=1, max_size=4))
def test_dims_create_with_fixed_entries_matches_mpi(MPI, n, dims):
    fixed = math.prod(d for d in dims if d)
    if n % fixed or (0 not in dims and fixed != n):
        # The fixed sizes must divide n, and a fully fixed grid must have n ranks.
        with pytest.raises(ValueError, match=str(n)):
            dims_create(n, dims)
        return
    result = dims_create(n, dims)
    assert result == tuple(MPI.Compute_dims(n, dims))
    assert math.prod(result) == n
    assert all(r == d for r, d in zip(result, dims) if d)


@pytest.mark.parametrize(
    ("n", "dims", "exc"),
    [
        (0, 2, ValueError),
        (-4, 2, ValueError),
        (4, -1, ValueError),
        (6, (4, 0), ValueError),
        (6, (2, 2), ValueError),
        (6, (2, -1), ValueError),
        (4.0, 2, TypeError),
        (4, (2.0, 0), TypeError),
    ],
)
def test_dims_create_errors(n, dims, exc):
    with pytest.raises(exc):
        dims_create(n, dims)


def test_dims_create_zero_dims():
    assert dims_create(1, 0) == ()
    assert dims_create(1, ()) == ()


# -- default_grid: balanced over the leading axes, the contiguous one kept whole ----------------


@pytest.mark.parametrize(
    ("shape", "n", "dims", "min_extent", "expected"),
    [
        ((4096, 4096), 4, None, None, (4, 1)),
        ((4096, 4096), 2, None, None, (2, 1)),
        ((100,), 6, None, None, (6,)),
        ((64, 64, 64), 8, None, None, (4, 2, 1)),
        ((64, 64, 64), 12, None, None, (4, 3, 1)),
        ((3, 1000), 4, None, None, (2, 2)),
        ((1, 1000), 4, None, None, (1, 4)),
        ((0, 5), 2, None, None, (1, 2)),
        ((8, 8), 4, None, (3, 1), (2, 2)),
        ((8, 8), 4, None, (2, 1), (4, 1)),
        ((100, 100), 6, (0, 3), None, (2, 3)),
        ((100, 100, 100), 6, (0, 0, 2), None, (3, 1, 2)),
        ((100, 100), 4, (2, 2), None, (2, 2)),
    ],
)
def test_default_grid_table(shape, n, dims, min_extent, expected):
    assert default_grid(shape, n, dims, min_extent) == expected


@SETTINGS
@given(
    st.integers(1, 48),
    st.lists(st.integers(0, 12), min_size=1, max_size=4),
    st.integers(1, 3),
)
def test_default_grid_keeps_the_last_axis_whole_when_it_can(n, shape, width):
    grid = default_grid(shape, n, min_extent=[width] * len(shape))
    assert math.prod(grid) == n
    last = grid[-1]
    if len(shape) == 1:
        assert grid == (n,)
        return
    # Fewer ranks on the last axis would leave a leading axis thinner than `width`:
    for fewer in [k for k in range(1, last) if last % k == 0 and n % k == 0]:
        outer = dims_create(n // fewer, len(shape) - 1)
        assert any(g > 1 and s // g < width for g, s in zip(outer, shape[:-1]))
    if last == 1:
        assert grid[:-1] == dims_create(n, len(shape) - 1)


def test_default_grid_errors():
    with pytest.raises(ValueError, match="one entry per dimension"):
        default_grid((4, 4), 4, dims=(0,))
    with pytest.raises(ValueError, match="min_extent needs one entry per dimension"):
        default_grid((4, 4), 4, min_extent=(2,))
    with pytest.raises(ValueError, match="shape entries must be >= 0"):
        default_grid((4, -1), 4)
    with pytest.raises(TypeError, match="shape entry must be an integer"):
        default_grid((4, 2.5), 4)
    with pytest.raises(ValueError, match="6"):
        default_grid((4, 4), 6, dims=(4, 0))


@pytest.mark.parametrize("flag", [True, np.True_, np.False_])
def test_a_boolean_is_no_count_anywhere_in_the_layout(flag):
    # Grid sizes, ranks, rank counts and map sizes share one integer check: booleans,
    # NumPy's included, are rejected everywhere alike.
    with pytest.raises(TypeError, match="must be an integer"):
        dapx.ProcessGrid((flag, 2))
    with pytest.raises(TypeError, match="must be an integer"):
        dapx.dims_create(flag, 1)
    with pytest.raises(TypeError, match="must be an integer"):
        dapx.BlockMap(flag, nprocs=1)
    with pytest.raises(TypeError, match="must be an integer"):
        dapx.CyclicMap(4, 2, block_size=flag)
