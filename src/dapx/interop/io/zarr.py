"""zarr: a distributed array in and out of a zarr store, each rank its own chunks.

Writing: the process of rank 0 creates the array (marked incomplete), every
rank writes the chunks of its own block (the layout is first made
chunk-aligned, see `dapx.interop.io.writing.chunk_aligned`, so no two ranks
ever write one chunk), and once all have written rank 0 removes the mark.
A store whose write failed keeps the mark, and `from_zarr` refuses it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ...backends import Backend, resolve_backend
from ...core.array import DistributedArray
from ...core.dispatch import implements_method
from ...core.guard import collective
from .progress import progress_bar
from .reading import from_array
from .threads import io_threads, zarr_in_flight
from .writing import INCOMPLETE, chunk_aligned, once, owned_regions, writer_of

__all__ = ["from_zarr", "open_zarr", "open_zarr_array", "to_zarr"]


def _zarr():
    try:
        import zarr
    except ImportError as e:
        raise ImportError("zarr is needed for zarr stores: pip install 'dapx[io]'") from e
    return zarr


def open_zarr_array(store, component: str | None = None, mode: str = "r"):
    """The zarr array at `component` of `store`, refused if a dapx write left it incomplete."""
    zarr = _zarr()
    try:
        z = zarr.open_array(store, path=component or "", mode=mode)
    except (FileNotFoundError, KeyError, ValueError) as e:
        where = f"{store!s}" + (f" (component {component!r})" if component else "")
        raise FileNotFoundError(f"no zarr array at {where}: {e}") from e
    if z.attrs.get(INCOMPLETE):
        raise ValueError(
            f"the zarr array at {store!s}{f' (component {component!r})' if component else ''} "
            "was not completely written "
            "(a dapx write failed or is still running)"
        )
    return z


@implements_method("to_zarr")
@collective
def to_zarr(
    a: DistributedArray,
    store,
    component: str | None = None,
    *,
    chunks=None,
    overwrite: bool = False,
    attrs: dict | None = None,
    progress: bool = False,
    **kwargs: Any,
) -> None:
    """Write `a` to a zarr array, every rank its own chunks (see `DistributedArray.to_zarr`)."""
    zarr = _zarr()
    aligned, chunks = chunk_aligned(a, chunks)
    backend = aligned.backend

    def create():
        zarr.create_array(
            store,
            name=component,
            shape=a.shape,
            dtype=a.dtype,
            chunks=chunks if a.ndim else "auto",
            overwrite=overwrite,
            attributes={**(attrs or {}), INCOMPLETE: True},
            **kwargs,
        )

    once(backend, create)
    regions = list(owned_regions(aligned))
    if regions:
        z = zarr.open_array(store, path=component or "", mode="r+")

        def write(item):
            _, region, values = item
            z[region] = values

        shown = progress and writer_of(a)
        threads = io_threads(len(regions))
        # Several ranks here: their chunks are encoded and written at once (no chunk is
        # shared, so the writes never overlap).
        with zarr_in_flight(threads), ThreadPoolExecutor(threads) as pool:
            list(progress_bar(pool.map(write, regions), shown, "writing", len(regions)))
    backend.barrier()

    def finish():
        z = zarr.open_array(store, path=component or "", mode="r+")
        z.attrs.put({k: v for k, v in z.attrs.asdict().items() if k != INCOMPLETE})

    once(backend, finish)  # complete on every rank when to_zarr returns


def from_zarr(
    store,
    component: str | None = None,
    *,
    dist=None,
    grid=None,
    halo=None,
    backend: Backend | None = None,
    progress: bool = False,
    **options,
) -> DistributedArray:
    """A distributed array read from a zarr array, each rank reading its own elements.

    Parameters as `dapx.from_array`; `store` is what `zarr.open_array`
    takes (a path, a URL or a zarr Store), `component` the array's path in it.

    Examples
    --------
    >>> import numpy as np, dapx, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.zarr")
    >>> a = dapx.asarray(np.arange(10.0), backend=dapx.simulated(2))
    >>> a.to_zarr(path)
    >>> dapx.from_zarr(path, dist="c", backend=dapx.simulated(2)).local(1)
    array([1., 3., 5., 7., 9.])
    """
    backend = resolve_backend(backend)
    z = open_zarr_array(store, component)
    return from_array(
        z, dist=dist, grid=grid, halo=halo, backend=backend, progress=progress, **options
    )


def open_zarr(store, grid=None, **kwargs):
    """A Dataset from a zarr store, its variables distributed as they are read.

    Needs xarray; see `dapx.interop.xarray.io.open_zarr` (imported only when
    called, so that ``import dapx`` does not import xarray).
    """
    from ..xarray.io import open_zarr as open_dataset_zarr

    return open_dataset_zarr(store, grid, **kwargs)
