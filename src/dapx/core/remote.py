"""Client-side handles of arrays whose blocks live on other processes (the dask backend).

A `RemoteArray` is a `DistributedArray` whose process holds no rank: its
metadata (shape, dtype, distribution) is local, and every operation runs on
the ranks through its backend's ``call`` (`dapx.backends.dask.DaskBackend`),
which returns new handles. Blocks come to the client only when asked:
`RemoteArray.local` and `RemoteArray.gather` fetch copies.
"""

from __future__ import annotations

import numpy as np

from ..backends.base import remote_arrays
from ..backends.dask import copy_back, holds_ndarray
from .array import DistributedArray, _implementation, new_array
from .dispatch import array_method
from .methods import ArrayMethods

__all__ = ["RemoteArray"]


class RemoteArray(DistributedArray):
    """The client's handle of an array whose blocks live on the dask backend's ranks.

    Metadata (shape, dtype, distribution) is local; everything else runs on
    the ranks (`DaskBackend.call`) or fetches blocks (`local`, `gather`).
    """

    __slots__ = ("_remote_id",)

    def __init__(self, dist, backend, dtype, remote_id):
        super().__init__(dist, {}, backend, dtype)
        self._remote_id = remote_id

    @property
    def remote_id(self):
        """The id under which the ranks hold this array's blocks."""
        return self._remote_id

    def _call(self, name: str, *args, **kwargs):
        return self._backend.call(_call_method, (self, name, args, kwargs))

    # -- NumPy protocols and Python's special methods -------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        result = self._backend.call(_call_method, (ufunc, method, inputs, kwargs))
        out = kwargs.get("out")
        if holds_ndarray(out):
            out = out[0] if isinstance(out, tuple) and len(out) == 1 else out
            return copy_back(out, result)
        return result

    def __array_function__(self, func, types, args, kwargs):
        if _implementation(func, types) is None:
            return NotImplemented  # as a DistributedArray: unknown functions and foreign types
        return self._backend.call(func, args, kwargs)

    def __getitem__(self, key):
        return self._backend.call(_getitem, (self, key))

    def __setitem__(self, key, value) -> None:
        self._backend.call(_setitem, (self, key, value))

    def __float__(self):
        return self._backend.call(float, (self,))

    def __int__(self):
        return self._backend.call(int, (self,))

    def __complex__(self):
        return self._backend.call(complex, (self,))

    def __bool__(self):
        return self._backend.call(bool, (self,))

    def __index__(self):
        return self._backend.call(_call_method, (self, "__index__", (), {}))

    def __deepcopy__(self, memo):
        return self.copy()

    def __repr__(self) -> str:
        from . import display

        dims = display._describe_dims(self)
        return (
            f"RemoteArray<shape={self.shape}, dtype={self.dtype}, dist={dims}, "
            f"grid={self.distribution.grid_shape}, backend={self._backend!r}>"
        )

    def _repr_inline_(self, max_width: int) -> str:
        return repr(self)[:max_width]

    def _repr_html_(self) -> str:
        import html

        return f"<pre>{html.escape(repr(self))}</pre>"

    # -- blocks on the client ----------------------------------------------------------------
    def local(self, rank: int | None = None) -> np.ndarray:
        """A copy of `rank`'s block (its interior), fetched from its worker."""
        return self._backend.fetch(self._remote_id, self._remote_rank(rank))

    def local_with_halo(self, rank: int | None = None) -> np.ndarray:
        """A copy of `rank`'s padded block, fetched from its worker."""
        return self._backend.fetch(self._remote_id, self._remote_rank(rank), padded=True)

    def _remote_rank(self, rank) -> int:
        if rank is None or not 0 <= int(rank) < self._backend.nranks:
            raise ValueError(f"rank must be one of 0..{self._backend.nranks - 1}, got {rank}")
        return int(rank)

    def _on_client(self) -> DistributedArray:
        """The array rebuilt on a simulated backend from fetched blocks (a copy)."""
        from ..backends.simulated import simulated

        backend = simulated(self._backend.nranks)
        blocks = {
            r: self.local_with_halo(r) if self._dist.ndim else self.local(r)
            for r in backend.local_ranks
        }
        return new_array(self._dist, blocks, backend, self._dtype)

    def gather(self) -> np.ndarray:
        """The whole array on the client: each rank's block is fetched once."""
        return self._on_client().gather()

    def distarray(self, rank: int | None = None) -> dict:
        """The DAP dict of `rank` over a fetched copy of its block."""
        return self._on_client().distarray(self._remote_rank(rank))

    def __distarray__(self) -> dict:
        raise TypeError(
            "__distarray__ exports this process's rank; the dask client holds none: use "
            "a.distarray(rank) for a copy of one rank's dict"
        )

    @property
    def __partitioned__(self) -> dict:
        return array_method("partitioned_futures")(self)


def _call_method(obj, name, args, kwargs):
    return getattr(obj, name)(*args, **kwargs)


def _getitem(obj, key):
    return obj[key]


def _setitem(obj, key, value):
    obj[key] = value


def _forward_method(name: str):
    def method(self, *args, **kwargs):
        return self._call(name, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"`DistributedArray.{name}`, run on the ranks."
    return method


def _forward_property(name: str, settable: bool):
    def get(self):
        return self._backend.call(getattr, (self, name))

    def set_(self, value):
        self._backend.call(setattr, (self, name, value))

    return property(get, set_ if settable else None, doc=f"`DistributedArray.{name}` on the ranks.")


_CLIENT_SIDE = {
    "distribution",
    "backend",
    "shape",
    "dtype",
    "ndim",
    "size",
    "nbytes",
    "itemsize",
    "locals",
    "to_numpy",
    "to_dask",
}


def _install_forwarders() -> None:
    members = {**vars(ArrayMethods), **vars(DistributedArray)}
    for name, attr in members.items():
        if name.startswith("_") or name in _CLIENT_SIDE or name in vars(RemoteArray):
            continue
        if isinstance(attr, property):
            setattr(RemoteArray, name, _forward_property(name, attr.fset is not None))
        elif callable(attr):
            setattr(RemoteArray, name, _forward_method(name))


_install_forwarders()


remote_arrays.register(DistributedArray, RemoteArray)
