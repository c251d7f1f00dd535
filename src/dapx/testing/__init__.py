"""Testing helpers: `assert_eq`, example layouts and hypothesis strategies.

`assert_eq` checks a DistributedArray against a NumPy oracle. `layout`
builds the distribution arguments of the common layouts (even and irregular
block, cyclic, block-cyclic, unstructured) for any shape and rank count.
`distributions` and `distributed_arrays` are hypothesis strategies; hypothesis
is imported only when they are called, so ``import dapx`` does not need it.

Examples
--------
>>> import numpy as np, dapx
>>> from dapx.testing import assert_eq, layout
>>> x = np.arange(12.0).reshape(3, 4)
>>> a = dapx.asarray(x, backend=dapx.simulated(4), **layout("c2", x.shape, 4))
>>> assert_eq(a * 2, x * 2)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..layout.distribution import Distribution
from ..layout.grid import dims_create
from ..layout.maps import BlockMap, CyclicMap, UnstructuredMap, even_bounds

__all__ = ["LAYOUTS", "assert_eq", "distribute", "distributed_arrays", "distributions", "layout"]

#: The layouts `layout` knows: even block, irregular block (empty blocks allowed),
#: cyclic, block-cyclic with blocks of 2, block-cyclic with blocks of ceil(n/P)
#: (the "all full blocks first" split), unstructured (a shuffled one-to-one split).
LAYOUTS = ("b", "b-irregular", "c", "c2", "c-ceil", "u")


def _default_rtol(dtype: np.dtype) -> float:
    """Relative tolerance for inexact `dtype`: 1e-12 for double (and wider), 1e-5 single."""
    component = dtype.itemsize // (2 if dtype.kind == "c" else 1)
    return {2: 1e-3, 4: 1e-5}.get(component, 1e-12)


def assert_eq(
    distributed,
    expected,
    *,
    rtol: float | None = None,
    atol: float = 0,
    check_dtype: bool = True,
    err_msg: str = "",
) -> None:
    """Assert that a DistributedArray equals a NumPy array in shape, dtype and values.

    The distributed array is gathered explicitly (`DistributedArray.gather`),
    after checking that every local block has the shape its distribution
    gives this rank and the array's dtype.

    Parameters
    ----------
    distributed : DistributedArray
        The array under test.
    expected : array_like
        The oracle (a NumPy array or anything `numpy.asarray` takes).
    rtol : float, optional
        Relative tolerance for floating and complex values. Default by the
        less precise of the two dtypes: 1e-12 for float64/complex128, 1e-5
        for float32/complex64. Integer and bool values compare exactly unless
        `rtol` or `atol` is given.
    atol : float
        Absolute tolerance.
    check_dtype : bool
        Require identical dtypes.
    err_msg : str
        Prepended to the failure message.

    Raises
    ------
    AssertionError
        Naming what differs: a local block, the shape, the dtype or the values.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.arange(5, backend=dapx.simulated(2))
    >>> assert_eq(a, np.arange(5))
    >>> assert_eq(a, np.arange(5.0))
    Traceback (most recent call last):
    ...
    AssertionError: ... dtypes differ: distributed int64, expected float64
    """
    from ..core.array import DistributedArray

    if not isinstance(distributed, DistributedArray):
        raise TypeError(
            f"assert_eq: the first argument must be a DistributedArray, got "
            f"{type(distributed).__name__}"
        )
    if isinstance(expected, DistributedArray):
        expected = expected.gather()
    expected = np.asarray(expected)
    header = (
        f"{err_msg + ': ' if err_msg else ''}DistributedArray(shape={distributed.shape}, "
        f"dtype={distributed.dtype}, dist={distributed.distribution.dist_types}, "
        f"grid={distributed.distribution.grid_shape}, backend={distributed.backend!r}):"
    )
    _check_blocks(distributed, header)
    actual = distributed.gather()
    if actual.shape != expected.shape:
        raise AssertionError(
            f"{header} shapes differ: distributed {actual.shape}, expected {expected.shape}"
        )
    if check_dtype and actual.dtype != expected.dtype:
        raise AssertionError(
            f"{header} dtypes differ: distributed {actual.dtype}, expected {expected.dtype}"
        )
    inexact = [d for d in (actual.dtype, expected.dtype) if d.kind in "fc"]
    if inexact or rtol is not None or atol:
        if rtol is None:
            rtol = max((_default_rtol(d) for d in inexact), default=0.0)
        np.testing.assert_allclose(
            actual, expected, rtol=rtol, atol=atol, equal_nan=True, err_msg=header
        )
    else:
        np.testing.assert_array_equal(actual, expected, err_msg=header)


def _check_blocks(a, header: str) -> None:
    for r, block in a.locals.items():
        shape = a.distribution.local_shape(r) if a.ndim else ()
        if not isinstance(block, np.ndarray):
            raise AssertionError(f"{header} rank {r}'s block is a {type(block).__name__}")
        if block.shape != shape:
            raise AssertionError(
                f"{header} rank {r}'s local block has shape {block.shape} but the "
                f"distribution gives it {shape}"
            )
        if block.dtype != a.dtype:
            raise AssertionError(
                f"{header} rank {r}'s local block has dtype {block.dtype} but the array "
                f"says {a.dtype}"
            )


# -- example layouts ------------------------------------------------------------------------------


def layout(kind: str, shape: int | Sequence[int], nranks: int, *, seed: int = 0) -> dict:
    """The ``dist=`` and ``grid=`` arguments of a common layout of `shape` on `nranks`.

    Parameters
    ----------
    kind : str
        One of `LAYOUTS`: ``"b"`` (even block), ``"b-irregular"`` (random
        block bounds, empty blocks allowed), ``"c"`` (cyclic), ``"c2"``
        (block-cyclic, blocks of 2), ``"c-ceil"`` (block-cyclic with blocks
        of ``ceil(n / P)``), ``"u"`` (unstructured: a shuffled one-to-one
        split).
    shape : int or sequence of int
        Global shape.
    nranks : int
        Number of ranks; the grid is ``dapx.dims_create(nranks, ndim)``.
    seed : int
        Seed of the random bounds and permutations.

    Returns
    -------
    dict
        ``{"dist": (spec per dimension), "grid": grid}`` for the creation
        functions and `DistributedArray.redistribute` (empty for 0-d).

    Examples
    --------
    >>> import dapx
    >>> kw = layout("c-ceil", (10,), 4)
    >>> kw
    {'dist': ({'dist': 'c', 'block_size': 3},), 'grid': (4,)}
    >>> dapx.zeros(10, backend=dapx.simulated(4), **kw).local(3).shape
    (1,)
    """
    if kind not in LAYOUTS:
        raise ValueError(f"unknown layout {kind!r}; choose one of {LAYOUTS}")
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if not shape:
        return {}
    grid = dims_create(nranks, len(shape))
    rng = np.random.default_rng(seed)
    specs = []
    for n, p in zip(shape, grid):
        if kind == "b":
            specs.append("b")
        elif kind == "b-irregular":
            cuts = np.sort(rng.integers(0, n + 1, size=p - 1))
            specs.append({"dist": "b", "bounds": [0, *cuts.tolist(), n]})
        elif kind == "c":
            specs.append("c")
        elif kind == "c2":
            specs.append({"dist": "c", "block_size": 2})
        elif kind == "c-ceil":
            specs.append({"dist": "c", "block_size": max(1, math.ceil(n / p))})
        else:
            cuts = np.sort(rng.integers(0, n + 1, size=p - 1))
            parts = np.split(rng.permutation(n), cuts)
            specs.append({"dist": "u", "indices": [part.tolist() for part in parts]})
    return {"dist": tuple(specs), "grid": grid}


def distribute(x, kind: str, backend, *, seed: int = 0):
    """NumPy data `x` as a DistributedArray in the common layout `kind` (see `layout`).

    >>> import numpy as np, dapx
    >>> distribute(np.arange(6), "c", dapx.simulated(2)).local(1)
    array([1, 3, 5])
    """
    from ..core.creation import asarray

    x = np.asarray(x)
    return asarray(x, backend=backend, **layout(kind, x.shape, backend.nranks, seed=seed))


# -- hypothesis strategies ------------------------------------------------------------------------

_KINDS = ("b", "c", "u", "n")


def _prime_factors(n: int) -> list[int]:
    factors, p = [], 2
    while p * p <= n:
        while n % p == 0:
            factors.append(p)
            n //= p
        p += 1
    return [*factors, n] if n > 1 else factors


def distributions(shape=None, nranks=None, dist_types: Sequence[str] = ("b", "c", "u")):
    """A hypothesis strategy of valid `Distribution` objects.

    Parameters
    ----------
    shape : tuple of int, or strategy, optional
        Global shape; default: 1 to 3 dimensions of 0 to 10 elements.
        ``()`` gives the 0-d distribution.
    nranks : int or strategy, optional
        Number of ranks; default 1 to 6. The grid is a random factorisation.
    dist_types : sequence of {"b", "c", "u", "n"}
        The kinds drawn per dimension: block (even or irregular bounds,
        empty blocks allowed), cyclic (block size 1 to ``ceil(n / P)``),
        unstructured (shuffled, one-to-one), and undistributed (used only
        along grid axes of size 1).

    Examples
    --------
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=20, database=None)
    ... @given(distributions(shape=(5, 3), nranks=4))
    ... def check(d):
    ...     assert d.global_shape == (5, 3) and d.nranks == 4
    >>> check()
    """
    from hypothesis import strategies as st

    dist_types = tuple(dist_types)
    unknown = set(dist_types) - set(_KINDS)
    if not dist_types or unknown:
        raise ValueError(f"dist_types must be a non-empty subset of {_KINDS}, got {dist_types}")
    if isinstance(nranks, int) and nranks > 1 and set(dist_types) == {"n"}:
        raise ValueError(f"dist_types ('n',) cannot spread an array over nranks={nranks}")
    shapes = _as_strategy(shape, _default_shapes())
    counts = _as_strategy(nranks, st.integers(1, 6))

    @st.composite
    def strategy(draw) -> Distribution:
        shp = draw(shapes)
        shp = (shp,) if isinstance(shp, (int, np.integer)) else tuple(int(n) for n in shp)
        nprocs = draw(counts)
        if not shp:
            return Distribution(())
        grid = [1] * len(shp)
        for f in _prime_factors(nprocs):
            grid[draw(st.integers(0, len(shp) - 1))] *= f
        maps = [draw(_maps(n, p, dist_types)) for n, p in zip(shp, grid)]
        return Distribution(maps, grid)

    return strategy()


def _as_strategy(value, default):
    from hypothesis import strategies as st

    if value is None:
        return default
    if isinstance(value, st.SearchStrategy):
        return value
    return st.just(value)


def _default_shapes():
    from hypothesis.extra import numpy as hnp

    return hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=10)


def _maps(size: int, nprocs: int, dist_types: tuple[str, ...]):
    from hypothesis import strategies as st

    kinds = [k for k in dist_types if k != "n" or nprocs == 1] or ["b"]

    @st.composite
    def strategy(draw):
        kind = draw(st.sampled_from(kinds))
        if kind == "n":
            return BlockMap(size, nprocs=1)
        if kind == "b":
            if draw(st.booleans()):
                return BlockMap(size, even_bounds(size, nprocs), nprocs=nprocs)
            cuts = sorted(
                draw(st.lists(st.integers(0, size), min_size=nprocs - 1, max_size=nprocs - 1))
            )
            return BlockMap(size, np.array([0, *cuts, size]), nprocs=nprocs)
        if kind == "c":
            largest = max(1, math.ceil(size / nprocs))
            return CyclicMap(size, nprocs, draw(st.integers(1, largest)))
        order = draw(st.permutations(range(size)))
        cuts = sorted(
            draw(st.lists(st.integers(0, size), min_size=nprocs - 1, max_size=nprocs - 1))
        )
        bounds = [0, *cuts, size]
        parts = [np.array(order[bounds[k] : bounds[k + 1]], dtype=np.intp) for k in range(nprocs)]
        return UnstructuredMap(size, parts, one_to_one=True)

    return strategy()


def _elements(dtype: np.dtype):
    from hypothesis import strategies as st

    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind == "i":
        return st.integers(-1000, 1000)
    if dtype.kind == "u":
        return st.integers(0, 1000)
    if dtype.kind == "f":
        return st.floats(-1e3, 1e3, width=8 * dtype.itemsize)
    if dtype.kind == "c":
        return st.complex_numbers(max_magnitude=1e3, width=8 * dtype.itemsize)
    raise ValueError(f"distributed_arrays: unsupported dtype {dtype}")


def distributed_arrays(
    backend,
    dtype: Any = np.float64,
    shape=None,
    dist_types: Sequence[str] = ("b", "c", "u"),
    elements=None,
):
    """A hypothesis strategy of ``(DistributedArray, numpy original)`` pairs.

    Parameters
    ----------
    backend : Backend
        Where the arrays live; distributions are drawn for its rank count.
    dtype : dtype or strategy of dtypes
        Default float64.
    shape : tuple of int, or strategy, optional
        As in `distributions`.
    dist_types : sequence of str
        As in `distributions`.
    elements : strategy, optional
        Element values; default: finite values of magnitude up to 1000
        (booleans for bool).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> from hypothesis import given, settings
    >>> @settings(max_examples=20, database=None)
    ... @given(distributed_arrays(dapx.simulated(3), dtype=np.int64))
    ... def check(pair):
    ...     a, x = pair
    ...     assert_eq(a + 1, x + 1)
    >>> check()
    """
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    from ..core.creation import asarray

    dtypes = _as_strategy(None if dtype is None else dtype, st.just(np.float64))
    dists = distributions(shape, backend.nranks, dist_types)

    @st.composite
    def strategy(draw):
        dt = np.dtype(draw(dtypes))
        dist = draw(dists)
        values = elements if elements is not None else _elements(dt)
        data = draw(hnp.arrays(dt, dist.global_shape, elements=values))
        return asarray(data, dist=dist, backend=backend), data

    return strategy()
