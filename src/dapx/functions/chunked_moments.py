"""Chunked passes of the moments: sums of squared deviations without full-size temporaries.

The second pass of a variance (and every pass with ``where=`` or of the
NaN-ignoring statistics) runs over each rank's block in cache-sized chunks
(`CHUNK` elements): the deviations of one chunk at a time go into a reused
scratch buffer and are summed there, with a fused dot (`ROW` elements per BLAS
call, never threaded) for full reductions of float64 and complex128. Each
rank's chunks are summed in a fixed order and the ranks' partials in rank order
(`dapx.functions.reduction_engine`), so a result depends only on the data and
the grid. `dapx.functions.statistics` builds `var`, `std` and the NaN
statistics on `masked_sums` and `sum_squares`.
"""

from __future__ import annotations

import numpy as np

from ..core.array import DistributedArray
from .reduction_engine import Blocks, Spec, reduce_blocks, reduce_dtype, select

__all__ = ["CHUNK", "ROW", "masked_sums", "squares", "sum_squares"]

COMPLEX_TO_FLOAT = {
    np.dtype(np.complex64): np.dtype(np.float32),
    np.dtype(np.complex128): np.dtype(np.float64),
    np.dtype(np.clongdouble): np.dtype(np.longdouble),
}


def squares(x: np.ndarray) -> np.ndarray:
    """``abs(x)**2`` in place, as NumPy's `var` and `nanvar` compute it."""
    if x.dtype.kind in "iuf":
        return np.square(x, out=x)
    real = COMPLEX_TO_FLOAT.get(x.dtype)
    if real is not None:
        xv = x.view(dtype=(real, (2,)))
        np.square(xv, out=xv)
        return np.add(xv[..., 0], xv[..., 1], out=x.real)
    return np.multiply(x, np.conjugate(x), out=x).real


#: Elements per chunk of the chunked passes of `var`, `std` and the NaN statistics. 2**17
#: elements (1 MiB of float64) fit one core's L2 cache, so the deviations of a chunk are
#: written and read back without going to memory; far fewer would spend the time in Python
#: (each chunk costs a few calls). Tests set it small to make many chunks of small arrays.
CHUNK = 1 << 17
#: Elements summed by one BLAS dot in the fused kernel. OpenBLAS runs a dot of more than
#: 10,000 elements on several threads, whose split depends on the thread count; shorter dots
#: are single-threaded, so a rank's partial is the same in every process (simulated or MPI).
ROW = 8192

_F8 = np.dtype(np.float64)
_FUSED = (np.dtype(np.float64), np.dtype(np.complex128))


