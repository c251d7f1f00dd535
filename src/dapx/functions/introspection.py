"""NumPy functions about arrays rather than of their elements, and the ones dapx refuses.

Memory overlap, scalar types, einsum paths, printing and the index arrays of
triangles and diagonals need the shapes, dtypes and each rank's own blocks,
never the data gathered. Saving to ``.npy``/``.npz``/text would gather the
array into one file from one process: those raise TypeError naming the
parallel writers (`DistributedArray.to_zarr`, ``to_hdf5``, ``.dap.to_netcdf``).
"""

from __future__ import annotations

import operator

import numpy as np

from ..core.array import DistributedArray
from ..core.dispatch import implements
from .reductions import all as all_
from .shaping import from_replicated

__all__ = [
    "array2string",
    "array_equiv",
    "array_repr",
    "array_str",
    "common_type",
    "diag_indices_from",
    "einsum_path",
    "may_share_memory",
    "min_scalar_type",
    "refuse_saving",
    "shares_memory",
    "tril_indices_from",
    "triu_indices_from",
]


def _blocks_overlap(a, b, test) -> bool:
    if not isinstance(a, DistributedArray) or not isinstance(b, DistributedArray):
        return False  # a NumPy array never shares memory with dapx's blocks
    backend = a.backend
    flags = {r: bool(test(a.locals[r], b.locals[r])) for r in backend.local_ranks}
    return bool(backend.combine(flags, operator.or_))


@implements(np.shares_memory)
def shares_memory(a, b, max_work=None):
    """`numpy.shares_memory`: whether any rank's blocks of `a` and `b` overlap."""
    return _blocks_overlap(a, b, lambda x, y: np.shares_memory(x, y, max_work=max_work))


@implements(np.may_share_memory)
def may_share_memory(a, b, max_work=None):
    """`numpy.may_share_memory`: whether any rank's blocks of `a` and `b` may overlap."""
    return _blocks_overlap(a, b, lambda x, y: np.may_share_memory(x, y, max_work=max_work))


@implements(np.min_scalar_type)
def min_scalar_type(a, /):
    """`numpy.min_scalar_type`: the dtype for arrays, value-based for 0-d ones."""
    if a.ndim:
        return a.dtype
    return np.min_scalar_type(a.locals[a.backend.local_ranks[0]])


@implements(np.common_type)
def common_type(*arrays):
    """`numpy.common_type`, from the dtypes alone."""
    dtypes = [a.dtype if hasattr(a, "dtype") else np.asarray(a).dtype for a in arrays]
    return np.common_type(*(np.empty(0, d) for d in dtypes))


def _stand_in(x):
    """A zero-strided array with `x`'s shape and dtype (einsum_path reads shapes only)."""
    if isinstance(x, DistributedArray):
        return np.broadcast_to(np.zeros((), x.dtype), x.shape)
    return x


@implements(np.einsum_path)
def einsum_path(*operands, optimize="greedy", einsum_call=False):
    """`numpy.einsum_path`: the contraction order, from the operands' shapes."""
    return np.einsum_path(
        *(_stand_in(x) for x in operands), optimize=optimize, einsum_call=einsum_call
    )


@implements(np.array_equiv)
def array_equiv(a1, a2):
    """`numpy.array_equiv`: broadcastable and equal everywhere (a reduction, no gather)."""
    try:
        np.broadcast_shapes(np.shape(a1), np.shape(a2))
    except ValueError:
        return False
    return bool(all_(np.equal(a1, a2)))


@implements(np.array_repr)
def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """`numpy.array_repr`: dapx's repr (the layout and a summary of the local blocks)."""
    return repr(arr)


@implements(np.array_str)
def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """`numpy.array_str`: dapx's str."""
    return str(a)


@implements(np.array2string)
def array2string(a, *args, **kwargs):
    """Refused: formatting every element would gather the array."""
    raise TypeError(
        "np.array2string would format every element of a distributed array on one process; "
        "gather explicitly (np.array2string(a.gather())) or use repr(a) for a summary"
    )


def _index_arrays(indices, backend):
    return tuple(from_replicated(i, backend) for i in indices)


@implements(np.diag_indices_from)
def diag_indices_from(arr):
    """`numpy.diag_indices_from`, as distributed index arrays."""
    if arr.ndim < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(arr.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return _index_arrays(np.diag_indices(arr.shape[0], arr.ndim), arr.backend)


@implements(np.tril_indices_from)
def tril_indices_from(arr, k=0):
    """`numpy.tril_indices_from`, as distributed index arrays."""
    if arr.ndim != 2:
        raise ValueError("input array must be 2-d")
    return _index_arrays(np.tril_indices(arr.shape[-2], k=k, m=arr.shape[-1]), arr.backend)


@implements(np.triu_indices_from)
def triu_indices_from(arr, k=0):
    """`numpy.triu_indices_from`, as distributed index arrays."""
    if arr.ndim != 2:
        raise ValueError("input array must be 2-d")
    return _index_arrays(np.triu_indices(arr.shape[-2], k=k, m=arr.shape[-1]), arr.backend)


@implements(np.save, np.savez, np.savez_compressed, np.savetxt)
def refuse_saving(*args, **kwargs):
    """Refused: NumPy's files are written by one process from the whole array."""
    raise TypeError(
        "NumPy's save functions would gather a distributed array into one process; write it "
        "in parallel instead: a.to_zarr(store), a.to_hdf5(path, name), or for xarray objects "
        "ds.dap.to_zarr(store) / ds.dap.to_netcdf(path) (each rank writes its own block)"
    )
