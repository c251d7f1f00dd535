"""``ufunc.reduce``, ``ufunc.accumulate`` and ``ufunc.outer`` on distributed arrays."""

from __future__ import annotations

__all__ = ["accumulate", "outer", "reduce"]


def reduce(ufunc, array, axis=0, dtype=None, out=None, keepdims=False, initial=None,
           where=True):  # fmt: skip
    from .reductions import ufunc_reduce

    return ufunc_reduce(ufunc, array, axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                        initial=initial, where=where)  # fmt: skip


def accumulate(ufunc, array, axis=0, dtype=None, out=None):
    from .reductions import ufunc_accumulate

    return ufunc_accumulate(ufunc, array, axis=axis, dtype=dtype, out=out)


def outer(ufunc, a, b, **kwargs):
    from .reductions import ufunc_outer

    return ufunc_outer(ufunc, a, b, **kwargs)
