"""The 1-D FFT of a distributed 1-d array by the four-step (six-step) Cooley-Tukey algorithm.

A 1-d array whose only axis is distributed has no other axis to transpose
onto (`dapx.functions.fft_transposes`), so its transform splits the axis
instead: with ``n = n1 * n2``, the input is viewed as the ``(n1, n2)`` matrix
``A[j1, j2] = x[j1 * n2 + j2]`` (a local reshape of blocks that end at whole
rows), and

1. one all-to-all makes axis 0 whole (columns over the ranks); NumPy
   transforms it, and each rank multiplies its columns by the twiddles
   ``w_n ** (j2 * k1)``, computed from its global indices (no communication);
2. one all-to-all makes axis 1 whole (rows over the ranks); NumPy transforms
   it, giving ``C[k1, k2] = X[k1 + n1 * k2]``;
3. one all-to-all of the local transposes ``C.T`` (the ``(n2, n1)`` matrix
   ``X`` in C order) back to rows over the ranks, a local reshape to 1-d.

``ifft`` runs the same steps with the inverse sign; ``rfft`` transforms the
real input as complex and keeps the first ``n // 2 + 1`` values (only the
rows of ``X`` that hold them take part in the last exchange); ``irfft`` is
the real part of the inverse transform of the half spectrum with its
interior terms doubled (``Re X[0]``, ``2 X[k]`` for ``0 < k < n / 2``,
``Re X[n / 2]``), so no reversed copy is made; ``hfft`` and ``ihfft`` follow
from NumPy's relations (``irfft`` of the conjugate, the conjugate of
``rfft``, with the norm's direction swapped). ``n=`` pads or truncates in
the first exchange, and each sub-transform takes NumPy's `norm`, whose
factors multiply to the whole transform's.

Factors: both at least the rank count when possible, then both divisible
by it (even blocks), then nearest ``sqrt(n)``. `factors` returns None for
``n < 4`` or prime ``n``; the caller then keeps the path that makes the
axis whole on one process (with a `dapx.GatherWarning`).

Memory bound: with ``n1, n2 >= P`` ranks, each rank holds its block of the
input, one working block of ``ceil(n1 / P) * n2`` or ``n1 * ceil(n2 / P)``
complex values (and a transient copy while transforming or transposing it),
its block of the result, and in each exchange its send buffer and its
received pieces, each at most one working block: O(n / P) elements. No rank
ever holds the whole array. ``tests/test_fft_distributed.py`` counts the
largest buffer a rank receives in one exchange and asserts it is one share.

Layout: the result is block-distributed with boundaries at multiples of
``n1`` (the last exchange's layout) unless ``dapx.config.fft_layout ==
"input"``, which redistributes it to the input's layout. Unlike the
multi-axis transforms, no plan is remembered for the inverse: the result's
block layout is often the even one of a fresh array, so a remembered origin
would send unrelated arrays of that layout elsewhere; ``ifft(fft(a))`` ends
in the block layout, or in ``a``'s under ``fft_layout("input")``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..config import config
from ..core.array import DistributedArray, new_array
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap, even_bounds
from .fft_transposes import layout_on

__all__ = ["factors", "four_step"]

_fft = np.fft


def factors(n: int, nranks: int) -> tuple[int, int] | None:
    """``(n1, n2)`` with ``n1 * n2 == n`` for the four-step FFT, or None when there is none.

    Prefers both factors at least `nranks`, then both divisible by it, then
    nearest ``sqrt(n)`` (``n1 >= n2`` on ties).

    >>> factors(144, 6), factors(2**24, 3), factors(2 * 7, 4), factors(13, 2)
    ((12, 12), (4096, 4096), (7, 2), None)
    """
    n = int(n)
    if n < 4:
        return None
    d = np.arange(2, math.isqrt(n) + 1, dtype=np.int64)
    d = d[n % d == 0]
    if d.size == 0:
        return None
    pairs = [(int(n // q), int(q)) for q in d] + [(int(q), int(n // q)) for q in d]

    def key(p: tuple[int, int]) -> tuple:
        n1, n2 = p
        even = n1 % nranks == 0 and n2 % nranks == 0
        return (min(p) < nranks, not even, abs(math.log(n1 / n2)), n1 < n2)

    return min(pairs, key=key)


def _distribution(shape: tuple[int, ...], grid: tuple[int, ...]) -> Distribution:
    return Distribution([BlockMap(s, nprocs=p) for s, p in zip(shape, grid)], grid)


def _to(x: DistributedArray, target: Distribution) -> DistributedArray:
    return x if x.distribution == target else x.redistribute(target)


def _input_rows(
    a: DistributedArray,
    keep: int,
    n1: int,
    n2: int,
    dtype: np.dtype,
    prepare: Callable[[np.ndarray, int], None] | None,
) -> DistributedArray:
    """The first `keep` elements of `a`, zero-padded to ``n1 * n2``, as an ``(n1, n2)`` matrix.

    Rows are block-distributed; one exchange (none when `a`'s blocks already
    end at whole rows). ``prepare(block, start)`` may change each rank's
    flat block (global indices from ``start``) in place.
    """
    P = a.distribution.grid_shape[0]
    bounds = even_bounds(n1, P) * n2
    m = a.shape[0]
    keep = min(keep, m)
    src = a if keep == m else a[:keep]
    x = _to(src, Distribution([BlockMap(keep, np.minimum(bounds, keep))], (P,)))
    blocks = {}
    for r, b in x.locals.items():
        lo, hi = int(bounds[r]), int(bounds[r + 1])
        flat = np.zeros(hi - lo, dtype)
        flat[: b.size] = b
        if prepare is not None:
            prepare(flat, lo)
        blocks[r] = flat.reshape(-1, n2)
    return new_array(_distribution((n1, n2), (P, 1)), blocks, a.backend, dtype)


def _unit(t: np.ndarray, n: int, sign: int, real: type) -> np.ndarray:
    """``exp(sign * 2j * pi * t / n)`` for integers ``0 <= t < n``, each correctly rounded."""
    t = np.where(t > n // 2, t - n, t)  # the angle in [-pi, pi]: the most accurate
    angle = t.astype(real) * (sign * 2 * np.pi / n)
    return np.cos(angle) + 1j * np.sin(angle)


def _twiddle(block: np.ndarray, n: int, first_column: int, sign: int) -> None:
    """Multiply ``block[k1, j]`` by ``w ** (k1 * (first_column + j))``, ``w = exp(sign 2j pi / n)``.

    The column index splits as ``j = h * L + l`` (``L ~ sqrt(columns)``), so the
    twiddle is ``w ** (k1 * (first_column + h * L)) * w ** (k1 * l)``: two small
    tables of sines and cosines (``rows * columns / L`` and ``rows * L``
    values) and two multiplications per element, to about two roundings.
    """
    rows, cols = block.shape
    if block.size == 0:
        return
    real = np.float64 if np.finfo(block.real.dtype).eps >= 2.0**-52 else block.real.dtype
    width = max(1, math.isqrt(cols))
    k1 = np.arange(rows, dtype=np.int64)[:, None]
    starts = first_column + width * np.arange(-(-cols // width), dtype=np.int64)
    coarse = _unit(k1 * starts % n, n, sign, real).astype(block.dtype)
    fine = _unit(k1 * np.arange(width, dtype=np.int64) % n, n, sign, real).astype(block.dtype)
    for h in range(coarse.shape[1]):
        part = block[:, h * width : (h + 1) * width]
        part *= fine[:, : part.shape[1]] * coarse[:, h : h + 1]


def _complex_transform(
    z: DistributedArray,
    n: int,
    n1: int,
    n2: int,
    inverse: bool,
    norm,
    keep: int,
    finish: Callable[[np.ndarray], np.ndarray],
) -> DistributedArray:
    """Steps 1-3 on the ``(n1, n2)`` matrix `z`; the first `keep` values, ``finish``-ed, as 1-d."""
    P = z.distribution.grid_shape[0]
    local = _fft.ifft if inverse else _fft.fft
    sign = 1 if inverse else -1
    columns = _to(z, _distribution((n1, n2), (1, P)))
    col_bounds = even_bounds(n2, P)
    blocks = {}
    for r, b in columns.locals.items():
        f = local(b, axis=0, norm=norm)
        _twiddle(f, n, int(col_bounds[r]), sign)
        blocks[r] = f
    dtype = next(iter(blocks.values())).dtype
    b = new_array(columns.distribution, blocks, z.backend, dtype)
    rows = _to(b, _distribution((n1, n2), (P, 1)))
    used = -(-keep // n1)  # the rows of X (columns of C) that hold the kept values
    blocks = {}
    for r, c in rows.locals.items():
        c = local(c, axis=1, norm=norm)[:, :used]
        blocks[r] = np.ascontiguousarray(finish(c).T)
    dtype = next(iter(blocks.values())).dtype
    xt = new_array(_distribution((used, n1), (1, P)), blocks, z.backend, dtype)
    x = _to(xt, _distribution((used, n1), (P, 1)))
    bounds = even_bounds(used, P) * n1
    kept = np.minimum(bounds, keep)
    blocks = {r: c.reshape(-1)[: kept[r + 1] - kept[r]] for r, c in x.locals.items()}
    return new_array(Distribution([BlockMap(keep, kept)], (P,)), blocks, z.backend, dtype)


def _swap(norm):
    return {None: "forward", "backward": "forward", "forward": "backward"}.get(norm, norm)


def four_step(a: DistributedArray, name: str, n: int, norm=None) -> DistributedArray:
    """``numpy.fft.<name>(a, n=n, norm=norm)`` of a distributed 1-d array, by the four-step FFT.

    Parameters
    ----------
    a : DistributedArray
        1-d, of any layout.
    name : {"fft", "ifft", "rfft", "irfft", "hfft", "ihfft"}
    n : int
        The transform's length (the output's for ``irfft``/``hfft``); `factors`
        must split it.
    norm : {None, "backward", "ortho", "forward"}

    Returns
    -------
    DistributedArray
        NumPy's values, shape and dtype; the layout is in the module notes.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> x = np.arange(12.0)
    >>> a = dapx.asarray(x, backend=dapx.simulated(2))
    >>> f = four_step(a, "fft", 12)
    >>> f.dtype, np.allclose(f.gather(), np.fft.fft(x))
    (dtype('complex128'), True)
    >>> np.allclose(four_step(f, "ifft", 12).gather(), x)
    True
    """
    func = getattr(_fft, name)
    sample = func(np.zeros(4, a.dtype), n=4, norm=norm)  # NumPy's dtype and argument checks
    P = a.distribution.grid_shape[0]
    split = factors(n, P)
    if split is None:
        raise ValueError(f"{n} points cannot be split for the four-step FFT")
    n1, n2 = split
    original = a.distribution
    if name in ("hfft", "ihfft"):
        norm = _swap(norm)
    inverse = name in ("ifft", "irfft", "hfft")
    if name in ("irfft", "hfft"):
        work = _fft.fft(np.zeros(1, sample.dtype)).dtype
        half = n // 2 + 1
        conj = name == "hfft"

        def prepare(flat: np.ndarray, start: int) -> None:
            k = np.arange(start, start + flat.size)
            if conj:
                np.conjugate(flat, out=flat)
            flat[(k > 0) & (2 * k < n)] *= 2
            edge = (k == 0) | (2 * k == n)
            flat[edge] = flat[edge].real
            flat[k >= half] = 0

        z = _input_rows(a, half, n1, n2, work, prepare)
        result = _complex_transform(
            z, n, n1, n2, True, norm, n, lambda c: c.real.astype(sample.dtype)
        )
    else:
        z = _input_rows(a, n, n1, n2, sample.dtype, None)
        keep = n // 2 + 1 if name in ("rfft", "ihfft") else n
        finish = np.conjugate if name == "ihfft" else (lambda c: c)
        result = _complex_transform(z, n, n1, n2, inverse, norm, keep, finish)
    if config.fft_layout == "input":
        same = original.global_shape == result.shape
        target = original if same else layout_on(original, original.grid_shape, result.shape)
        return _to(result, target)
    return result
