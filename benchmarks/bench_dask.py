"""dapx on the dask backend next to dask.array, on the same 2-worker LocalCluster.

Run with::

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 \\
        .venv/bin/python benchmarks/bench_dask.py [--quick]

Both run on one ``LocalCluster(n_workers=2, threads_per_worker=1)`` (worker
processes), with the same chunking: dapx's two ranks (one per worker) hold
the two row blocks that are dask.array's two chunks.

* ``a*b+c`` (kept on the workers: dapx's result stays in its ranks,
  dask's is ``persist()``-ed) and ``np.sum(a)`` on 4e7 float64. Target: no
  slower than dask.array.
* 2-D 5-point Jacobi, 4096 x 4096 float64, 50 iterations: dapx's
  ``map_overlap(..., trim=False)`` on a field with a halo of 1 (the halo is
  updated in place on the ranks, the blocks never leave their workers)
  against dask.array's ``map_overlap(..., boundary=0)`` persisted each
  iteration, with the same kernel (`dapx.cli.demo.jacobi_kernel`). Target: dapx
  at least 2x faster.

Variants are interleaved over rounds after a warm-up; medians are printed
with their ratio to dask.array, and results are compared with NumPy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import distributed
import numpy as np

import dapx
from dapx.cli.demo import jacobi_kernel


def _step(block: np.ndarray) -> np.ndarray:
    out = np.zeros_like(block)
    jacobi_kernel(block, out)
    return out


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _medians(variants: dict, rounds: int) -> dict[str, float]:
    for fn in variants.values():  # warm-up
        fn()
    times: dict[str, list[float]] = {k: [] for k in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            times[name].append(_timed(fn))
    return {k: statistics.median(v) for k, v in times.items()}


def elementwise_and_sum(backend, client, n: int, rounds: int) -> None:
    import dask.array as da

    rows = n // 1000
    shape, chunks = (rows, 1000), ((rows + 1) // 2, 1000)
    a = dapx.random.default_rng(0).random(shape, backend=backend)
    b = dapx.random.default_rng(1).random(shape, backend=backend)
    c = dapx.random.default_rng(2).random(shape, backend=backend)
    x = da.random.default_rng(0).random(shape, chunks=chunks).persist()
    y = da.random.default_rng(1).random(shape, chunks=chunks).persist()
    z = da.random.default_rng(2).random(shape, chunks=chunks).persist()
    kept = {}

    def dapx_expr():
        kept.pop("dapx", None)
        kept["dapx"] = a * b + c

    def dask_expr():
        kept.pop("dask", None)  # dask would return the result it holds under the same key
        kept["dask"] = (x * y + z).persist()
        distributed.wait(kept["dask"])

    med = _medians(
        {
            "dapx a*b+c": dapx_expr,
            "dask a*b+c": dask_expr,
            "dapx sum": lambda: float(np.sum(a)),
            "dask sum": lambda: float(x.sum().compute()),
        },
        rounds,
    )
    check = np.allclose(
        float(np.sum(kept["dapx"])), float((a.gather() * b.gather() + c.gather()).sum())
    )
    print(
        f"\n{n:.0e} float64, 2 ranks / 2 chunks on 2 workers, median of {rounds} "
        f"(results checked: {check})"
    )
    print(f"{'operation':<12} {'dask s':>9} {'dapx s':>9} {'dapx/dask':>10}  target")
    for op in ("a*b+c", "sum"):
        d, p = med[f"dask {op}"], med[f"dapx {op}"]
        print(f"{op:<12} {d:9.4f} {p:9.4f} {p / d:10.2f}  <= 1.00")


def jacobi(backend, client, n: int, iterations: int, rounds: int) -> None:
    import dask.array as da

    chunks = ((n + 1) // 2, n)
    state = {}

    def dapx_run():
        state.pop("dapx", None)
        u = dapx.zeros((n, n), halo=1, grid=(2, 1), backend=backend)
        for _ in range(iterations):
            u = dapx.map_overlap(_step, u, depth=1, boundary=0.0, trim=False)
        state["dapx"] = u

    def dask_run():
        state.pop("dask", None)  # else dask finds the last iteration's result in memory
        x = da.zeros((n, n), chunks=chunks).persist()
        for _ in range(iterations):
            x = x.map_overlap(_step, depth=1, boundary=0.0).persist()
        distributed.wait(x)
        state["dask"] = x

    med = _medians({"dapx": dapx_run, "dask": dask_run}, rounds)
    # Same kernel on the same data: compare on a small problem with a non-zero start.
    small = np.random.default_rng(0).random((40, 40))
    u = dapx.asarray(small, halo=1, grid=(2, 1), backend=backend)
    y = da.from_array(small, chunks=(20, 40))
    for _ in range(5):
        u = dapx.map_overlap(_step, u, depth=1, boundary=0.0, trim=False)
        y = y.map_overlap(_step, depth=1, boundary=0.0)
    same = bool(np.array_equal(u.interior.gather(), y.compute()))
    print(
        f"\nJacobi {n} x {n} float64, {iterations} iterations, median of {rounds} "
        f"(same result as dask: {same})"
    )
    print(f"  dask.array map_overlap     {med['dask']:8.3f} s")
    print(
        f"  dapx map_overlap           {med['dapx']:8.3f} s   "
        f"{med['dask'] / med['dapx']:.2f}x faster (target >= 2x)"
    )


def main() -> None:
    from distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds")
    args = parser.parse_args()
    n, size, iterations, rounds = (
        (4 * 10**7, 4096, 50, 5) if not args.quick else (4 * 10**5, 256, 5, 2)
    )
    import dask

    # The workers get this process's malloc settings (dask's nanny sets its own otherwise).
    environ = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
    environ.update(
        {
            k: os.environ[k]
            for k in ("MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_")
            if k in os.environ
        }
    )
    dask.config.set({"distributed.nanny.pre-spawn-environ": environ})
    with (
        LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        backend = dapx.dask_backend(client)
        print(f"dapx {dapx.__version__} on {backend!r}; dask.array on the same 2 workers")
        elementwise_and_sum(backend, client, n, rounds)
        jacobi(backend, client, size, iterations, max(1, rounds - 2))
        backend.close()


if __name__ == "__main__":
    main()
