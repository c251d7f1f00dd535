"""Temporary elision for binary operators.

NumPy reuses the buffer of a temporary in ``a * b + c``: the product is
referenced only by the interpreter, so the sum is written into it. A
wrapper loses that (15-30% on memory-bound expressions, and an extra
array of peak memory) unless it does the same, which this module does for
DistributedArray: when the left operand of an arithmetic operator is such a
temporary whose local blocks nobody else can see, the result is written
into it with ``out=``. A client's handle of blocks held by other processes
(the dask backend's `RemoteArray`) is a temporary in the client's reference
count, but only each rank can see whether its block is shared: there the
operation is shipped as `into_private_blocks`, which writes into the blocks
that are private and returns a new array on every rank alike.

Whether the left operand is a temporary is read from its reference count,
which is exact only where the interpreter holds a strong reference to every
operand on its stack: CPython 3.10 to 3.13 with the GIL. CPython 3.14 loads
local variables onto the stack as borrowed references (NumPy changed its own
elision for it), so a named variable could look like a temporary there, and
free-threaded builds defer reference counts; on those interpreters, and on
other implementations, the operators are NumPy's plain ones.
"""

from __future__ import annotations

import sys

import numpy as np

from ..backends.base import remote_arrays
from .operators import power_ufunc

__all__ = [
    "ELISION_ENABLED",
    "install_eliding_operators",
    "into_private_blocks",
    "refcounts_are_exact",
]

# References to the left operand seen from inside the operator method when it
# is a temporary: the interpreter's, the method's `self`, and getrefcount's.
_TEMPORARY_REFS = 3

_OPERATORS = {
    "__add__": np.add,
    "__sub__": np.subtract,
    "__mul__": np.multiply,
    "__truediv__": np.true_divide,
    "__floordiv__": np.floor_divide,
    "__pow__": np.power,
    "__mod__": np.remainder,
    "__and__": np.bitwise_and,
    "__or__": np.bitwise_or,
    "__xor__": np.bitwise_xor,
}


def refcounts_are_exact(implementation: str, version: tuple[int, int], gil_enabled: bool) -> bool:
    """Whether ``sys.getrefcount`` sees the interpreter's own reference to an operand.

    >>> refcounts_are_exact("cpython", (3, 13), True), refcounts_are_exact("cpython", (3, 14), True)
    (True, False)
    """
    return implementation == "cpython" and (3, 10) <= tuple(version) <= (3, 13) and gil_enabled


#: Whether this interpreter elides temporaries (see the module notes).
ELISION_ENABLED = refcounts_are_exact(
    sys.implementation.name,
    sys.version_info[:2],
    getattr(sys, "_is_gil_enabled", lambda: True)(),  # 3.13+; older builds always have the GIL
)


def _blocks_private(array) -> bool:
    if not array._locals:  # a handle of blocks held elsewhere (dask): never write into it
        return False
    for rank in array._locals:
        block = array._locals[rank]
        if not block.flags.writeable or not _sole_owner_of_its_memory(block):
            return False
        del block
        # The dict's reference and getrefcount's argument; more means someone holds a view.
        if sys.getrefcount(array._locals[rank]) > 2:
            return False
    return True


def _sole_owner_of_its_memory(block: np.ndarray) -> bool:
    """Whether no other array can see `block`'s memory (bar views of `block` itself).

    A block may be a view of the whole of a buffer nobody else holds: an
    exchange adopts the memory it received as the destination block. Any view
    of that memory, `block`'s included, references the buffer itself.
    """
    base = block.base
    if base is None:
        return True
    # The references of `block`, of `base` here and getrefcount's argument.
    return (
        type(base) is np.ndarray
        and base.flags.owndata
        and base.nbytes == block.nbytes
        and sys.getrefcount(base) <= 3
    )


def _operand_dtype(other):
    if isinstance(other, (bool, int, float, complex)):
        return type(other)
    dtype = getattr(other, "dtype", None)
    return dtype if isinstance(dtype, np.dtype) else None


def _fits(self, other, ufunc) -> bool:
    """Whether ``ufunc(self, other)`` keeps `self`'s shape and dtype (``out=self`` is NumPy's)."""
    other_dtype = _operand_dtype(other)
    if other_dtype is None:
        return False
    shape = getattr(other, "shape", ())
    if len(shape) > self.ndim or any(
        n not in (1, m) for n, m in zip(shape[::-1], self.shape[::-1])
    ):
        return False
    inputs = (self.dtype,) if ufunc.nin == 1 else (self.dtype, other_dtype)
    try:
        dtypes = ufunc.resolve_dtypes((*inputs, None))
    except TypeError:  # no loop for these dtypes (NumPy's UFuncTypeError is a TypeError)
        return False
    return dtypes[-1] == self.dtype


def into_private_blocks(ufunc, left, other):
    """``ufunc(left, other)`` on this process's ranks, written into `left`'s blocks where private.

    For a temporary `left` that a client holds a handle of (see the module
    notes): a rank whose block nobody else sees writes into it, the others
    allocate; every rank returns a new array (the same handle for the
    client), whose blocks may be `left`'s, which nobody reads again.
    """
    from .array import new_array  # (the array module installs these operators)

    if not _blocks_private(left):
        return ufunc(left, other)
    ufunc(left, other, out=left)
    return new_array(left.distribution, dict(left._locals), left.backend, left.dtype)


def _is_handle(array) -> bool:
    handle = remote_arrays.handle_type
    return handle is not None and isinstance(array, handle)


def _make(name, ufunc):
    def operator(self, other):
        if getattr(type(other), "__array_ufunc__", True) is None:
            return NotImplemented
        temporary = sys.getrefcount(self) <= _TEMPORARY_REFS  # before any new reference
        func, loop = power_ufunc(self.dtype, other) if ufunc is np.power else (ufunc, None)
        operands = (self,) if func.nin == 1 else (self, other)
        kw = {} if loop is None else {"dtype": loop}
        if temporary and loop is None and _fits(self, other, func):
            if _is_handle(self):  # only the ranks see whether their blocks are shared
                return self.backend.call(into_private_blocks, (func, self, other))
            if _blocks_private(self):
                return func(*operands, out=self)
        return func(*operands, **kw)

    operator.__name__ = name
    operator.__doc__ = f"``{ufunc.__name__}`` that reuses a temporary left operand's buffers."
    return operator


def install_eliding_operators(cls) -> None:
    """Replace `cls`'s forward arithmetic operators with eliding ones, where that is safe."""
    if not ELISION_ENABLED:
        return
    for name, ufunc in _OPERATORS.items():
        setattr(cls, name, _make(name, ufunc))
