"""`DistributedArray`: the global view of an array whose blocks live on ranks.

An array is its global `shape`, `dtype`, an immutable `Distribution`, a
backend, and the local NumPy arrays of the ranks this process owns. All
array logic lives in the modules around this one (elementwise, reductions,
indexing, manipulation, ...) and reaches blocks only through the backend.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from ..backends import Backend
from ..config import config
from ..errors import GatherWarning
from ..layout.distribution import Distribution
from ..layout.protocol import PROTOCOL_VERSION
from .dispatch import HANDLED_FUNCTIONS, array_method
from .elision import install_eliding_operators
from .guard import collective

__all__ = ["DistributedArray"]

#: The 0-d distribution: one "rank" on a grid of no dimensions; 0-d arrays
#: are replicated, every process holding the same scalar.
SCALAR = Distribution(())


class DistributedArray(NDArrayOperatorsMixin):
    """A NumPy-like array distributed over the ranks of a backend.

    Build one with the creation functions (`dapx.asarray`, `dapx.zeros`,
    `dapx.from_distarray`, ...), not with this constructor.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> a = dapx.arange(10, backend=dapx.simulated(4))
    >>> a.shape, a.distribution.grid_shape
    ((10,), (4,))
    >>> a.local(1)
    array([3, 4, 5])
    >>> int(np.sum(a * 2))
    90
    """

    __slots__ = ("__weakref__", "_backend", "_dist", "_dtype", "_locals")
    __array_priority__ = 20

    def __init__(
        self,
        dist: Distribution,
        locals_: Mapping[int, np.ndarray],
        backend: Backend,
        dtype: Any = None,
    ):
        if dist.ndim and dist.nranks != backend.nranks:
            raise ValueError(
                f"the distribution has {dist.nranks} ranks (grid {dist.grid_shape}) but the "
                f"backend has {backend.nranks}"
            )
        locals_ = dict(locals_)
        if set(locals_) != set(backend.local_ranks):
            raise ValueError(
                f"expected local arrays for ranks {list(backend.local_ranks)}, "
                f"got {sorted(locals_)}"
            )
        if dtype is None:
            dtype = next(iter(locals_.values())).dtype
        self._dist = dist
        self._backend = backend
        self._dtype = np.dtype(dtype)
        self._locals = locals_

    # -- attributes ---------------------------------------------------------------------
    @property
    def distribution(self) -> Distribution:
        """The immutable layout of this array over the process grid."""
        return self._dist

    @property
    def backend(self) -> Backend:
        return self._backend

    @property
    def shape(self) -> tuple[int, ...]:
        return self._dist.global_shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def ndim(self) -> int:
        return self._dist.ndim

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self._dtype.itemsize

    @property
    def locals(self) -> MappingProxyType:
        """Read-only mapping rank -> local NumPy array, for this process's ranks."""
        return MappingProxyType(self._locals)

    def __len__(self) -> int:
        if not self.ndim:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    # -- local data and the DAP -----------------------------------------------------------
    def _rank(self, rank: int | None) -> int:
        local = self._backend.local_ranks
        if rank is None:
            if len(local) != 1:
                raise ValueError(
                    f"this process holds ranks {list(local)}; pass rank= to choose one"
                )
            return local[0]
        if rank not in self._locals:
            raise ValueError(
                f"rank {rank} is not held by this process (it holds {list(local)})"
            )
        return rank

    def local(self, rank: int | None = None) -> np.ndarray:
        """The local array of `rank` (default: the only local rank), shared, not copied.

        It is the DAP buffer: for an array with a halo, the padded block
        (as `local_with_halo`); ``a.interior.local(rank)`` is the block alone.
        """
        return self._locals[self._rank(rank)]

    def distarray(self, rank: int | None = None) -> dict:
        """The ``__distarray__`` dict of `rank`; its buffer shares memory with `local`."""
        r = self._rank(rank)
        dim_data = () if not self.ndim else self._dist.dim_data(r)
        return {"__version__": PROTOCOL_VERSION, "buffer": self._locals[r], "dim_data": dim_data}

    def __distarray__(self) -> dict:
        """The DAP export of this process's rank.

        Raises when this process holds several ranks (the simulated backend):
        use ``a.distarray(rank)`` there.
        """
        local = self._backend.local_ranks
        if len(local) != 1:
            raise ValueError(
                f"__distarray__() needs exactly one local rank but this process holds "
                f"{len(local)} ({type(self._backend).__name__}); call a.distarray(rank) instead"
            )
        return self.distarray(local[0])

    @collective
    def gather(self) -> np.ndarray:
        """The whole array as one NumPy array on every process (explicit gather)."""
        from .redistribution import gather

        return gather(self)

    def to_numpy(self) -> np.ndarray:
        """Alias of `gather`."""
        return self.gather()

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError(
                "a DistributedArray cannot be viewed as one NumPy array without a copy"
            )
        # A 0-d array is replicated: every process holds its value, so nothing is gathered.
        if self.ndim and self.size > config.gather_warning_threshold:
            warnings.warn(
                f"np.asarray gathers the whole {self.shape} array to every process; "
                "call .gather() to do it on purpose",
                GatherWarning,
                stacklevel=2,
            )
        out = self.gather()
        return out if dtype is None else out.astype(dtype, copy=False)

    @collective
    def redistribute(self, dist=None, grid=None, **options) -> DistributedArray:
        """The same values laid out by a new distribution, in one exchange.

        Parameters
        ----------
        dist, grid, **options
            As in `dapx.Distribution.create`, or a `Distribution` as `dist`.
        """
        from .redistribution import redistribute

        return redistribute(self, dist, grid, **options)

    # -- NumPy protocols --------------------------------------------------------------------
    @collective
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from .elementwise import apply_ufunc

        return apply_ufunc(ufunc, method, inputs, kwargs)

    @collective
    def __array_function__(self, func, types, args, kwargs):
        impl = _implementation(func, types)
        return NotImplemented if impl is None else impl(*args, **kwargs)

    # -- indexing (implemented in indexing.py) ----------------------------------------------
    # Arrays with a halo are indexed through their interior (the halo is not their value).
    @collective
    def __getitem__(self, key) -> DistributedArray:
        from .indexing import getitem

        return getitem(self.interior if self._dist.has_halo else self, key)

    @collective
    def __setitem__(self, key, value) -> None:
        from .indexing import setitem

        setitem(self.interior if self._dist.has_halo else self, key, value)

    # -- halos (implemented in halo.py) ---------------------------------------------------------
    def update_halos(self, boundary=None) -> None:
        """Fill every rank's ghost cells in place, in one exchange (collective).

        Parameters
        ----------
        boundary : str, number, None or dict, optional
            The condition at non-periodic domain edges, as in dask's
            ``map_overlap``: ``"none"``/None (leave the ghost cells, the
            default), a number (constant), ``"reflect"`` (mirror, edge
            repeated: NumPy's ``"symmetric"``), ``"nearest"``/``"edge"``,
            ``"periodic"``; a dict gives one per axis. Periodic dimensions
            always wrap. Ghost cells between ranks, edges and corners
            included, always get the neighbours' values.

        Examples
        --------
        >>> import numpy as np, dapx
        >>> a = dapx.asarray(np.arange(6.0), halo=1, backend=dapx.simulated(2))
        >>> a.local(0), a.local(1)
        (array([0., 0., 1., 2., 0.]), array([0., 3., 4., 5., 0.]))
        >>> a.update_halos(boundary="nearest")
        >>> a.local(0), a.local(1)
        (array([0., 0., 1., 2., 3.]), array([2., 3., 4., 5., 5.]))
        """
        from .halos import update_halos

        update_halos(self, boundary)

    @property
    def interior(self) -> DistributedArray:
        """This array without its halo, sharing memory (GDP-3's ``domain_view``).

        Its local blocks are views of the interiors of this array's blocks;
        an array without a halo is its own interior. No communication.
        """
        from .halos import interior

        return interior(self)

    def local_with_halo(self, rank: int | None = None) -> np.ndarray:
        """The padded local array of `rank`, ghost cells included (same as `local`)."""
        return self._locals[self._rank(rank)]

    # -- NumPy-style methods (implemented in reductions.py and manipulation.py) -------------
    # reductions.py, scans.py, statistics.py: thin delegates with NumPy's signatures
    def sum(self, *args, **kwargs):
        return np.sum(self, *args, **kwargs)

    def prod(self, *args, **kwargs):
        return np.prod(self, *args, **kwargs)

    def mean(self, *args, **kwargs):
        return np.mean(self, *args, **kwargs)

    def std(self, *args, **kwargs):
        return np.std(self, *args, **kwargs)

    def var(self, *args, **kwargs):
        return np.var(self, *args, **kwargs)

    def min(self, *args, **kwargs):
        return np.min(self, *args, **kwargs)

    def max(self, *args, **kwargs):
        return np.max(self, *args, **kwargs)

    def argmin(self, *args, **kwargs):
        return np.argmin(self, *args, **kwargs)

    def argmax(self, *args, **kwargs):
        return np.argmax(self, *args, **kwargs)

    def any(self, *args, **kwargs):
        return np.any(self, *args, **kwargs)

    def all(self, *args, **kwargs):
        return np.all(self, *args, **kwargs)

    def cumsum(self, *args, **kwargs):
        return np.cumsum(self, *args, **kwargs)

    def cumprod(self, *args, **kwargs):
        return np.cumprod(self, *args, **kwargs)

    # Note: ndarray.ptp was removed in NumPy 2.0; this one remains, as np.ptp.
    def ptp(self, *args, **kwargs):
        return np.ptp(self, *args, **kwargs)

    # manipulation.py, shaping.py, sorting.py
    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return array_method("astype")(self, dtype, order, casting, subok, copy)

    def copy(self, order="C"):
        return np.copy(self, order=order)

    def conj(self):
        return np.conjugate(self)

    def conjugate(self):
        return np.conjugate(self)

    @property
    def real(self):
        return array_method("part")(self, "real")

    @real.setter
    def real(self, value):
        array_method("set_part")(self, "real", value)

    @property
    def imag(self):
        return array_method("part")(self, "imag")

    @imag.setter
    def imag(self, value):
        array_method("set_part")(self, "imag", value)

    @property
    def T(self):
        return np.transpose(self)

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], (int, np.integer))):
            axes = axes[0]
        return np.transpose(self, axes if axes != () else None)

    def swapaxes(self, axis1, axis2):
        return np.swapaxes(self, axis1, axis2)

    def reshape(self, *shape, order="C", copy=None):
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        return np.reshape(self, shape, order=order, copy=copy)

    def ravel(self, order="C"):
        return np.ravel(self, order=order)

    def flatten(self, order="C"):
        return np.copy(np.ravel(self, order=order))

    def squeeze(self, axis=None):
        return np.squeeze(self, axis=axis)

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        return np.argsort(self, axis=axis, kind=kind, order=order, stable=stable)

    def searchsorted(self, v, side="left", sorter=None):
        return np.searchsorted(self, v, side=side, sorter=sorter)

    def nonzero(self):
        return np.nonzero(self)

    def clip(self, min=None, max=None, out=None, **kwargs):
        return np.clip(self, min, max, out=out, **kwargs)

    def round(self, decimals=0, out=None):
        return np.round(self, decimals=decimals, out=out)

    # -- scalars (0-d) ------------------------------------------------------------------------
    def _scalar(self):
        if self.ndim:
            raise TypeError(
                f"only 0-d (or size-1) arrays convert to Python scalars; this one has shape "
                f"{self.shape}"
            )
        return self._locals[self._backend.local_ranks[0]][()]

    def __float__(self):
        return float(self._scalar())

    def __int__(self):
        return int(self._scalar())

    def __complex__(self):
        return complex(self._scalar())

    def __bool__(self):
        if self.ndim:
            if self.size != 1:
                raise ValueError(
                    "the truth value of an array with more than one element is ambiguous"
                )
            return bool(self.reshape(()))
        return bool(self._scalar())

    def __index__(self):
        if self._dtype.kind not in "iub":
            raise TypeError(f"only integer arrays can be used as an index, not {self._dtype}")
        return int(self._scalar())

    def item(self):
        """The single element as a Python scalar (0-d or size-1 arrays)."""
        if self.ndim:
            return self.reshape(()).item()
        return self._scalar().item()

    # -- repr -----------------------------------------------------------------------------------
    def __repr__(self) -> str:
        from .display import array_repr

        return array_repr(self)

    def _repr_inline_(self, max_width: int) -> str:
        from .display import inline_repr

        return inline_repr(self, max_width)

    def _repr_html_(self) -> str:
        from .display import html_repr

        return html_repr(self)

    # -- internal constructors --------------------------------------------------------------------
    @classmethod
    def _wrap(cls, dist: Distribution, locals_: dict, backend: Backend) -> DistributedArray:
        """Internal constructor without checks, for results built from checked operands."""
        self = object.__new__(cls)
        self._dist = dist
        self._backend = backend
        self._locals = locals_
        self._dtype = next(iter(locals_.values())).dtype
        return self

    def _new(self, dist: Distribution, locals_: Mapping[int, np.ndarray], dtype=None):
        return DistributedArray(dist, locals_, self._backend, dtype)

    # -- interop: __partitioned__ and dask (implemented in partitioned.py) ----------------------
    @property
    def __partitioned__(self) -> dict:
        """The ``__partitioned__`` dict of this block-distributed array (no communication).

        See `dapx.interop.partitioned.partitioned`.
        """
        return array_method("__partitioned__")(self)

    def to_dask(self):
        """A ``dask.array`` whose chunks are the blocks (see `dapx.interop.dask_array.to_dask`)."""
        return array_method("to_dask")(self)

    # -- copy.deepcopy (xarray's DataArray.copy() deep-copies its data) -----------------------
    def __deepcopy__(self, memo) -> DistributedArray:
        """`numpy.copy`: the same layout and backend, each local block copied (no communication)."""
        return np.copy(self)


_SCALAR_TYPES = (int, float, complex, bool, np.generic)


def _implementation(func, types):
    """dapx's implementation of NumPy function `func`, or None (NEP 18: others may have one)."""
    impl = HANDLED_FUNCTIONS.get(func)
    if impl is None:
        return None
    for t in types:
        if not (issubclass(t, (DistributedArray, np.ndarray)) or t in _SCALAR_TYPES):
            return None
    return impl

install_eliding_operators(DistributedArray)
