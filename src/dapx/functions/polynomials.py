"""NumPy's polynomial functions: polyfit on distributed samples, the rest on coefficients.

`polyfit` builds the Vandermonde matrix of the distributed sample points
(rows laid out like them) and solves the least-squares problem with
`numpy.linalg.lstsq`, which takes it through tall-skinny QR
(`dapx.functions.tall_skinny`): nothing is gathered but the ``deg + 1``
column scales. The other functions work on coefficient or root
vectors, which are small: a distributed one is gathered (with a
`dapx.GatherWarning` above the threshold) and the small result is
distributed again without communication.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..core.array import DistributedArray
from ..core.dispatch import implements
from .elementwise_library import vander
from .linear_algebra import lstsq
from .reductions import sum as sum_
from .scans import whole
from .shaping import from_replicated

__all__ = [
    "poly",
    "polyadd",
    "polyder",
    "polydiv",
    "polyfit",
    "polyint",
    "polymul",
    "polysub",
    "roots",
]


def _backend(*xs):
    return next(x for x in xs if isinstance(x, DistributedArray)).backend


def _on_coefficients(func, name, *arrays, **kwargs):
    backend = _backend(*arrays)
    small = [
        whole(x, f"{name}'s coefficients") if isinstance(x, DistributedArray) else x for x in arrays
    ]
    result = func(*small, **kwargs)
    if isinstance(result, tuple):
        return tuple(from_replicated(np.asarray(r), backend) for r in result)
    return from_replicated(np.asarray(result), backend)


@implements(np.poly)
def poly(seq_of_zeros):
    """`numpy.poly` of distributed roots (a small vector, gathered)."""
    return _on_coefficients(np.poly, "np.poly", seq_of_zeros)


@implements(np.roots)
def roots(p):
    """`numpy.roots` of distributed coefficients."""
    return _on_coefficients(np.roots, "np.roots", p)


@implements(np.polyadd)
def polyadd(a1, a2):
    """`numpy.polyadd` of coefficient vectors."""
    return _on_coefficients(np.polyadd, "np.polyadd", a1, a2)


@implements(np.polysub)
def polysub(a1, a2):
    """`numpy.polysub` of coefficient vectors."""
    return _on_coefficients(np.polysub, "np.polysub", a1, a2)


@implements(np.polymul)
def polymul(a1, a2):
    """`numpy.polymul` of coefficient vectors."""
    return _on_coefficients(np.polymul, "np.polymul", a1, a2)


@implements(np.polydiv)
def polydiv(u, v):
    """`numpy.polydiv` of coefficient vectors: (quotient, remainder)."""
    return _on_coefficients(np.polydiv, "np.polydiv", u, v)


@implements(np.polyder)
def polyder(p, m=1):
    """`numpy.polyder` of a coefficient vector."""
    return _on_coefficients(np.polyder, "np.polyder", p, m=m)


@implements(np.polyint)
def polyint(p, m=1, k=None):
    """`numpy.polyint` of a coefficient vector."""
    return _on_coefficients(np.polyint, "np.polyint", p, m=m, k=k)


@implements(np.polyfit)
def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """`numpy.polyfit` of distributed samples, NumPy's scaled least squares.

    # Note: ``cov=True`` is not implemented.
    """
    if cov:
        raise NotImplementedError("np.polyfit with cov=True is not implemented")
    order = int(deg) + 1
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if np.ndim(x) != 1:
        raise TypeError("expected 1D vector for x")
    if np.shape(x)[0] == 0:
        raise TypeError("expected non-empty vector for x")
    if np.ndim(y) < 1 or np.ndim(y) > 2:
        raise TypeError("expected 1D or 2D array for y")
    if np.shape(x)[0] != np.shape(y)[0]:
        raise TypeError("expected x and y to have same length")
    x = x + 0.0 if isinstance(x, DistributedArray) else np.asarray(x) + 0.0
    if not isinstance(x, DistributedArray):
        x = from_replicated(x, _backend(y))
    if rcond is None:
        rcond = x.shape[0] * np.finfo(x.dtype).eps
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        if np.ndim(w) != 1:
            raise TypeError("expected a 1-d array for weights")
        lhs = (
            lhs * np.expand_dims(w, -1)
            if isinstance(w, DistributedArray)
            else lhs * np.asarray(w)[:, None]
        )
        rhs = rhs * w if np.ndim(rhs) == 1 else rhs * np.expand_dims(w, -1)
    scale = np.sqrt(sum_(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = lstsq(lhs, rhs, rcond)
    scale_values = scale.gather()  # deg + 1 values: small whatever the number of samples
    c = (c.T / scale_values).T
    if rank != order and not full:
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning, stacklevel=2)
    if full:
        return c, resids, rank, s, rcond
    return c
