"""Random distributed arrays whose values do not depend on the layout.

The element at global C-order flat index ``i`` of the array drawn by the
``n``-th call of a generator is a pure function of ``(seed, n, i)``: the same
seed gives the same global array on 1 or 6 ranks, with block, cyclic or
unstructured distributions, under the simulated or the MPI backend. Each rank
computes only its own elements, without communication.

How: numpy's counter-based `numpy.random.Philox` (Philox4x64) bit generator
is keyed per call (and per stream) from `numpy.random.SeedSequence`; counter
step ``k`` yields the raw 64-bit words ``4k .. 4k+3``, so the words of any
contiguous run of flat indices are reached with `~numpy.random.Philox.advance`
and no state is shared between ranks.

Examples
--------
>>> import numpy as np, dapx
>>> a = dapx.random.default_rng(42).random((3, 4), backend=dapx.simulated(2))
>>> b = dapx.random.default_rng(42).random((3, 4), dist="c", backend=dapx.simulated(3))
>>> np.array_equal(a.gather(), b.gather())
True
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..backends import Backend, resolve_backend
from ..core.array import DistributedArray, new_array
from ..core.creation import make_distribution, normalize_shape
from ..core.guard import collective
from ..layout.distribution import Distribution

__all__ = ["Generator", "default_rng"]

#: Runs of wanted flat indices separated by at most this many unwanted ones are
#: generated as one span. Starting a span (building and advancing a Philox)
#: costs about as much as generating ~2000 words, so skipping a gap this small
#: costs less than the span start it saves: whatever the layout, the work stays
#: within about twice that of the cheapest set of spans. A cyclic layout thus
#: generates the whole range of its indices in a few long spans (P words per
#: element kept on P ranks) instead of starting one span per element.
MAX_GAP = 1024

#: Longest span generated at once (values per stream), bounding temporary memory.
CHUNK = 1 << 18

_MASK32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)


def default_rng(seed: Any = None) -> Generator:
    """A `Generator` whose arrays are the same on any number of ranks.

    Parameters
    ----------
    seed : None, int, sequence of int, or numpy.random.SeedSequence
        As for `numpy.random.default_rng`. With None, fresh entropy is drawn
        on rank 0 and broadcast at the first call, so every process agrees.

    Returns
    -------
    Generator

    Examples
    --------
    >>> import dapx
    >>> rng = dapx.random.default_rng(0)
    >>> x = rng.standard_normal(1000, backend=dapx.simulated(4))
    >>> x.shape, x.dtype
    ((1000,), dtype('float64'))
    """
    return Generator(seed)


class Generator:
    """Draws distributed random arrays whose values are independent of the layout.

    Every method takes the size and the distribution arguments of the
    creation functions (``dist``, ``grid``, ``backend`` and
    ``block_size``/``padding``/``periodic``) and returns a new
    `DistributedArray`. Successive calls give different arrays; the ``n``-th
    call of two generators with the same seed gives the same global array,
    whatever the backend, the number of ranks or the distribution.

    Parameters
    ----------
    seed : None, int, sequence of int, or numpy.random.SeedSequence
        See `default_rng`.

    Notes
    -----
    Call ``n`` (counting from 0) draws stream ``s`` (two for normals, one
    otherwise) from the Philox key
    ``SeedSequence(entropy, spawn_key=(*spawn_key, n, s)).generate_state(2, np.uint64)``;
    the element at flat index ``i`` uses raw word ``i`` of each stream.
    Every process must make the same calls in the same order (SPMD), as with
    any collective: the call count is part of each value's key.

    Examples
    --------
    >>> import dapx
    >>> rng = dapx.random.Generator(7)
    >>> a = rng.integers(0, 10, size=(2, 3), backend=dapx.simulated(2))
    >>> a.shape, a.dtype
    ((2, 3), dtype('int64'))
    """

    # Note: the values differ from numpy.random.default_rng(seed) with the
    # same seed: NumPy's streams depend on the order of draws, which on a
    # distributed array would depend on the layout.

    __slots__ = ("_calls", "_entropy", "_spawn_key")

    #: A call on a backend whose ranks live elsewhere (dask) brings the state back.
    _dapx_stateful = True

    def __init__(self, seed: Any = None):
        if isinstance(seed, (np.random.Generator, np.random.BitGenerator)):
            raise TypeError(
                f"seed must be None, an int, a sequence of ints or a SeedSequence, got "
                f"{type(seed).__name__}: a NumPy generator's state differs between processes"
            )
        if isinstance(seed, np.random.SeedSequence):
            entropy, spawn_key = seed.entropy, tuple(seed.spawn_key)
        else:
            if seed is not None:
                _check_seed(seed)
            entropy, spawn_key = seed, ()
        self._entropy = entropy
        self._spawn_key = spawn_key
        self._calls = 0

    def __repr__(self) -> str:
        seed = "<entropy not yet drawn>" if self._entropy is None else self._entropy
        return f"dapx.random.Generator(seed={seed!r}, calls={self._calls})"

    # -- keys -----------------------------------------------------------------------------
    def _keys(self, backend: Backend, nstreams: int) -> list[np.ndarray]:
        """One Philox key per stream for the next call (advances the call count)."""
        if self._entropy is None:
            self._entropy = backend.bcast(np.random.SeedSequence().entropy, root=0)
        call = self._calls
        self._calls += 1
        return [
            np.random.SeedSequence(
                self._entropy, spawn_key=(*self._spawn_key, call, stream)
            ).generate_state(2, np.uint64)
            for stream in range(nstreams)
        ]

    def _draw(
        self,
        size,
        dist,
        grid,
        backend,
        options,
        nstreams: int,
        transform: Callable[..., np.ndarray],
        dtype,
    ) -> DistributedArray:
        backend = resolve_backend(backend)
        shape = () if size is None else normalize_shape(size)
        target = make_distribution(shape, dist, grid, backend, **options)
        keys = self._keys(backend, nstreams)
        blocks = {}
        for r in backend.local_ranks:
            raws = raw_at(keys, _flat_indices(target, r, shape))
            blocks[r] = np.asarray(transform(*raws)).astype(dtype, copy=False)
        return new_array(target, blocks, backend, dtype)

    # -- distributions --------------------------------------------------------------------
    @collective
    def random(
        self,
        size=None,
        dtype=np.float64,
        *,
        dist=None,
        grid=None,
        backend: Backend | None = None,
        **options,
    ) -> DistributedArray:
        """Uniform floats in [0, 1).

        Parameters
        ----------
        size : int or tuple of int, optional
            Global shape; None gives a 0-d array.
        dtype : float64 or float32
            float64 values are multiples of 2**-53, float32 of 2**-24.
        dist, grid, backend, **options
            As in `dapx.zeros`.

        Examples
        --------
        >>> import dapx
        >>> u = dapx.random.default_rng(1).random(6, backend=dapx.simulated(2))
        >>> bool(((u.gather() >= 0) & (u.gather() < 1)).all())
        True
        """
        # Note: size=None gives a 0-d DistributedArray, not a Python float.
        dtype = _float_dtype(dtype, "random")
        transform = _unit_float32 if dtype == np.float32 else _unit_float64
        return self._draw(size, dist, grid, backend, options, 1, transform, dtype)

    @collective
    def uniform(
        self,
        low=0.0,
        high=1.0,
        size=None,
        *,
        dist=None,
        grid=None,
        backend: Backend | None = None,
        **options,
    ) -> DistributedArray:
        """Uniform floats in [low, high): ``low + (high - low) * random(size)``.

        Parameters
        ----------
        low, high : float or array_like
            Scalars, NumPy arrays or DistributedArrays broadcastable to `size`.
        size : int or tuple of int, optional
            Default: the broadcast shape of `low` and `high`.
        dist, grid, backend, **options
            As in `dapx.zeros`.

        Examples
        --------
        >>> import dapx
        >>> u = dapx.random.default_rng(1).uniform(-2, 2, 100, backend=dapx.simulated(3))
        >>> g = u.gather()
        >>> bool(g.min() >= -2 and g.max() < 2)
        True
        """
        size = _broadcast_size(size, low, high)
        u = self._draw(size, dist, grid, backend, options, 1, _unit_float64, np.float64)
        # u first, so that the result keeps u's layout; x*y and x+y are commutative in
        # IEEE arithmetic, so this equals NumPy's low + (high - low) * u bit for bit.
        return u * (high - low) + low

    @collective
    def standard_normal(
        self,
        size=None,
        dtype=np.float64,
        *,
        dist=None,
        grid=None,
        backend: Backend | None = None,
        **options,
    ) -> DistributedArray:
        """Standard normal floats (Box-Muller on two independent streams).

        Parameters
        ----------
        size : int or tuple of int, optional
            Global shape; None gives a 0-d array.
        dtype : float64 or float32
            float32 values are the float64 values rounded.
        dist, grid, backend, **options
            As in `dapx.zeros`.

        Examples
        --------
        >>> import dapx
        >>> z = dapx.random.default_rng(3).standard_normal(10_000, backend=dapx.simulated(4))
        >>> g = z.gather()
        >>> bool(abs(g.mean()) < 0.05 and abs(g.std() - 1) < 0.05)
        True
        """
        dtype = _float_dtype(dtype, "standard_normal")
        return self._draw(size, dist, grid, backend, options, 2, _box_muller, dtype)

    @collective
    def normal(
        self,
        loc=0.0,
        scale=1.0,
        size=None,
        *,
        dist=None,
        grid=None,
        backend: Backend | None = None,
        **options,
    ) -> DistributedArray:
        """Normal floats: ``loc + scale * standard_normal(size)``.

        Parameters
        ----------
        loc, scale : float or array_like
            Scalars, NumPy arrays or DistributedArrays broadcastable to `size`;
            `scale` must be non-negative.
        size : int or tuple of int, optional
            Default: the broadcast shape of `loc` and `scale`.
        dist, grid, backend, **options
            As in `dapx.zeros`.

        Examples
        --------
        >>> import dapx
        >>> x = dapx.random.default_rng(3).normal(10, 0.1, (50, 40), backend=dapx.simulated(4))
        >>> bool(abs(x.gather().mean() - 10) < 0.01)
        True
        """
        _check_nonnegative(scale, "scale")
        size = _broadcast_size(size, loc, scale)
        z = self._draw(size, dist, grid, backend, options, 2, _box_muller, np.float64)
        return z * scale + loc

    @collective
    def integers(
        self,
        low,
        high=None,
        size=None,
        dtype=np.int64,
        endpoint: bool = False,
        *,
        dist=None,
        grid=None,
        backend: Backend | None = None,
        **options,
    ) -> DistributedArray:
        """Uniform integers in [low, high) (or [low, high] with ``endpoint=True``).

        Parameters
        ----------
        low, high : int
            Bounds; with `high` None the range is [0, low).
        size : int or tuple of int, optional
            Global shape; None gives a 0-d array.
        dtype : integer or bool dtype
            Default int64; the bounds must fit in it.
        endpoint : bool
            Include `high`.
        dist, grid, backend, **options
            As in `dapx.zeros`.

        Notes
        -----
        A raw 64-bit word ``w`` maps to ``low + (w * (high - low)) >> 64``
        (Lemire's multiply-shift) without rejection, so outcomes are not
        exactly equiprobable: their probabilities differ by a relative
        ``(high - low) / 2**64`` at most (below 2.4e-10 for ranges under 2**32).

        Examples
        --------
        >>> import dapx
        >>> k = dapx.random.default_rng(5).integers(1, 7, 600, backend=dapx.simulated(3))
        >>> sorted(set(k.gather().tolist()))
        [1, 2, 3, 4, 5, 6]
        """
        # Note: low and high must be scalars (NumPy also takes arrays).
        if high is None:
            low, high = 0, low
        low, high = _as_python_int(low, "low"), _as_python_int(high, "high")
        if endpoint:
            high += 1
        dtype = np.dtype(dtype)
        if dtype.kind not in "iub":
            raise TypeError(f"integers: unsupported dtype {dtype}; use an integer or bool dtype")
        info = (0, 1) if dtype.kind == "b" else (int(np.iinfo(dtype).min), int(np.iinfo(dtype).max))
        if low < info[0]:
            raise ValueError(f"low={low} is out of bounds for {dtype}")
        if high - 1 > info[1]:
            raise ValueError(f"high={high - 1 if endpoint else high} is out of bounds for {dtype}")
        if high <= low:
            raise ValueError(f"low >= high: low={low}, high={high} (endpoint={endpoint})")
        span = high - low
        offset = np.uint64(low % 2**64)

        def transform(raw: np.ndarray) -> np.ndarray:
            words = raw if span == 2**64 else mulhi64(raw, span)
            words = words + offset  # wraps modulo 2**64: two's complement of low + k
            return words.view(np.int64) if dtype.kind == "i" else words

        return self._draw(size, dist, grid, backend, options, 1, transform, dtype)


# -- the counter-based core ------------------------------------------------------------------


def raw_at(keys: Sequence[np.ndarray], flat: np.ndarray) -> list[np.ndarray]:
    """The raw Philox4x64 words at flat indices `flat`, one array per key.

    Word ``i`` of key ``k`` is word ``i % 4`` of the Philox block at counter
    ``i // 4``: a pure function of ``(k, i)``. Sorted runs of indices are
    merged into spans across gaps of at most `MAX_GAP` and generated span by
    span (loops over spans, never over elements).

    Examples
    --------
    >>> import numpy as np
    >>> key = np.random.SeedSequence(1).generate_state(2, np.uint64)
    >>> whole = np.random.Philox(key=key).random_raw(10)
    >>> np.array_equal(raw_at([key], np.array([[9, 2], [3, 0]]))[0], whole[[[9, 2], [3, 0]]])
    True
    """
    flat = np.asarray(flat, dtype=np.int64)
    f = flat.reshape(-1)
    if f.size == 0:
        return [np.empty(flat.shape, np.uint64) for _ in keys]
    inverse = None
    steps = np.diff(f)
    if not (steps > 0).all():
        f, inverse = np.unique(f, return_inverse=True)
        steps = np.diff(f)
    outs = [np.empty(f.size, np.uint64) for _ in keys]
    # Spans end at gaps wider than MAX_GAP and at multiples of CHUNK (bounding memory).
    gap_cuts = np.flatnonzero(steps > MAX_GAP + 1) + 1
    first, last = int(f[0]) // CHUNK, int(f[-1]) // CHUNK
    chunk_cuts = np.searchsorted(f, np.arange(first + 1, last + 1, dtype=np.int64) * CHUNK)
    cuts = np.union1d(gap_cuts, chunk_cuts)
    cuts = cuts[(cuts > 0) & (cuts < f.size)]
    starts = np.concatenate(([0], cuts)).tolist()
    stops = np.concatenate((cuts, [f.size])).tolist()
    for s, e in zip(starts, stops):
        lo, hi = int(f[s]), int(f[e - 1]) + 1
        contiguous = hi - lo == e - s
        for key, out in zip(keys, outs):
            words = _philox_words(key, lo, hi)
            out[s:e] = words if contiguous else words[f[s:e] - lo]
    if inverse is not None:
        outs = [o[inverse] for o in outs]
    return [o.reshape(flat.shape) for o in outs]


def _philox_words(key: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Raw words ``start .. stop-1`` of the Philox stream of `key`."""
    step = start // 4
    bitgen = np.random.Philox(key=key)
    if step:
        bitgen.advance(step)  # skips `step` counter values, i.e. 4 * step words
    return bitgen.random_raw(stop - 4 * step)[start - 4 * step :]


def _flat_indices(dist: Distribution, rank: int, shape: tuple[int, ...]) -> np.ndarray:
    """Global C-order flat index of every element of `rank`'s block, in local order."""
    if not shape:
        return np.zeros((), np.int64)
    indices = dist.global_indices(rank)
    strides = np.cumprod((1, *shape[:0:-1]))[::-1]
    flat = np.zeros((1,) * len(shape), np.int64)
    for k, (idx, stride) in enumerate(zip(indices, strides.tolist())):
        part = idx.astype(np.int64, copy=False) * stride if stride != 1 else idx
        flat = flat + part.reshape((1,) * k + (-1,) + (1,) * (len(shape) - k - 1))
    return flat


def mulhi64(a: np.ndarray, b: int) -> np.ndarray:
    """The high 64 bits of the 128-bit products ``a * b`` (uint64 `a`, ``0 <= b < 2**64``).

    Examples
    --------
    >>> import numpy as np
    >>> a = np.array([2**64 - 1, 2**63, 12345], dtype=np.uint64)
    >>> mulhi64(a, 2**64 - 1).tolist() == [(int(x) * (2**64 - 1)) >> 64 for x in a]
    True
    """
    a0, a1 = a & _MASK32, a >> _SHIFT32
    b0, b1 = np.uint64(b & 0xFFFFFFFF), np.uint64(b >> 32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> _SHIFT32) + (p01 & _MASK32) + (p10 & _MASK32)  # < 3 * 2**32: no overflow
    return p11 + (p01 >> _SHIFT32) + (p10 >> _SHIFT32) + (mid >> _SHIFT32)


# -- transforms of raw words ----------------------------------------------------------------


def _unit_float64(raw: np.ndarray) -> np.ndarray:
    return (raw >> np.uint64(11)).astype(np.float64) * 2.0**-53


def _unit_float32(raw: np.ndarray) -> np.ndarray:
    # 24 bits, so that no value rounds up to 1.0 in float32.
    return (raw >> np.uint64(40)).astype(np.float32) * np.float32(2.0**-24)


def _box_muller(raw1: np.ndarray, raw2: np.ndarray) -> np.ndarray:
    # 1 - u1 lies in (0, 1], so the logarithm is finite; the sine half is discarded so
    # that the value at index i depends on the words at i only.
    radius = np.sqrt(-2.0 * np.log1p(-_unit_float64(raw1)))
    return radius * np.cos(2.0 * np.pi * _unit_float64(raw2))


# -- argument checks ---------------------------------------------------------------------------


def _check_seed(seed) -> None:
    values = [seed] if isinstance(seed, numbers.Integral) else seed
    try:
        values = list(values)
    except TypeError:
        raise TypeError(
            f"seed must be None, an int, a sequence of ints or a SeedSequence, got {seed!r}"
        ) from None
    for v in values:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
            raise ValueError(f"seed values must be non-negative integers, got {seed!r}")


def _float_dtype(dtype, method: str) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in (np.float64, np.float32):
        raise TypeError(f"{method}: unsupported dtype {dtype}; use float64 or float32")
    return dtype


def _as_python_int(value, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"integers: {name} must be an integer scalar, got {value!r}")
    return int(value)


def _broadcast_size(size, *params) -> tuple[int, ...]:
    shapes = [np.shape(p) if not isinstance(p, DistributedArray) else p.shape for p in params]
    if size is None:
        return np.broadcast_shapes(*shapes)
    size = normalize_shape(size)
    try:
        full = np.broadcast_shapes(size, *shapes)
    except ValueError:
        full = None
    if full != size:
        raise ValueError(f"parameters of shapes {shapes} do not broadcast to size {size}")
    return size


def _check_nonnegative(value, name: str) -> None:
    if isinstance(value, DistributedArray):
        blocks = value.locals
        bad = value.backend.allgather({r: bool((b < 0).any()) for r, b in blocks.items()})
        negative = any(bad)
    else:
        negative = bool(np.any(np.asarray(value) < 0))
    if negative:
        raise ValueError(f"{name} must be non-negative, got negative values in {name}")
