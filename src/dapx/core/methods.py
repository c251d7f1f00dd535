"""NumPy's ``ndarray`` methods on `DistributedArray`, with NumPy's signatures.

Each method forwards its parameters to the NumPy function of the same name,
which dispatches back to dapx through ``__array_function__`` (the
implementations live in `dapx.functions`). Defaults that NumPy leaves unset
(``np._NoValue``) stay unset, so a method behaves exactly as the function.
"""

from __future__ import annotations

import sys

import numpy as np

from .dispatch import array_method

__all__ = ["ArrayMethods"]

_NoValue = np._NoValue


class _NotForXarray:
    """``__array_namespace__``, except when xarray asks.

    # Note: xarray routes every array that has ``__array_namespace__`` through
    # its array-API adapter, which has no vectorized indexing and calls only
    # the standard's functions; for xarray a DistributedArray is a NumPy duck
    # array (``__array_function__``/``__array_ufunc__``, with everything dapx
    # implements), so xarray's modules are not shown the namespace.
    """

    def __init__(self, method):
        self._method = method

    def __get__(self, instance, owner=None):
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if caller.startswith("xarray."):
            raise AttributeError("__array_namespace__")
        return self._method.__get__(instance, owner) if instance is not None else self._method


class ArrayMethods:
    """The ``ndarray`` methods of `DistributedArray` (a mixin: it holds no state)."""

    __slots__ = ()

    # -- reductions (dapx.functions.reductions, statistics) ---------------------------------
    def sum(
        self, axis=None, dtype=None, out=None, keepdims=_NoValue, initial=_NoValue, where=_NoValue
    ):
        """Sum of the elements over `axis`: `numpy.sum`.

        Partials are combined in rank order, so every backend gives the same bits.

        Examples
        --------
        >>> import dapx
        >>> a = dapx.arange(12.0, backend=dapx.simulated(3)).reshape(3, 4)
        >>> a.sum(axis=0).gather()
        array([12., 15., 18., 21.])
        >>> float(a.sum(where=a.gather() > 5))
        51.0
        """
        return np.sum(
            self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where
        )

    def prod(
        self, axis=None, dtype=None, out=None, keepdims=_NoValue, initial=_NoValue, where=_NoValue
    ):
        """Product of the elements over `axis`: `numpy.prod`.

        Examples
        --------
        >>> import dapx
        >>> int(dapx.arange(1, 6, backend=dapx.simulated(2)).prod())
        120
        """
        return np.prod(
            self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where
        )

    def mean(self, axis=None, dtype=None, out=None, keepdims=_NoValue, *, where=_NoValue):
        """Arithmetic mean over `axis`: `numpy.mean`.

        Examples
        --------
        >>> import dapx
        >>> a = dapx.arange(6.0, backend=dapx.simulated(2)).reshape(2, 3)
        >>> a.mean(axis=1, keepdims=True).gather()
        array([[1.],
               [4.]])
        """
        return np.mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where)

    def std(
        self,
        axis=None,
        dtype=None,
        out=None,
        ddof=0,
        keepdims=_NoValue,
        *,
        where=_NoValue,
        mean=_NoValue,
        correction=_NoValue,
    ):
        """Standard deviation over `axis`: `numpy.std` (`ddof` or `correction`).

        Examples
        --------
        >>> import dapx
        >>> float(dapx.asarray([1.0, 2.0, 3.0, 4.0], backend=dapx.simulated(2)).std(ddof=1))
        1.2909944487358056
        """
        return np.std(
            self,
            axis=axis,
            dtype=dtype,
            out=out,
            ddof=ddof,
            keepdims=keepdims,
            where=where,
            mean=mean,
            correction=correction,
        )

    def var(
        self,
        axis=None,
        dtype=None,
        out=None,
        ddof=0,
        keepdims=_NoValue,
        *,
        where=_NoValue,
        mean=_NoValue,
        correction=_NoValue,
    ):
        """Variance over `axis`: `numpy.var` (`ddof` or `correction`).

        Examples
        --------
        >>> import dapx
        >>> float(dapx.asarray([1.0, 2.0, 3.0, 4.0], backend=dapx.simulated(2)).var())
        1.25
        """
        return np.var(
            self,
            axis=axis,
            dtype=dtype,
            out=out,
            ddof=ddof,
            keepdims=keepdims,
            where=where,
            mean=mean,
            correction=correction,
        )

    def min(self, axis=None, out=None, keepdims=_NoValue, initial=_NoValue, where=_NoValue):
        """Minimum over `axis`: `numpy.min`.

        Examples
        --------
        >>> import dapx
        >>> int(dapx.asarray([3, 1, 2], backend=dapx.simulated(2)).min())
        1
        """
        return np.min(self, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)

    def max(self, axis=None, out=None, keepdims=_NoValue, initial=_NoValue, where=_NoValue):
        """Maximum over `axis`: `numpy.max`.

        Examples
        --------
        >>> import dapx
        >>> int(dapx.asarray([3, 1, 2], backend=dapx.simulated(2)).max(initial=7))
        7
        """
        return np.max(self, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)

    def argmin(self, axis=None, out=None, *, keepdims=_NoValue):
        """Index of the first minimum over `axis`: `numpy.argmin` (global indices).

        Examples
        --------
        >>> import dapx
        >>> int(dapx.asarray([3, 1, 2, 1], backend=dapx.simulated(2)).argmin())
        1
        """
        return np.argmin(self, axis=axis, out=out, keepdims=keepdims)

    def argmax(self, axis=None, out=None, *, keepdims=_NoValue):
        """Index of the first maximum over `axis`: `numpy.argmax` (global indices).

        Examples
        --------
        >>> import dapx
        >>> int(dapx.asarray([3, 1, 3, 2], backend=dapx.simulated(2)).argmax())
        0
        """
        return np.argmax(self, axis=axis, out=out, keepdims=keepdims)

    def any(self, axis=None, out=None, keepdims=_NoValue, *, where=_NoValue):
        """Whether any element over `axis` is true: `numpy.any`.

        Examples
        --------
        >>> import dapx
        >>> bool(dapx.asarray([0, 0, 1], backend=dapx.simulated(2)).any())
        True
        """
        return np.any(self, axis=axis, out=out, keepdims=keepdims, where=where)

    def all(self, axis=None, out=None, keepdims=_NoValue, *, where=_NoValue):
        """Whether every element over `axis` is true: `numpy.all`.

        Examples
        --------
        >>> import dapx
        >>> bool(dapx.asarray([1, 1, 0], backend=dapx.simulated(2)).all())
        False
        """
        return np.all(self, axis=axis, out=out, keepdims=keepdims, where=where)

    # Note: ndarray.ptp was removed in NumPy 2.0; this one remains, as np.ptp.
    def ptp(self, axis=None, out=None, keepdims=_NoValue):
        """Range (maximum minus minimum) over `axis`: `numpy.ptp`.

        Examples
        --------
        >>> import dapx
        >>> int(dapx.asarray([4, 9, 2], backend=dapx.simulated(2)).ptp())
        7
        """
        return np.ptp(self, axis=axis, out=out, keepdims=keepdims)

    # -- scans (dapx.functions.scans) --------------------------------------------------------
    def cumsum(self, axis=None, dtype=None, out=None):
        """Cumulative sum over `axis` (the flattened array by default): `numpy.cumsum`.

        Examples
        --------
        >>> import dapx
        >>> dapx.arange(5, backend=dapx.simulated(2)).cumsum().gather()
        array([ 0,  1,  3,  6, 10])
        """
        return np.cumsum(self, axis=axis, dtype=dtype, out=out)

    def cumprod(self, axis=None, dtype=None, out=None):
        """Cumulative product over `axis` (the flattened array by default): `numpy.cumprod`.

        Examples
        --------
        >>> import dapx
        >>> dapx.arange(1, 5, backend=dapx.simulated(2)).cumprod().gather()
        array([ 1,  2,  6, 24])
        """
        return np.cumprod(self, axis=axis, dtype=dtype, out=out)

    # -- elementwise and dtypes (dapx.functions.manipulation) ------------------------------
    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        """The array cast to `dtype`, blockwise: ``ndarray.astype``.

        Returns the array itself when ``copy=False`` and the dtype is already right.

        Examples
        --------
        >>> import numpy as np, dapx
        >>> dapx.arange(3, backend=dapx.simulated(2)).astype(np.float32).dtype
        dtype('float32')
        """
        return array_method("astype")(self, dtype, order, casting, subok, copy)

    # -- the array API standard (dapx.interop.array_api) -------------------------------------
    def _array_namespace(self, /, *, api_version=None):
        """The array API namespace of dapx (``dapx.interop.array_api``)."""
        return array_method("array_namespace")(api_version)

    __array_namespace__ = _NotForXarray(_array_namespace)

    @property
    def device(self):
        """The array's device: its backend."""
        return self.backend

    def to_device(self, device, /, *, stream=None):
        """The array on `device` (its own backend only: moving between backends is not done)."""
        if device is not self.backend:
            raise ValueError(
                f"cannot move an array from {self.backend!r} to {device!r}; dapx's devices are "
                "backends, and arrays do not move between them"
            )
        return self

    @property
    def mT(self):
        """The last two axes swapped: the array API's matrix transpose."""
        if self.ndim < 2:
            raise ValueError("mT needs an array of at least two dimensions")
        return np.matrix_transpose(self)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        # Note: DLPack describes one buffer; a distributed array is many. Blocks export it.
        raise BufferError(
            "a DistributedArray is not one buffer and cannot export DLPack; export a block "
            "instead: a.local(rank).__dlpack__()"
        )

    def __dlpack_device__(self):
        raise BufferError("a DistributedArray has no single DLPack device; see a.local(rank)")

    # -- files (dapx.interop.io) ----------------------------------------------------------
    def to_zarr(
        self,
        store,
        component=None,
        *,
        chunks=None,
        overwrite=False,
        attrs=None,
        progress=False,
        **kwargs,
    ) -> None:
        """Write to a zarr array, every rank its own chunks; collective.

        The process of rank 0 creates the array, every rank writes the chunks
        of its own block, and the array is marked incomplete until all have
        written (`dapx.from_zarr` refuses it otherwise). `chunks` (default:
        the blocks, where they are equal) are made rank-exclusive: a layout
        whose blocks do not fall on chunk boundaries (cyclic, unstructured,
        uneven blocks) is first redistributed, in one exchange. The halo is
        never written. ``**kwargs`` go to `zarr.create_array` (compressors...).

        Examples
        --------
        >>> import numpy as np, dapx, tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "a.zarr")
        >>> dapx.arange(8.0, dist="c", backend=dapx.simulated(2)).to_zarr(path)
        >>> import zarr; zarr.open_array(path)[:]
        array([0., 1., 2., 3., 4., 5., 6., 7.])
        """
        array_method("to_zarr")(
            self,
            store,
            component,
            chunks=chunks,
            overwrite=overwrite,
            attrs=attrs,
            progress=progress,
            **kwargs,
        )

    def to_hdf5(self, path, name, *, mode="a", chunks=None, attrs=None, **kwargs) -> None:
        """Write as dataset `name` of the HDF5 file `path`, the ranks in turn; collective.

        The process of rank 0 creates the dataset (``mode="w"`` truncates the
        file first), then the ranks write their own regions one after
        another (HDF5 from PyPI has no MPI-IO; with an MPI-enabled h5py under
        MPI they write at once). No rank holds more than its own block; the
        halo is never written. ``**kwargs`` go to ``h5py.Group.create_dataset``.

        Examples
        --------
        >>> import numpy as np, dapx, tempfile, os, h5py
        >>> path = os.path.join(tempfile.mkdtemp(), "a.h5")
        >>> dapx.arange(6, dist="c", backend=dapx.simulated(3)).to_hdf5(path, "x")
        >>> h5py.File(path)["x"][:]
        array([0, 1, 2, 3, 4, 5])
        """
        array_method("to_hdf5")(self, path, name, mode=mode, chunks=chunks, attrs=attrs, **kwargs)

    def copy(self, order="C"):
        """A copy with the same layout, every block copied: ``ndarray.copy``."""
        return np.copy(self, order=order)

    def conj(self):
        """The complex conjugate, elementwise: `numpy.conjugate`."""
        return np.conjugate(self)

    def conjugate(self):
        """The complex conjugate, elementwise: `numpy.conjugate`."""
        return np.conjugate(self)

    @property
    def real(self):
        """The real part (views of the blocks); settable, as ``ndarray.real``."""
        return array_method("part")(self, "real")

    @real.setter
    def real(self, value):
        array_method("set_part")(self, "real", value)

    @property
    def imag(self):
        """The imaginary part (views of the blocks); settable, as ``ndarray.imag``."""
        return array_method("part")(self, "imag")

    @imag.setter
    def imag(self, value):
        array_method("set_part")(self, "imag", value)

    def clip(self, min=None, max=None, out=None, **kwargs):
        """Values limited to ``[min, max]``: `numpy.clip` (ufunc keywords in `kwargs`).

        Examples
        --------
        >>> import dapx
        >>> dapx.arange(5, backend=dapx.simulated(2)).clip(1, 3).gather()
        array([1, 1, 2, 3, 3])
        """
        return np.clip(self, min, max, out=out, **kwargs)

    def round(self, decimals=0, out=None):
        """Values rounded to `decimals` decimals: `numpy.round`."""
        return np.round(self, decimals=decimals, out=out)

    # -- shapes and axes (dapx.functions.shaping) -------------------------------------------
    @property
    def T(self):
        """The array with its axes reversed: `numpy.transpose`."""
        return np.transpose(self)

    def transpose(self, *axes):
        """The array with its axes permuted: ``ndarray.transpose``.

        `axes` as NumPy takes them: none (reverse), a tuple, or the axes as
        separate arguments.

        Examples
        --------
        >>> import dapx
        >>> dapx.zeros((2, 3, 4), backend=dapx.simulated(2)).transpose(2, 0, 1).shape
        (4, 2, 3)
        """
        if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], (int, np.integer))):
            axes = axes[0]
        return np.transpose(self, axes if axes != () else None)

    def swapaxes(self, axis1, axis2):
        """The array with two axes interchanged: `numpy.swapaxes`."""
        return np.swapaxes(self, axis1, axis2)

    def reshape(self, *shape, order="C", copy=None):
        """The same elements in a new shape: ``ndarray.reshape``.

        `shape` as NumPy takes it: a tuple or the dimensions as separate
        arguments. Only ``order="C"`` is supported.

        Examples
        --------
        >>> import dapx
        >>> dapx.arange(6, backend=dapx.simulated(2)).reshape(2, 3).gather()
        array([[0, 1, 2],
               [3, 4, 5]])
        """
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = shape[0]
        return np.reshape(self, shape, order=order, copy=copy)

    def ravel(self, order="C"):
        """The array as 1-D: `numpy.ravel`."""
        return np.ravel(self, order=order)

    def flatten(self, order="C"):
        """A 1-D copy of the array: ``ndarray.flatten``."""
        return np.copy(np.ravel(self, order=order))

    def squeeze(self, axis=None):
        """The array without its length-1 axes (or those in `axis`): `numpy.squeeze`."""
        return np.squeeze(self, axis=axis)

    # -- sorting and searching (dapx.functions.sorting, manipulation) ------------------------
    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        """Indices that sort the array along `axis`: `numpy.argsort`.

        Examples
        --------
        >>> import dapx
        >>> dapx.asarray([3, 1, 2], backend=dapx.simulated(2)).argsort().gather()
        array([1, 2, 0])
        """
        return np.argsort(self, axis=axis, kind=kind, order=order, stable=stable)

    def searchsorted(self, v, side="left", sorter=None):
        """Where the values of `v` would be inserted to keep this 1-D array sorted."""
        return np.searchsorted(self, v, side=side, sorter=sorter)

    def nonzero(self):
        """The indices of the non-zero elements, one array per axis: `numpy.nonzero`."""
        return np.nonzero(self)
