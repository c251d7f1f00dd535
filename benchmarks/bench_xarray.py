"""xarray on a DistributedArray (4 simulated ranks) beside NumPy-backed and dask-backed xarray.

Run with::

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 python benchmarks/bench_xarray.py

A 4096 x 4096 float64 DataArray with dims ("x", "y"): ``da.mean("x")``,
``da - da.mean("y")`` and ``da.rolling(x=5).mean()`` on the NumPy-backed
DataArray, on the same DataArray distributed with ``.dap.distribute`` (dapx's
default grid, 4 row blocks, and a 2 x 2 grid), and on xarray over dask.array
with 4 chunks (computed with the threaded scheduler, as dask users run it).
Every dapx and dask result is compared with the NumPy-backed one
(``xr.testing.assert_allclose``) before timing. Variants are interleaved over
several rounds after a warm-up, the order reversed every other round;
medians and ratios to NumPy are printed. Target (issue 6): dapx within 1.3x
of NumPy-backed xarray. Two ``da.pad`` rows (``np.pad`` underneath: edges
read locally for reflect, fetched from the opposite edge ranks for wrap)
follow the three targets. A second table gives the peak memory one call
allocates (``tracemalloc``, which sees NumPy's buffers, the result
included; the 4 simulated ranks are in this one process, so this is their
sum; for dask, the threads' allocations while it computes).
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

import numpy as np
import xarray as xr

import dapx


def _interleaved(variants: dict, rounds: int) -> dict[str, float]:
    """Medians after a warm-up call of each, the order reversed every other round."""
    times: dict[str, list[float]] = {name: [] for name in variants}
    for fn in variants.values():
        fn()
    order = list(variants)
    for k in range(rounds):
        for name in order if k % 2 == 0 else order[::-1]:
            t0 = time.perf_counter()
            result = variants[name]()
            times[name].append(time.perf_counter() - t0)
            del result
    return {name: statistics.median(ts) for name, ts in times.items()}


def _peak_mb(fn) -> float:
    """Peak MB allocated (NumPy buffers included) while `fn` runs, its result included."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    result = fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    del result
    return peak / 1e6


OPERATIONS = {
    'da.mean("x")': lambda da: da.mean("x"),
    'da - da.mean("y")': lambda da: da - da.mean("y"),
    "da.rolling(x=5).mean()": lambda da: da.rolling(x=5).mean(),
    'da.pad(x=1, y=1, "reflect")': lambda da: da.pad(x=1, y=1, mode="reflect"),
    'da.pad(x=1, y=1, "wrap")': lambda da: da.pad(x=1, y=1, mode="wrap"),
}


def main(n: int = 4096, rounds: int = 7) -> None:
    import dask

    values = np.random.default_rng(0).standard_normal((n, n))
    da = xr.DataArray(
        values, dims=("x", "y"), coords={"x": np.arange(n), "y": np.linspace(0, 1, n)}
    )
    backend = dapx.simulated(4)
    objects = {
        "numpy": da,
        "dapx default": da.dap.distribute(backend=backend),  # 4 x 1: "y" is contiguous
        "dapx 2x2": da.dap.distribute(x=2, y=2, backend=backend),
        "dask 4 chunks": da.chunk({"x": n // 4}),
    }
    for name, obj in objects.items():  # every result is the same as NumPy's
        for op in OPERATIONS.values():
            if name.startswith("dapx"):
                xr.testing.assert_allclose(op(obj).dap.gather(), op(da))
            elif name.startswith("dask"):
                with dask.config.set(scheduler="threads"):
                    xr.testing.assert_allclose(op(obj).compute(), op(da))
    variants = {}
    for op_name, op in OPERATIONS.items():
        for name, obj in objects.items():
            if name.startswith("dask"):
                variants[(op_name, name)] = lambda op=op, obj=obj: op(obj).compute()
            else:
                variants[(op_name, name)] = lambda op=op, obj=obj: op(obj)
    with dask.config.set(scheduler="threads"):
        peaks = {key: _peak_mb(fn) for key, fn in variants.items()}
        med = _interleaved(variants, rounds)
    names = list(objects)
    print(
        f"{n} x {n} float64 DataArray, 4 simulated ranks / 4 dask chunks "
        f"(median of {rounds}, seconds; ratio to NumPy-backed xarray)"
    )
    print(f"{'operation':<28}" + "".join(f"{name:>22}" for name in names))
    for op_name in OPERATIONS:
        base = med[(op_name, "numpy")]
        cells = [
            f"{med[(op_name, name)]:>10.4f} ({med[(op_name, name)] / base:>5.2f}x)  "
            for name in names
        ]
        print(f"{op_name:<28}" + "".join(f"{c:>22}" for c in cells))
    print(f"\npeak MB allocated by one call (input: {values.nbytes / 1e6:.0f} MB)")
    print(f"{'operation':<28}" + "".join(f"{name:>22}" for name in names))
    for op_name in OPERATIONS:
        print(f"{op_name:<28}" + "".join(f"{peaks[(op_name, name)]:>22.1f}" for name in names))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    main(args.size, args.rounds)
