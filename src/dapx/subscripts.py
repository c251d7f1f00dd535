"""`numpy.einsum` subscripts with ellipses, spelled out for `dapx.contraction`.

xarray's ``dot`` (and ``weighted``) call ``np.einsum("...ab,...b->...a", ...)``:
the broadcast dimensions are an ellipsis. `expand_ellipsis` replaces each
``...`` by explicit subscripts (right-aligned, as NumPy broadcasts them) so
that `dapx.contraction.einsum`, which works with explicit subscripts only,
handles the call; this module registers that combination as ``np.einsum``.
"""

from __future__ import annotations

import string
from collections.abc import Sequence

import numpy as np

from . import contraction
from .dispatch import implements

__all__ = ["einsum", "expand_ellipsis"]


def _as_text(operands: Sequence) -> tuple[str, list]:
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
        raise ValueError(
            f"einsum: {len(terms)} operand subscripts for {len(shapes)} operands"
        )
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
    """`numpy.einsum`, ellipses included (see `dapx.contraction.einsum` for the rest).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> x = np.arange(24.0).reshape(2, 3, 4)
    >>> a = dapx.asarray(x, backend=dapx.simulated(2))
    >>> np.einsum("...ij,...j->...i", a, np.ones(4)).gather()
    array([[ 6., 22., 38.],
           [54., 70., 86.]])
    """
    subscripts, arrays = _as_text(operands)
    shapes = [np.shape(a) if not hasattr(a, "shape") else a.shape for a in arrays]
    if "." in subscripts:
        # NumPy's own checks of the ellipses (and its messages), on stand-ins with no data.
        dummies = [np.broadcast_to(np.empty((), np.int8), s) for s in shapes]
        np.einsum_path(subscripts, *dummies, optimize=False)
        subscripts = expand_ellipsis(subscripts, shapes)
    return contraction.einsum(subscripts, *arrays, out=out, optimize=optimize, **kwargs)