def _slabs(shape: tuple[int, ...], chunk: int):
    """Index tuples (slices only) cutting an array of `shape` into C-order slabs.

    Each slab holds at most `chunk` elements (at least one), whole along the
    trailing axes that fit, so that it is one block of contiguous memory when
    the array is C-contiguous.
    """
    ndim = len(shape)
    inner, k = 1, ndim
    while k > 0 and inner * shape[k - 1] <= chunk:
        inner *= shape[k - 1]
        k -= 1
    if k == 0:  # everything fits (empty arrays too)
        yield (slice(None),) * ndim
        return
    step = max(1, chunk // inner)
    n = shape[k - 1]
    tail = (slice(None),) * (ndim - k)
    for outer in np.ndindex(*shape[: k - 1]):
        head = tuple(slice(i, i + 1) for i in outer)
        for i in range(0, n, step):
            yield (*head, slice(i, min(i + step, n)), *tail)


def _sum_dtype(in_dtype: np.dtype, dtype) -> np.dtype:
    """The dtype of ``add.reduce`` of `in_dtype` data with ``dtype=`` (object stays object)."""
    if in_dtype.kind == "O" and dtype is None:  # NumPy's sum of objects is a Python object
        return in_dtype
    return reduce_dtype(np.add, in_dtype, dtype)


def _scratch(dtype: np.dtype, size: int) -> np.ndarray:
    """A reused buffer for one slab (the largest slab has at most `CHUNK` elements)."""
    return np.empty(max(1, min(CHUNK, size)), dtype)


def _valid(x: np.ndarray, w, nan: bool) -> np.ndarray:
    """Where a chunk `x` counts: `w` (or everywhere) and, with `nan`, not NaN."""
    if not nan:
        return w
    numbers = ~np.isnan(x)
    return numbers if w is None else np.logical_and(numbers, w, out=numbers)


def _zero_outside(d: np.ndarray, x: np.ndarray, w, nan: bool) -> np.ndarray:
    """`d` (a chunk of `x` or of its deviations) zeroed in place where `x` does not count.

    Multiplying by `w` is fast on any mask (``np.copyto(..., where=)`` and
    ``np.where`` are 5-10x slower on irregular ones) but turns an infinite or NaN
    element outside `w` into NaN; callers that find a non-finite result redo the
    chunk with `_select`. NaNs (usually few) are cleared with ``np.copyto``.
    """
    if w is not None:
        np.multiply(d, w, out=d, casting="unsafe")
    if nan:
        np.copyto(d, 0, where=np.isnan(x))
    return d


def _select(d: np.ndarray, x: np.ndarray, w, nan: bool) -> np.ndarray:
    """`d` with zeros where `x` does not count, whatever the values (a new chunk)."""
    return np.where(_valid(x, w, nan), d, d.dtype.type(0))


def _suspect(w, part) -> bool:
    """Whether a chunk's `part` computed with `_zero_outside` may hold an ``inf * 0``."""
    return w is not None and part.dtype.kind in "fc" and not np.isfinite(part).all()


def _masked_partial(dtype, axes: tuple[int, ...], nan: bool):
    """Per-rank partial of masked sums and counts, computed slab by slab.

    A slab with its ``where=False`` elements (and, with `nan`, its NaNs) replaced
    by zeros (``np.where``, a chunk-sized copy) is summed with NumPy's pairwise sum,
    as NumPy's ``nanmean`` sums a copy with NaNs replaced by zeros, but without a
    full-size copy or mask (and much faster than NumPy's masked ``add.reduce``,
    which adds one element at a time).
    """

    def partial(views, r, lay, keep):
        x, w = views
        full = not keep
        rdtype = _sum_dtype(x.dtype, dtype)
        out_shape = tuple(1 if k in axes else n for k, n in enumerate(x.shape))
        sums = [] if full else np.zeros(out_shape, rdtype)
        counts = np.zeros((), np.intp) if full else np.zeros(out_shape, np.intp)
        buf = _scratch(x.dtype, x.size)
        ax = None if full else axes
        for idx in _slabs(x.shape, CHUNK):
            xs = x[idx]
            ws = None if w is None else w[idx]
            d = buf[: xs.size].reshape(xs.shape)
            np.copyto(d, xs)
            part = np.add.reduce(_zero_outside(d, xs, ws, nan), axis=ax, dtype=dtype, keepdims=keep)
            if _suspect(ws, np.asarray(part)):
                part = np.add.reduce(_select(xs, xs, ws, nan), axis=ax, dtype=dtype, keepdims=keep)
            count = np.count_nonzero(_valid(xs, ws, nan), axis=ax, keepdims=keep)
            if full:
                sums.append(part)
                counts += count
                continue
            o = tuple(slice(None) if k in axes else s for k, s in enumerate(idx))
            np.add(sums[o], part, out=sums[o])
            np.add(counts[o], count, out=counts[o])
        if full:
            sums = np.add.reduce(np.asarray(sums, rdtype).reshape(-1))
            return np.asarray(sums), counts
        return sums, counts

    return partial


def masked_sums(a: DistributedArray, axes, keepdims, dtype, wb, nan=True, data=None):
    """Sums and counts of the elements of `a` (or of `data`, blocks laid out like `a`)
    where `wb` holds (and, with `nan`, that are not NaN).

    In chunks (`_masked_partial`); `wb` may be None only with `nan`.

    Returns the result distribution, the sums and the counts, per rank.
    """

    def combine(x, y):
        return tuple(np.add(p, q) for p, q in zip(x, y))

    spec = Spec(_masked_partial(dtype, axes, nan), combine)
    blocks = a.locals if data is None else data
    dist, parts = reduce_blocks(a.distribution, a.backend, axes, keepdims, spec, [blocks, wb])
    return dist, {r: np.array(p[0]) for r, p in parts.items()}, {r: p[1] for r, p in parts.items()}


def _mean_view(m: np.ndarray, x: np.ndarray, sel: tuple) -> np.ndarray:
    """Rank `r`'s mean, broadcastable against its owned view `x` (same dimensions).

    Means computed here have length 1 along the reduced axes; a ``mean=`` the
    user gave may be whole there, and is then put in the owned order too.
    """
    m = np.asarray(m)
    m = m.reshape((1,) * (x.ndim - m.ndim) + m.shape)
    ops = tuple((k, i) for k, i in sel if m.shape[k] != 1)
    return select(m, ops) if ops else m


def _flat(x: np.ndarray, w) -> tuple:
    """`x` and `w` (or None) as 1-D views in one memory order, or ``(None, None)``.

    A full reduction may visit the elements in any order, so a contiguous block
    (C or Fortran order, with a mask in the same order) is cut into plain ranges.
    """
    for order, flag_ in (("C", "c_contiguous"), ("F", "f_contiguous")):
        if getattr(x.flags, flag_) and (w is None or getattr(w.flags, flag_)):
            return x.reshape(-1, order=order), None if w is None else w.reshape(-1, order=order)
    return None, None


def _row_dots(d: np.ndarray) -> np.ndarray:
    """The sums of squares of the `ROW`-element rows of 1-D `d` (and of its remainder)."""
    cut = d.size - d.size % ROW
    rows = d[:cut].reshape(-1, ROW)
    dots = np.vecdot(rows, rows)
    if cut == d.size:
        return dots
    return np.concatenate([dots, np.vecdot(d[cut:], d[cut:]).reshape(1)])


def _fused_full(x: np.ndarray, m: np.ndarray, w, nan: bool, dev: np.dtype) -> np.ndarray:
    """``sum(abs(x - m)**2)`` of a whole block (float64 or complex128 deviations).

    Chunks of whole `ROW`-element rows: the deviations of one chunk go into a
    reused buffer and each row's squares are summed by one BLAS dot
    (`numpy.vecdot` of the rows with themselves: a fused multiply-add over data
    in cache, no squared copy). The per-row sums, in order, are summed pairwise.
    """
    size = max(ROW, CHUNK - CHUNK % ROW)
    flat, wf = _flat(x, w)
    if flat is None:  # a strided block: C-order slabs of it
        pieces = ((x[i], None if w is None else w[i]) for i in _slabs(x.shape, size))
    else:
        pieces = (
            (flat[i : i + size], None if wf is None else wf[i : i + size])
            for i in range(0, flat.size, size)
        )
    m = m.reshape(())  # one mean for the whole block
    buf = np.empty(min(size, max(x.size, 1)), dev)
    parts = []
    for xs, ws in pieces:
        k = xs.size
        d = buf[:k]
        np.subtract(xs, m, out=d.reshape(xs.shape), casting="unsafe")
        _zero_outside(d.reshape(xs.shape), xs, ws, nan)
        part = _row_dots(d)
        if _suspect(ws, part):
            np.subtract(xs, m, out=d.reshape(xs.shape), casting="unsafe")
            part = _row_dots(_select(d.reshape(xs.shape), xs, ws, nan).reshape(-1))
        parts.append(part)
    if not parts:
        return np.zeros((), _F8)
    return np.asarray(np.add.reduce(np.concatenate(parts).real))


def _squares_partial(means: Blocks, dtype, axes: tuple[int, ...], nan: bool):
    """Per-rank partial of ``sum(abs(x - mean)**2)`` in slabs of at most `CHUNK` elements.

    Each slab's deviations go into one reused scratch buffer (no full-size
    temporaries), with elements outside ``where=`` (and, with `nan`, NaNs) set to
    zero. Full reductions of float64 and complex128 deviations sum the squares
    with fused dots (`_fused_full`); other cases square each slab in place and
    sum it with NumPy's pairwise sum, the slab totals of a full reduction summed
    pairwise in slab order, those of an axis reduction added in slab order.
    """

    def partial(views, r, lay, keep):
        x, w = views
        m = _mean_view(means[r], x, lay.sel[r])
        full = not keep
        # NumPy's nanvar subtracts the mean in place in the input's dtype; var makes a new array.
        dev = x.dtype if nan else np.result_type(x.dtype, m.dtype)
        sq = COMPLEX_TO_FLOAT.get(dev, dev)
        rdtype = _sum_dtype(sq, dtype)
        if full and dev in _FUSED and rdtype == _F8 and m.size == 1:
            return (_fused_full(x, m, w, nan, dev),)
        buf = _scratch(dev, x.size)
        out_shape = tuple(1 if k in axes else n for k, n in enumerate(x.shape))
        acc = [] if full else np.zeros(out_shape, rdtype)
        for idx in _slabs(x.shape, CHUNK):
            xs = x[idx]
            ms = m[tuple(slice(None) if n == 1 else s for n, s in zip(m.shape, idx))]
            d = buf[: xs.size].reshape(xs.shape)
            ws = None if w is None else w[idx]
            np.subtract(xs, ms, out=d, casting="unsafe")
            ax = None if full else axes
            part = np.add.reduce(
                squares(_zero_outside(d, xs, ws, nan)), axis=ax, dtype=dtype, keepdims=keep
            )
            if _suspect(ws, np.asarray(part)):
                np.subtract(xs, ms, out=d, casting="unsafe")
                sel = squares(_select(d, xs, ws, nan))
                part = np.add.reduce(sel, axis=ax, dtype=dtype, keepdims=keep)
            if full:
                acc.append(part)
                continue
            o = tuple(slice(None) if k in axes else s_ for k, s_ in enumerate(idx))
            np.add(acc[o], part, out=acc[o])
        if not full:
            return (acc,)
        return (np.asarray(np.add.reduce(np.asarray(acc, rdtype).reshape(-1))),)

    return partial


def sum_squares(a: DistributedArray, axes, keepdims, dtype, means: Blocks, wb, nan=False):
    """Sums of ``abs(a - means)**2`` over `axes` (masked by `wb`, NaNs left out with `nan`).

    Per rank in chunks (`_squares_partial`), the partials combined in rank
    order by `reduce_blocks`. Returns the result distribution and the sums per rank.
    """

    def combine(x, y):
        return (np.add(x[0], y[0]),)

    spec = Spec(_squares_partial(means, dtype, axes, nan), combine)
    dist, parts = reduce_blocks(a.distribution, a.backend, axes, keepdims, spec, [a.locals, wb])
    return dist, {r: np.array(p[0]) for r, p in parts.items()}
