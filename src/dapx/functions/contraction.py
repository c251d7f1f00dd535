"""`numpy.einsum` for contractions that are local work plus a reduction.

One distributed operand fixes the layout of each subscript; the others are
aligned to it with the exchange mechanism (broadcast along subscripts they
lack) or, for NumPy operands, sliced locally. Each rank contracts its own
blocks, and partial sums over distributed contracted subscripts are combined
in rank order: with one exchange into a layout where those subscripts are
undistributed, or with `Backend.combine` for a scalar.

Ellipses are spelled out first: xarray's ``dot`` (and ``weighted``) call
``np.einsum("...ab,...b->...a", ...)``, the broadcast dimensions an ellipsis,
and `expand_ellipsis` replaces each ``...`` by explicit subscripts
(right-aligned, as NumPy broadcasts them).
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from ..core.array import DistributedArray, new_array
from ..core.dispatch import implements
from ..exchange.execute import run_plan
from ..exchange.plans import exchange_plan, simplify_index
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap
from .shaping import _clean_map, _index, from_replicated, permute_axes, write_into

__all__ = ["einsum", "expand_ellipsis"]


def _einsum_args(operands):
    """(subscripts, arrays) from either calling convention of `numpy.einsum`."""
    if isinstance(operands[0], str):
        return operands[0].replace(" ", ""), list(operands[1:])
    arrays, subs = list(operands[0::2]), list(operands[1::2])
    out = None
    if len(arrays) > len(subs):  # a trailing output sublist
        out, arrays = arrays[-1], arrays[:-1]

    def letters(sub):
        return "".join("..." if s is Ellipsis else string.ascii_letters[int(s)] for s in sub)

    text = ",".join(letters(s) for s in subs)
    return (text if out is None else text + "->" + letters(out)), arrays


def expand_ellipsis(subscripts: str, shapes: Sequence[tuple[int, ...]]) -> str:
    """`subscripts` with every ``...`` replaced by explicit letters.

    The dimensions an ellipsis stands for are right-aligned across operands
    (NumPy's broadcasting); an implicit output lists them first, then the
    subscripts that appear once in alphabetical order, as NumPy does.
    Subscripts with no ellipsis are returned unchanged.

    Examples
    --------
    >>> expand_ellipsis("...ab,...b->...a", [(4, 2, 3), (3,)])
    'Aab,b->Aa'
    >>> expand_ellipsis("...i,...i", [(2, 5, 3), (5, 3)])
    'ABi,Bi->AB'
    """
    if "." not in subscripts:
        return subscripts
    lhs, arrow, rhs = subscripts.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: {len(terms)} operand subscripts for {len(shapes)} operands")
    used = set(subscripts) - {".", ",", "-", ">"}
    free = [c for c in string.ascii_uppercase + string.ascii_lowercase if c not in used]
    widths = []
    for term, shape in zip(terms, shapes):
        explicit = len(term.replace("...", ""))
        widths.append(len(shape) - explicit if "..." in term else 0)
    width = max(widths, default=0)
    if width > len(free):
        raise ValueError(f"einsum: too many dimensions for the subscripts {subscripts!r}")
    broadcast = "".join(free[:width])
    terms = [t.replace("...", broadcast[width - w :]) for t, w in zip(terms, widths)]
    text = ",".join(terms)
    if arrow:
        if width and "..." not in rhs:
            raise ValueError(
                "output has more dimensions than subscripts given in einstein sum, but no "
                "'...' ellipsis provided to broadcast the extra dimensions."
            )
        rhs = rhs.replace("...", broadcast)
    else:
        once = sorted(c for c in set(text) - {","} if text.count(c) == 1 and c not in broadcast)
        rhs = broadcast + "".join(once)
    return text + "->" + rhs


@implements(np.einsum)
def einsum(*operands, out=None, optimize=False, **kwargs):
    """`numpy.einsum` for contractions that are local work plus a reduction.

    Ellipses (either calling convention) are first replaced by explicit
    subscripts (`expand_ellipsis`). One distributed operand (the first whose
    subscripts include those of every other distributed operand) fixes the
    layout of each subscript; the other distributed operands are aligned to
    it in one exchange each
    (broadcast along subscripts they lack) and NumPy operands are sliced
    locally. Each rank contracts its blocks; partial sums over distributed
    contracted subscripts are then combined with one exchange (or
    `Backend.combine` for a scalar). The output subscripts keep their maps,
    and are reordered as asked with `numpy.transpose`'s rules.

    Raises
    ------
    NotImplementedError
        For repeated subscripts within an operand (diagonals), and
        distributed operands whose subscripts no single distributed operand
        covers (aligning them would replicate one on every rank).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> b = dapx.simulated(4)
    >>> x = np.arange(12.0).reshape(3, 4)
    >>> a = dapx.asarray(x, dist=("b", "c"), grid=(2, 2), backend=b)
    >>> bool(np.einsum("ij,ij->", a, a) == np.einsum("ij,ij->", x, x))
    True
    >>> np.einsum("ij,j->i", a, np.arange(4.0)).gather()
    array([14., 38., 62.])
    >>> np.einsum("...j,...j->...", a, a).gather()  # ellipses are spelled out first
    array([ 14., 126., 366.])
    """
    subscripts, arrays = _einsum_args(operands)
    arrays = [a if isinstance(a, DistributedArray) else np.asarray(a) for a in arrays]
    dummies = [np.broadcast_to(np.empty((), np.int8), a.shape) for a in arrays]
    np.einsum_path(subscripts, *dummies, optimize=False)  # NumPy's own validation, no data
    subscripts = expand_ellipsis(subscripts, [a.shape for a in arrays])
    lhs, _, rhs = subscripts.partition("->")
    inputs = lhs.split(",")
    if "->" not in subscripts:
        rhs = "".join(sorted(c for c in set(lhs) - {","} if lhs.count(c) == 1))
    for k, sub in enumerate(inputs):
        if len(set(sub)) != len(sub):
            raise NotImplementedError(
                f"einsum: operand {k} repeats a subscript ({sub!r}); diagonals are not "
                "implemented for DistributedArray"
            )
    sizes: dict[str, int] = {}
    for sub, a in zip(inputs, arrays):
        for c, n in zip(sub, a.shape):
            sizes[c] = n if sizes.get(c, 1) == 1 else sizes[c]
    distributed = [k for k, a in enumerate(arrays) if isinstance(a, DistributedArray) and a.ndim]
    backend = next(a for a in arrays if isinstance(a, DistributedArray)).backend
    if not distributed:  # only replicated 0-d operands and NumPy arrays
        values = [
            a.locals[backend.local_ranks[0]] if isinstance(a, DistributedArray) else a
            for a in arrays
        ]
        result = from_replicated(np.einsum(subscripts, *values, **kwargs), backend)
        return result if out is None else write_into(out, result)
    wanted = set().union(*(inputs[k] for k in distributed))
    lead = next((k for k in distributed if set(inputs[k]) >= wanted), None)
    if lead is None:
        # Note: NumPy contracts anything; here a contraction must be local work plus a
        # reduction over the layout of one distributed operand.
        raise NotImplementedError(
            f"einsum {subscripts!r}: no distributed operand has all the subscripts of the "
            f"others ({''.join(sorted(wanted))}); aligning them would replicate an operand on "
            "every rank. Redistribute or gather one of them explicitly"
        )
    result = _contract(arrays, inputs, rhs, sizes, lead, backend, optimize, kwargs)
    return result if out is None else write_into(out, result)


def _contract(arrays, inputs, rhs, sizes, lead, backend, optimize, kwargs):
    lead_letters = inputs[lead]
    extra = [c for c in dict.fromkeys("".join(inputs) + rhs) if c not in lead_letters]
    letters = lead_letters + "".join(extra)
    maps = []
    for c, m in zip(lead_letters, arrays[lead].distribution.maps):
        maps.append(_clean_map(m) if m.size == sizes[c] else BlockMap(sizes[c], nprocs=m.nprocs))
    maps += [BlockMap(sizes[c], nprocs=1) for c in extra]
    layout = Distribution(maps)
    ranks = backend.local_ranks
    blocks, subs = [], []
    for a, sub in zip(arrays, inputs):
        if isinstance(a, DistributedArray) and a.ndim:
            blocks.append(_align_operand(a, sub, letters, layout))
            subs.append(letters)
        elif isinstance(a, DistributedArray):
            blocks.append({r: a.locals[r] for r in ranks})
            subs.append("")
        else:
            blocks.append({r: _slice_operand(a, sub, letters, layout, r) for r in ranks})
            subs.append(sub)
    kept = "".join(c for c in letters if c in rhs)
    reduced = [c for c in letters if c not in rhs and layout.maps[letters.index(c)].nprocs > 1]
    expr = ",".join(subs) + "->" + kept
    partial = {
        r: np.asarray(np.einsum(expr, *(b[r] for b in blocks), optimize=optimize, **kwargs))
        for r in ranks
    }
    dtype = partial[ranks[0]].dtype
    if not reduced:
        dist = Distribution([layout.maps[letters.index(c)] for c in kept]) if kept else None
        result = (
            new_array(dist, partial, backend, dtype)
            if kept
            else from_replicated(partial[ranks[0]], backend)
        )
    elif not kept:
        total = backend.combine(partial, np.add)
        result = from_replicated(np.asarray(total, dtype), backend)
    else:
        result = _reduce_partials(partial, letters, kept, reduced, layout, backend, dtype)
    return permute_axes(result, [kept.index(c) for c in rhs]) if result.ndim else result


def _align_operand(a, sub, letters, layout) -> dict:
    """Blocks of distributed `a` (subscripts `sub`) on `layout` (all `letters`).

    Subscripts `a` lacks become length-1 axes (broadcast by the exchange).
    """
    order = sorted(range(len(sub)), key=lambda i: letters.index(sub[i]))
    a = permute_axes(a, order)
    ordered = [sub[i] for i in order]
    it = iter(a.distribution.maps)
    src = Distribution([next(it) if c in ordered else BlockMap(1, nprocs=1) for c in letters])
    blocks = {r: b.reshape(src.local_shape(r)) for r, b in a.locals.items()}
    if src == layout:
        return blocks
    plan = exchange_plan(src, layout, a.backend.local_ranks)
    return run_plan(plan, blocks, a.dtype, a.backend)


def _slice_operand(a: np.ndarray, sub, letters, layout, rank) -> np.ndarray:
    glob = layout.global_indices(rank)
    parts = [
        slice(0, 1)
        if n == 1 and layout.shape[letters.index(c)] != 1
        else simplify_index(glob[letters.index(c)])
        for c, n in zip(sub, a.shape)
    ]
    return a[_index(parts)]


def _reduce_partials(partial, letters, kept, reduced, layout, backend, dtype):
    """Sum partials over the grid axes of the `reduced` subscripts with one exchange.

    Each rank's partial becomes one slot of an array with a length-``P_k``
    axis per reduced subscript; that array is redistributed so those axes
    are undistributed, and each rank sums its slots in rank order.
    """
    axes = [c for c in letters if c in kept or c in reduced]
    maps = []
    for c in axes:
        m = layout.maps[letters.index(c)]
        maps.append(BlockMap(m.nprocs, nprocs=m.nprocs) if c in reduced else m)
    slots = Distribution(maps)
    blocks = {r: b.reshape(slots.local_shape(r)) for r, b in partial.items()}
    target = Distribution.create(
        slots.shape, ["n" if c in reduced else "b" for c in axes], nranks=backend.nranks
    )
    moved = run_plan(exchange_plan(slots, target, backend.local_ranks), blocks, dtype, backend)
    where = tuple(k for k, c in enumerate(axes) if c in reduced)
    summed = {r: np.sum(b, axis=where, dtype=dtype) for r, b in moved.items()}
    dist = Distribution([target.maps[k] for k, c in enumerate(axes) if c not in reduced])
    return new_array(dist, summed, backend, dtype)
