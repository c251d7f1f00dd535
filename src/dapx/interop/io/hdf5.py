"""HDF5 (h5py): a distributed array in and out of one file, without MPI-IO where there is none.

The HDF5 in the h5py wheels on PyPI is not built with MPI, so one process
at a time may have the file open for writing: the process of rank 0 creates
the dataset (marked incomplete), then the ranks write their own regions in
turn (`dapx.interop.io.writing.in_turn`, as Heat's writer passes a token),
then rank 0 removes the mark. No rank ever holds more than its own block.
Where h5py is built with MPI and the backend is MPI, every rank opens the
file with the ``mpio`` driver and writes its region at the same time.
"""

from __future__ import annotations

from typing import Any

from ...backends import Backend, resolve_backend
from ...core.array import DistributedArray
from ...core.dispatch import implements_method
from ...core.guard import collective
from .reading import from_array
from .writing import INCOMPLETE, chunk_aligned, in_turn, once, owned_regions

__all__ = ["from_hdf5", "parallel_hdf5", "to_hdf5"]


def _h5py():
    try:
        import h5py
    except ImportError as e:
        raise ImportError("h5py is needed for HDF5 files: pip install 'dapx[io]'") from e
    return h5py


def parallel_hdf5(backend: Backend) -> bool:
    """Whether `backend` can write HDF5 with MPI-IO (an MPI-enabled h5py under MPI)."""
    return backend.name == "mpi" and bool(_h5py().get_config().mpi)


@implements_method("to_hdf5")
@collective
def to_hdf5(
    a: DistributedArray,
    path,
    name: str,
    *,
    mode: str = "a",
    chunks=None,
    attrs: dict | None = None,
    **kwargs: Any,
) -> None:
    """Write `a` as dataset `name` of the HDF5 file `path` (see `DistributedArray.to_hdf5`)."""
    h5py = _h5py()
    if mode not in ("a", "w"):
        raise ValueError(f"mode must be 'a' (add to the file) or 'w' (truncate), got {mode!r}")
    aligned, _ = chunk_aligned(a, chunks if isinstance(chunks, tuple) else None)
    backend = aligned.backend
    # Every process is here, so none still has the file open from before (HDF5 locks it).
    backend.barrier()
    options = {"chunks": chunks, **kwargs}
    if parallel_hdf5(backend):
        with h5py.File(path, mode, driver="mpio", comm=backend.comm) as f:
            dataset = f.create_dataset(name, a.shape, a.dtype, **options)
            for _, region, values in owned_regions(aligned):
                dataset[region] = values
            dataset.attrs.update(attrs or {})
        return

    def create():
        with h5py.File(path, mode) as f:
            if name in f:
                raise ValueError(f"{path!s} already holds {name!r}; write with mode='w'")
            dataset = f.create_dataset(name, a.shape, a.dtype, **options)
            dataset.attrs.update({**(attrs or {}), INCOMPLETE: True})

    once(backend, create)
    mine = {rank: (region, values) for rank, region, values in owned_regions(aligned)}
    if len(backend.local_ranks) == backend.nranks:
        with h5py.File(path, "r+") as f:
            for region, values in mine.values():
                f[name][region] = values
    else:

        def write(rank):
            if rank in mine:
                with h5py.File(path, "r+") as f:
                    f[name][mine[rank][0]] = mine[rank][1]

        in_turn(aligned, write)

    def finish():
        with h5py.File(path, "r+") as f:
            del f[name].attrs[INCOMPLETE]

    once(backend, finish)  # complete on every rank when to_hdf5 returns


def from_hdf5(
    path,
    name: str,
    *,
    dist=None,
    grid=None,
    halo=None,
    backend: Backend | None = None,
    progress: bool = False,
    **options,
) -> DistributedArray:
    """A distributed array read from dataset `name` of an HDF5 file, each rank its own elements.

    Every process opens the file read-only and reads its ranks' elements
    (on the dask backend, every worker). Parameters as `dapx.from_array`.

    Examples
    --------
    >>> import numpy as np, dapx, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.h5")
    >>> dapx.asarray(np.arange(6.0), backend=dapx.simulated(2)).to_hdf5(path, "x")
    >>> dapx.from_hdf5(path, "x", backend=dapx.simulated(3)).local(2)
    array([4., 5.])
    """
    h5py = _h5py()
    backend = resolve_backend(backend)
    try:
        f = h5py.File(path, "r")
    except FileNotFoundError as e:
        raise FileNotFoundError(f"no HDF5 file {path!s}") from e
    with f:
        if name not in f:
            raise KeyError(f"{path!s} has no dataset {name!r} (it has {sorted(f)})")
        dataset = f[name]
        if dataset.attrs.get(INCOMPLETE):
            raise ValueError(
                f"{name!r} in {path!s} was not completely written (a dapx write failed)"
            )
        return from_array(
            dataset, dist=dist, grid=grid, halo=halo, backend=backend, progress=progress, **options
        )
