"""Parallel zarr I/O: dapx (4 simulated ranks, mpiexec -n 2) next to zarr, xarray and dask.

Run everything in one go (it starts ``mpiexec -n 2`` and fresh processes itself)::

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 OMP_NUM_THREADS=1 \\
        python benchmarks/bench_io.py [--gb 2.0] [--rounds 3] [--compression both]

The script writes a float32 (time, lat, lon) array of about ``--gb`` GB
(720 x 1440 per time step, values rounded to 0.01 so that zstd has something
to compress) to a temporary directory, as zarr stores written the way xarray
writes them: one with zarr's default compressor (zstd), one uncompressed. The
chunks are what dapx's writer chooses for 4 ranks: the blocks along time, cut
into chunks of at most 64 MiB that divide them (every rank owns whole chunks).
Then, in interleaved rounds (medians printed, ratios the medians of
the per-round ratios), on the same store:

* reads: ``zarr.open_array(...)[...]``, ``xr.open_zarr(chunks=None)`` then
  ``.values`` (one process); ``xr.open_zarr(chunks={"time": T/2})`` then
  ``.load()`` on dask's threaded scheduler with 2 threads (the layout of 2
  ranks); ``dapx.from_zarr`` and ``xr.open_zarr(chunks=None).dap.distribute``
  on 4 simulated ranks and, in ``mpiexec -n 2``, on 2 MPI ranks. Warm: the
  store in the page cache; cold: the page cache dropped (needs root) before
  every read.
* writes, from data in memory: ``zarr.create_array`` then ``z[...] = x``,
  ``Dataset.to_zarr``, ``Dataset.chunk({"time": T/2}).to_zarr`` (dask, 2
  threads), ``DistributedArray.to_zarr`` and ``ds.dap.to_zarr`` (4 simulated
  ranks, 2 MPI ranks). A write is timed until it returns (the data is then in
  the page cache); ``sync`` runs after it, outside the time, and the store is
  removed before the next write.

Every result is checked against the generated data (reads: every value;
writes: the store read back, in the first round). The MPI runs are one
``mpiexec`` per measurement, warmed up (one untimed read or write of each
variant) before the timed one. Peak memory is ``VmHWM`` of a fresh
process per measurement (per rank under MPI), less its value before the read
or write (imports), relative to the bytes that process holds (its block).
Those processes run with glibc's default allocator settings (the MALLOC_
variables above are for timing only: with them every thread's arena keeps
the chunk buffers it freed, and the peak measures that retention).

Targets (the parallel I/O issue): simulated read and write within 1.1x of
one process reading / writing with zarr (the array API) or xarray (the
Dataset API); mpiexec -n 2 at least 1.5x faster than one zarr process for
reads of the compressed store and faster than xarray on dask; peak memory per
rank within 1.25x of its block.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import dask
import dask.array
import numpy as np
import xarray as xr
import zarr

import dapx
from dapx.interop.io.writing import CHUNK_BYTES

LAT, LON = 720, 1440
DIMS = ("time", "lat", "lon")
NAME = "v"
INCOMPLETE = "dapx_write_incomplete"
# zarr warns at every consolidated write (xarray's default) that zarr v3's spec lacks it.
warnings.filterwarnings("ignore", "Consolidated metadata", UserWarning)
CHILD_ENV = {
    "MALLOC_MMAP_MAX_": "0",
    "MALLOC_TRIM_THRESHOLD_": "68719476736",
    "OMP_NUM_THREADS": "1",
}
READERS = ["zarr", "xarray", "dask", "dapx sim", "dapx sim xarray"]
WRITERS = READERS
MPI_VARIANTS = ["dapx mpi", "dapx mpi xarray"]
LABELS = {
    "zarr": "zarr, one process",
    "xarray": "xarray, one process",
    "dask": "xarray on dask, 2 threads",
    "dapx sim": "dapx 4 sim, from/to_zarr",
    "dapx sim xarray": "dapx 4 sim, ds.dap",
    "dapx mpi": "dapx mpiexec -n 2, from/to_zarr",
    "dapx mpi xarray": "dapx mpiexec -n 2, ds.dap",
}
#: What each dapx variant is compared with (same API, one process).
REFERENCE = {
    "dapx sim": "zarr",
    "dapx sim xarray": "xarray",
    "dapx mpi": "zarr",
    "dapx mpi xarray": "xarray",
}


# -- the data -------------------------------------------------------------------------------------


def shape_for(gb: float) -> tuple[int, int, int]:
    """(time, lat, lon) of about `gb` GB of float32, time a multiple of 4."""
    steps = max(round(gb * 1e9 / (LAT * LON * 4) / 4), 1) * 4
    return steps, LAT, LON


def _base() -> np.ndarray:
    lat = np.linspace(-np.pi / 2, np.pi / 2, LAT)
    lon = np.linspace(0, 2 * np.pi, LON, endpoint=False)
    return (250 + 30 * np.cos(lat)[:, None] + 5 * np.sin(2 * lon)[None, :]).astype(np.float32)


def fill_steps(out: np.ndarray, t0: int) -> np.ndarray:
    """The time steps ``t0 .. t0 + len(out)`` into `out`, one step at a time (float32 only)."""
    base = _base()
    for k in range(out.shape[0]):
        step = out[k]
        np.random.default_rng(t0 + k).standard_normal(dtype=np.float32, out=step)
        step *= np.float32(0.5)
        step += base
        step += np.float32(0.01 * (t0 + k))
        np.round(step, 2, out=step)
    return out


def steps(t0: int, t1: int) -> np.ndarray:
    return fill_steps(np.empty((t1 - t0, LAT, LON), np.float32), t0)


def chunks_of(shape) -> tuple[int, int, int]:
    """dapx's default chunks of 4 ranks' blocks along time (at most CHUNK_BYTES each)."""
    rows = shape[0] // 4
    while rows * LAT * LON * 4 > CHUNK_BYTES and rows > 1:
        rows //= next((p for p in range(2, math.isqrt(rows) + 1) if rows % p == 0), rows)
    return (rows, LAT, LON)


def zarr_kwargs(compressed: bool) -> dict:
    return {} if compressed else {"compressors": None}


def encoding(shape, compressed: bool) -> dict:
    return {NAME: {"chunks": chunks_of(shape), **zarr_kwargs(compressed)}}


def create_store(path: Path, shape, compressed: bool) -> None:
    """A store as xarray writes it (metadata by xarray), its chunks then written by zarr."""
    chunks = chunks_of(shape)
    empty = dask.array.empty(shape, dtype=np.float32, chunks=chunks)
    template = xr.Dataset({NAME: (DIMS, empty)})
    template.to_zarr(path, mode="w", compute=False, encoding=encoding(shape, compressed))
    z = zarr.open_array(path, path=NAME, mode="r+")
    buf = np.empty(chunks, np.float32)
    for t0 in range(0, shape[0], chunks[0]):
        z[t0 : t0 + chunks[0]] = fill_steps(buf, t0)


def disk_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


# -- the page cache --------------------------------------------------------------------------------


def drop_caches() -> bool:
    """Sync, then drop the page cache (root only); whether it could."""
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
    except OSError:
        return False
    return True


def warm_cache(path: Path) -> None:
    """Read every file of the store, so that it is in the page cache."""
    for f in sorted(path.rglob("*")):
        if f.is_file():
            with open(f, "rb", buffering=0) as fh:
                while fh.read(1 << 24):
                    pass


# -- the variants ----------------------------------------------------------------------------------


def layout_grid(backend) -> tuple[int, int, int]:
    return (backend.nranks, 1, 1)


def read(variant: str, store: Path, shape, backend=None):
    if variant == "zarr":
        return zarr.open_array(store, path=NAME, mode="r")[...]
    if variant == "xarray":
        return xr.open_zarr(store, chunks=None)[NAME].values
    if variant == "dask":
        with dask.config.set(scheduler="threads", num_workers=2):
            ds = xr.open_zarr(store, chunks={"time": shape[0] // 2})
            return ds[NAME].load().values
    if variant in ("dapx sim", "dapx mpi"):
        return dapx.from_zarr(store, NAME, grid=layout_grid(backend), backend=backend)
    if variant in ("dapx sim xarray", "dapx mpi xarray"):
        ds = xr.open_zarr(store, chunks=None)
        return ds.dap.distribute(time=backend.nranks, backend=backend)[NAME].data
    raise ValueError(variant)


def write(variant: str, path: Path, data, shape, compressed: bool) -> None:
    """Write `data` (NumPy for one process, a DistributedArray for dapx) to a new store."""
    enc = encoding(shape, compressed)
    if variant == "zarr":
        z = zarr.create_array(
            path,
            name=NAME,
            shape=data.shape,
            dtype=data.dtype,
            chunks=chunks_of(shape),
            **zarr_kwargs(compressed),
        )
        z[...] = data
    elif variant == "xarray":
        xr.Dataset({NAME: (DIMS, data)}).to_zarr(path, mode="w", encoding=enc)
    elif variant == "dask":
        ds = xr.Dataset({NAME: (DIMS, data)}).chunk({"time": shape[0] // 2})
        with dask.config.set(scheduler="threads", num_workers=2):
            ds.to_zarr(path, mode="w", encoding=enc)
    elif variant in ("dapx sim", "dapx mpi"):
        data.to_zarr(path, NAME, chunks=chunks_of(shape), **zarr_kwargs(compressed))
    elif variant in ("dapx sim xarray", "dapx mpi xarray"):
        xr.Dataset({NAME: (DIMS, data)}).dap.to_zarr(path, mode="w", encoding=enc)
    else:
        raise ValueError(variant)


def distributed_data(shape, backend):
    """The data as a DistributedArray laid out in time blocks, each rank generating its own."""
    a = dapx.empty(shape, np.float32, grid=layout_grid(backend), backend=backend)
    for r in backend.local_ranks:
        fill_steps(a.local(r), int(a.distribution.global_indices(r)[0][0]))
    return a


def own_slab(a, rank: int) -> slice:
    t = np.asarray(a.distribution.global_indices(rank)[0])
    assert np.array_equal(t, np.arange(t[0], t[-1] + 1)), "not a time block"
    return slice(int(t[0]), int(t[-1]) + 1)


def same_as(result, expected, slab_expected=None) -> bool:
    """Whether `result` (NumPy, or a DistributedArray's local blocks) holds the expected values.

    `expected` is the whole array; under MPI pass ``slab_expected(slab)`` instead.
    """
    if isinstance(result, np.ndarray):
        return result.dtype == np.float32 and np.array_equal(result, expected)
    a = result
    if tuple(a.distribution.grid_shape) != layout_grid(a.backend):
        return False
    for r in a.backend.local_ranks:
        slab = own_slab(a, r)
        want = expected[slab] if slab_expected is None else slab_expected(slab)
        if a.local(r).dtype != np.float32 or not np.array_equal(a.local(r), want):
            return False
    return True


def check_store(path: Path, expected: np.ndarray, shape, compressed: bool) -> bool:
    """Whether a written store is complete, chunked and compressed as asked, and right."""
    z = zarr.open_array(path, path=NAME, mode="r")
    group = zarr.open_group(path, mode="r")
    return (
        INCOMPLETE not in z.attrs
        and INCOMPLETE not in group.attrs
        and z.chunks == chunks_of(shape)
        and len(z.compressors) == (1 if compressed else 0)
        and np.array_equal(z[...], expected)
    )


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


# -- under mpiexec -n 2 ----------------------------------------------------------------------------


def mpi_part(spec: dict) -> None:
    """One measurement of both dapx variants on MPI, after an untimed warm-up of each."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    backend = dapx.mpi()
    shape, compressed = tuple(spec["shape"]), spec["compressed"]
    rank0 = comm.Get_rank() == 0
    times, same = {}, True

    def timed(fn):
        comm.Barrier()
        t0 = time.perf_counter()
        out = fn()
        comm.Barrier()
        return comm.allreduce(time.perf_counter() - t0, op=MPI.MAX), out

    if spec["op"] == "read":
        store = Path(spec["store"])
        expected: dict = {}

        def slab_expected(slab):  # this rank's block, generated once
            key = (slab.start, slab.stop)
            if key not in expected:
                expected[key] = steps(slab.start, slab.stop)
            return expected[key]

        for v in MPI_VARIANTS:  # warm-up
            same &= same_as(read(v, store, shape, backend), None, slab_expected)
        for v in MPI_VARIANTS:
            if rank0:
                if spec["cold"]:
                    drop_caches()
                else:
                    warm_cache(store)
            times[v], out = timed(lambda v=v: read(v, store, shape, backend))
            same &= same_as(out, None, slab_expected)
            del out
    else:
        out_dir = Path(spec["out"])
        a = distributed_data(shape, backend)
        data = {"dapx mpi": a, "dapx mpi xarray": a}
        for v in MPI_VARIANTS:  # warm-up
            path = out_dir / f"warm-{v.replace(' ', '-')}.zarr"
            write(v, path, data[v], shape, compressed)
            comm.Barrier()
            if rank0:
                os.sync()
                remove(path)
        for v in MPI_VARIANTS:
            path = out_dir / f"{v.replace(' ', '-')}.zarr"
            comm.Barrier()
            times[v], _ = timed(lambda v=v, path=path: write(v, path, data[v], shape, compressed))
            if rank0:
                os.sync()
            comm.Barrier()
            if spec["check"]:  # every rank reads its own block back
                back = dapx.from_zarr(path, NAME, grid=layout_grid(backend), backend=backend)
                z = zarr.open_array(path, path=NAME, mode="r")
                ok = INCOMPLETE not in z.attrs and z.chunks == chunks_of(shape)
                ok &= len(z.compressors) == (1 if compressed else 0)
                for r in backend.local_ranks:
                    ok &= np.array_equal(back.local(r), a.local(r))
                same &= bool(ok)
                del back
            comm.Barrier()
            if rank0:
                remove(path)
    same = comm.allreduce(bool(same), op=MPI.LAND)
    if rank0:
        print(json.dumps({**times, "same": same}))


def _mpiexec() -> list[str]:
    mpiexec = Path(sys.executable).parent / "mpiexec"
    return [str(mpiexec if mpiexec.exists() else "mpiexec"), "-n", "2"]


def _child_env(allocator: str = "timing") -> dict:
    env = {k: v for k, v in os.environ.items() if k != "DAPX_BACKEND"}
    if allocator == "default":
        # glibc's own settings: with MALLOC_MMAP_MAX_=0 every freed chunk buffer stays in its
        # thread's arena, so peaks would measure the allocator's retention, not what is live.
        env = {k: v for k, v in env.items() if not k.startswith("MALLOC_")}
        return {**env, "OMP_NUM_THREADS": CHILD_ENV["OMP_NUM_THREADS"]}
    return {**env, **CHILD_ENV}


def run_child(flag: str, spec: dict, mpi: bool, allocator: str = "timing") -> dict:
    cmd = [*(_mpiexec() if mpi else []), sys.executable, __file__, flag, json.dumps(spec)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_child_env(allocator))
    if proc.returncode:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise RuntimeError(f"{' '.join(cmd[:4])} ... {flag} {spec} failed")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# -- peak memory, in a fresh process per measurement ---------------------------------------------


def maxrss() -> int:
    """This process's peak resident set size, in bytes.

    ``ru_maxrss`` (`resource.getrusage`) where it is this process's own: on
    Linux, exec records the high-water mark of the address space it replaces,
    so a process that a big one (this script's main process) starts carries
    the parent's peak in ``ru_maxrss``. ``VmHWM`` of ``/proc/self/status`` is
    the same high-water mark of this address space only, and is used where
    available; the two agree in processes started by ``mpiexec``.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


def memory_part(spec: dict) -> None:
    """Peak RSS of one read or write in this (fresh) process, and the bytes it holds."""
    variant, shape, compressed = spec["variant"], tuple(spec["shape"]), spec["compressed"]
    mpi = variant.startswith("dapx mpi")
    backend = dapx.mpi() if mpi else dapx.simulated(4) if variant.startswith("dapx") else None
    start = maxrss()
    if spec["op"] == "read":
        out = read(variant, Path(spec["store"]), shape, backend)
    else:
        data = distributed_data(shape, backend) if backend else steps(0, shape[0])
        write(variant, Path(spec["out"]), data, shape, compressed)
    peak = maxrss()
    if spec["op"] == "read":
        data = out
    if isinstance(data, np.ndarray):
        held = data.nbytes
    else:
        held = sum(data.local(r).nbytes for r in backend.local_ranks)
    rusage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    mine = {"start": start, "peak": peak, "held": held, "ru_maxrss": rusage}
    if mpi:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        every = comm.gather(mine, root=0)
        comm.Barrier()
        if comm.Get_rank() != 0:
            return
    else:
        every = [mine]
    if spec["op"] == "write":
        remove(Path(spec["out"]))
    worst = max(every, key=lambda m: (m["peak"] - m["start"]) / m["held"])
    print(json.dumps(worst))


# -- the main process: the single-process and simulated variants, the report -----------------------


def median_ratio(times: dict, a: str, b: str) -> float:
    return statistics.median(x / y for x, y in zip(times[a], times[b]))


def run(args) -> int:
    shape = shape_for(args.gb)
    nbytes = int(np.prod(shape)) * 4
    root = Path(args.dir)
    free = shutil.disk_usage(root).free
    need = 3.5 * nbytes
    print(f"{root}: {free / 1e9:.1f} GB free, {need / 1e9:.1f} GB needed at most")
    if free < need:
        print(f"not enough free disk space for --gb {args.gb}: try a smaller --gb")
        return 1
    if not os.environ.get("MALLOC_MMAP_MAX_"):
        print("note: run with MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 (see above)")
    work = Path(tempfile.mkdtemp(prefix="bench_io_", dir=root))
    try:
        return _run(args, shape, nbytes, work)
    finally:
        remove(work)


def _run(args, shape, nbytes, work: Path) -> int:
    rounds = args.rounds
    compressions = {"both": [True, False], "zstd": [True], "none": [False]}[args.compression]
    cold = drop_caches()
    if not cold:
        print("the page cache cannot be dropped (needs root): warm reads only")
    t0 = time.perf_counter()
    expected = steps(0, shape[0])
    stores = {}
    for compressed in compressions:
        stores[compressed] = work / ("zstd.zarr" if compressed else "raw.zarr")
        create_store(stores[compressed], shape, compressed)
    os.sync()
    print(
        f"float32 {shape[0]} x {shape[1]} x {shape[2]} ({nbytes / 1e9:.2f} GB), chunks "
        f"{chunks_of(shape)}; stores written in {time.perf_counter() - t0:.0f} s"
    )
    sim = dapx.simulated(4)
    sim_data = distributed_data(shape, sim)
    assert same_as(sim_data, expected)
    data = {"zarr": expected, "xarray": expected, "dask": expected}
    data.update({"dapx sim": sim_data, "dapx sim xarray": sim_data})
    # times[(compressed, op)][variant] = per-round seconds; op in read-warm, read-cold, write
    ops = ["read-warm", *(["read-cold"] if cold else []), "write"]
    times = {(c, op): {v: [] for v in READERS + MPI_VARIANTS} for c in compressions for op in ops}
    same = dict.fromkeys(times, True)

    # Warm-up (imports, zarr's thread pool, the allocator) of every single-process variant.
    for compressed, store in stores.items():
        for v in READERS:
            out = read(v, store, shape, sim)
            assert same_as(out, expected), f"read {v}"
            del out
    for v in WRITERS:
        path = work / "warm-up.zarr"
        write(v, path, data[v], shape, compressions[0])
        os.sync()
        remove(path)

    for rnd in range(rounds):
        t_round = time.perf_counter()
        for compressed, store in stores.items():
            for op in ops:
                key = (compressed, op)
                if op.startswith("read"):
                    for v in READERS:
                        if op == "read-cold":
                            drop_caches()
                        else:
                            warm_cache(store)
                        t = time.perf_counter()
                        out = read(v, store, shape, sim)
                        times[key][v].append(time.perf_counter() - t)
                        same[key] &= same_as(out, expected)
                        del out
                    spec = {
                        "op": "read",
                        "store": str(store),
                        "shape": shape,
                        "compressed": compressed,
                        "cold": op == "read-cold",
                    }
                else:
                    for v in WRITERS:
                        path = work / "out.zarr"
                        os.sync()
                        t = time.perf_counter()
                        write(v, path, data[v], shape, compressed)
                        times[key][v].append(time.perf_counter() - t)
                        os.sync()
                        if rnd == 0:
                            same[key] &= check_store(path, expected, shape, compressed)
                        remove(path)
                    spec = {
                        "op": "write",
                        "out": str(work),
                        "shape": shape,
                        "compressed": compressed,
                        "check": rnd == 0,
                    }
                if not args.no_mpi:
                    res = run_child("--mpi-rank", spec, mpi=True)
                    for v in MPI_VARIANTS:
                        times[key][v].append(res[v])
                    same[key] &= res["same"]
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(
            f"round {rnd + 1} of {rounds}: {time.perf_counter() - t_round:.0f} s "
            f"(load average {load} on {os.cpu_count()} CPUs)",
            flush=True,
        )
    assert all(same.values()), f"wrong results: {[k for k, ok in same.items() if not ok]}"
    variants = READERS + ([] if args.no_mpi else MPI_VARIANTS)
    sizes = {c: disk_bytes(s) for c, s in stores.items()}

    # Peak memory, one fresh process (or mpiexec) per measurement.
    memory = {}
    if not args.no_memory:
        for compressed in compressions if args.memory_all else compressions[:1]:
            for op in ("read", "write"):
                for v in variants:
                    spec = {
                        "op": op,
                        "variant": v,
                        "store": str(stores[compressed]),
                        "out": str(work / "mem.zarr"),
                        "shape": shape,
                        "compressed": compressed,
                    }
                    memory[(compressed, op, v)] = run_child(
                        "--memory", spec, mpi=v.startswith("dapx mpi"), allocator="default"
                    )

    report(args, shape, nbytes, compressions, ops, variants, times, sizes, memory, same)
    return 0


def report(args, shape, nbytes, compressions, ops, variants, times, sizes, memory, same) -> None:
    gb = nbytes / 1e9
    print(
        f"\nzarr I/O of float32 {' x '.join(map(str, shape))} ({gb:.2f} GB), "
        f"chunks {chunks_of(shape)}, median of {args.rounds} rounds; all results checked: "
        f"{all(same.values())}"
    )
    print("seconds, GB/s, and for dapx the time ratio to one process with the same API")
    print("(zarr for from/to_zarr, xarray for ds.dap; < 1 is faster)")
    for compressed in compressions:
        name = "zstd (zarr's default)" if compressed else "uncompressed"
        ratio = nbytes / sizes[compressed]
        print(f"\n{name} store: {sizes[compressed] / 1e9:.2f} GB on disk ({ratio:.2f}x)")
        print(f"{'':<32}" + "".join(f"{op:^22}" for op in ops))
        print(f"{'':<32}" + f"{'s':>9}{'GB/s':>6}{'ratio':>7}" * len(ops))
        for v in variants:
            cells = []
            for op in ops:
                ts = times[(compressed, op)]
                t = statistics.median(ts[v])
                ref = REFERENCE.get(v)
                r = f"{median_ratio(ts, v, ref):5.2f}x" if ref else ""
                cells.append(f"{t:9.2f}{gb / t:6.2f}{r:>7}")
            print(f"{LABELS[v]:<32}" + "".join(cells))
    if "dapx mpi" in variants:
        print("\nmpiexec -n 2 speed-up (median of per-round ratios; > 1 is faster):")
        for compressed in compressions:
            name = "zstd" if compressed else "uncompressed"
            for op in ops:
                ts = times[(compressed, op)]
                single = "zarr"
                vs_one = median_ratio(ts, single, "dapx mpi")
                vs_dask = median_ratio(ts, "dask", "dapx mpi")
                vs_dask_xr = median_ratio(ts, "dask", "dapx mpi xarray")
                print(
                    f"  {name:<13}{op:<11} from/to_zarr vs one zarr process {vs_one:5.2f}x, "
                    f"vs dask {vs_dask:5.2f}x; ds.dap vs dask {vs_dask_xr:5.2f}x"
                )
    if memory:
        print(
            "\npeak memory of a fresh process (per rank under MPI: the larger of the two): "
            "MB held, peak RSS (VmHWM), ru_maxrss, (peak - RSS before the I/O) / held"
        )
        for (compressed, op, v), m in memory.items():
            name = "zstd" if compressed else "uncompressed"
            grow = (m["peak"] - m["start"]) / m["held"]
            print(
                f"  {name:<13}{op:<6}{LABELS[v]:<32}{m['held'] / 1e6:8.0f} "
                f"{m['peak'] / 1e6:8.0f} {m['ru_maxrss'] / 1e6:8.0f} {grow:6.2f}x"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gb", type=float, default=2.0, help="array size in GB (1e9 bytes)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--compression", choices=["both", "zstd", "none"], default="both")
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where the stores go")
    parser.add_argument("--no-mpi", action="store_true", help="skip the mpiexec -n 2 runs")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory runs")
    parser.add_argument(
        "--memory-all", action="store_true", help="peak memory on every store, not the first"
    )
    # Set on the processes this script starts, not by hand.
    parser.add_argument("--mpi-rank", metavar="SPEC", help=argparse.SUPPRESS)
    parser.add_argument("--memory", metavar="SPEC", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mpi_rank:
        mpi_part(json.loads(args.mpi_rank))
        return 0
    if args.memory:
        memory_part(json.loads(args.memory))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
