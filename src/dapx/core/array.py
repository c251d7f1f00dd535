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
from .methods import ArrayMethods
from .operators import power_ufunc, power_ufunc_in_place

__all__ = ["DistributedArray", "new_array"]

#: The 0-d distribution: one "rank" on a grid of no dimensions; 0-d arrays
#: are replicated, every process holding the same scalar.
SCALAR = Distribution(())


class DistributedArray(ArrayMethods, NDArrayOperatorsMixin):
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
        # The public, checked door to `new_array`, the one constructor of arrays.
        a = new_array(dist, locals_, backend, dtype, check=True)
        self._dist, self._backend = a._dist, a._backend
        self._locals, self._dtype = a._locals, a._dtype

    # -- attributes ---------------------------------------------------------------------
    @property
    def distribution(self) -> Distribution:
        """The immutable layout of this array over the process grid."""
        return self._dist

    @property
    def backend(self) -> Backend:
        """The backend whose ranks hold the blocks (also `device`)."""
        return self._backend

    @property
    def shape(self) -> tuple[int, ...]:
        """The global shape, the same on every process."""
        return self._dist.global_shape

    @property
    def dtype(self) -> np.dtype:
        """The data type of the elements, the same in every block."""
        return self._dtype

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return self._dist.ndim

    @property
    def size(self) -> int:
        """The number of elements of the whole (global) array."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of the whole (global) array's elements, all ranks together."""
        return self.size * self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        """Bytes of one element."""
        return self._dtype.itemsize

    @property
    def locals(self) -> MappingProxyType:
        """Read-only mapping rank -> local NumPy array, for this process's ranks.

        The block API of dapx's own operation modules too: read blocks with
        ``a.locals[rank]`` or ``a.locals.items()``, write into them in place
        (they are NumPy arrays), and build results from a ``{rank: block}``
        dict with `new_array`. The mapping itself cannot be changed.
        """
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
            raise ValueError(f"rank {rank} is not held by this process (it holds {list(local)})")
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

    # -- halos (core/halos.py; the plans in exchange/halo.py) -----------------------------------
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

    # -- operators NumPy does not spell as one ufunc call ------------------------------------
    # Note: as ``ndarray``'s, ``a ** 2`` is ``np.square(a)`` (bool -> int8), and for inexact
    # dtypes ``a ** -1`` is ``np.reciprocal(a)`` and ``a ** 0.5`` is ``np.sqrt(a)``.
    def __pow__(self, other):
        if getattr(type(other), "__array_ufunc__", True) is None:
            return NotImplemented
        ufunc, loop = power_ufunc(self._dtype, other)
        kw = {} if loop is None else {"dtype": loop}
        return ufunc(self, **kw) if ufunc.nin == 1 else ufunc(self, other, **kw)

    def __ipow__(self, other):
        if getattr(type(other), "__array_ufunc__", True) is None:
            return NotImplemented
        ufunc = power_ufunc_in_place(self._dtype, other)
        return ufunc(self, out=(self,)) if ufunc.nin == 1 else ufunc(self, other, out=(self,))

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

    # -- interop: __partitioned__ and dask (registered by dapx.interop.partitioned, .dask_array) -
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


def new_array(
    dist: Distribution,
    blocks: Mapping[int, np.ndarray],
    backend: Backend,
    dtype: Any = None,
    *,
    check: bool = False,
    copy_scalars: bool = False,
) -> DistributedArray:
    """The one constructor of arrays inside dapx: a layout, ``{rank: block}`` and a backend.

    Parameters
    ----------
    dist : Distribution
        The layout of the result.
    blocks : dict
        One block per local rank of `backend`. Without `check` the array
        takes this dict over as it is (no copy): pass a dict nobody else
        keeps, e.g. ``dict(x.locals)`` to share another array's blocks.
    backend : Backend
        Where the blocks live.
    dtype : dtype, optional
        The array's dtype; default the first block's.
    check : bool, default False
        Check, as the public `DistributedArray` constructor does, that `dist`
        and `backend` have the same number of ranks and that `blocks` has one
        block per local rank (raising ValueError), and copy the dict. Results
        built from checked operands skip it: then the call costs no more than
        setting four attributes.
    copy_scalars : bool, default False
        For a 0-d `dist`: give each rank its own 0-d array, ``np.array(block)``
        (blocks may then be NumPy scalars, or one array shared by all ranks,
        which an in-place write through one rank would otherwise change for all).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> from dapx.core.array import new_array
    >>> a = dapx.arange(6, backend=dapx.simulated(2))
    >>> b = new_array(a.distribution, {r: -x for r, x in a.locals.items()}, a.backend)
    >>> b.local(1)
    array([-3, -4, -5])
    """
    if copy_scalars and not dist.ndim:
        blocks = {r: np.array(b) for r, b in blocks.items()}
    if check:
        if dist.ndim and dist.nranks != backend.nranks:
            raise ValueError(
                f"the distribution has {dist.nranks} ranks (grid {dist.grid_shape}) but the "
                f"backend has {backend.nranks}"
            )
        blocks = dict(blocks)
        if set(blocks) != set(backend.local_ranks):
            raise ValueError(
                f"expected local arrays for ranks {list(backend.local_ranks)}, got {sorted(blocks)}"
            )
    a = object.__new__(DistributedArray)
    a._dist = dist
    a._backend = backend
    a._locals = blocks
    a._dtype = next(iter(blocks.values())).dtype if dtype is None else np.dtype(dtype)
    return a


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
