"""DistributedArray on 4 simulated ranks next to NumPy (and dask.array for overhead).

Run with::

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 python benchmarks/bench_array.py

Variants are interleaved over several rounds; medians and ratios are printed.
Targets (issue 3): large ops within 1.25x of NumPy; per-op overhead on 1,000
elements under 30 us; block -> cyclic of 10^8 within 3x of a NumPy fancy-index
copy; peak memory of ``a*b+c`` within 10% of NumPy's.
"""

from __future__ import annotations

import statistics
import time
import tracemalloc

import numpy as np

import dapx


def _interleaved(variants: dict, rounds: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in variants}
    for fn in variants.values():
        fn()
    for _ in range(rounds):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def _per_call(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def large_ops(backend, n=4 * 10**7, rounds=7):
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(n) for _ in range(3))
    a, b, c = (dapx.asarray(v, backend=backend) for v in (x, y, z))
    pairs = {
        "a*b+c": (lambda: x * y + z, lambda: a * b + c),
        "np.sum": (lambda: np.sum(x), lambda: np.sum(a)),
        "np.std": (lambda: np.std(x), lambda: np.std(a)),
        "a[::2] + 1": (lambda: x[::2] + 1, lambda: a[::2] + 1),
    }
    variants = {}
    for name, (numpy_fn, dapx_fn) in pairs.items():
        variants[f"numpy {name}"] = numpy_fn
        variants[f"dapx {name}"] = dapx_fn
    med = _interleaved(variants, rounds)
    print(f"\n4 simulated ranks, {n:.0e} float64 (median of {rounds})")
    print(f"{'operation':<14} {'numpy s':>9} {'dapx s':>9} {'ratio':>7}")
    for name in pairs:
        t_np, t_dx = med[f"numpy {name}"], med[f"dapx {name}"]
        print(f"{name:<14} {t_np:>9.4f} {t_dx:>9.4f} {t_dx / t_np:>7.2f}")


def overhead(backend, n=1000, calls=2000):
    import dask
    import dask.array as da

    x = np.random.default_rng(1).standard_normal(n)
    a = dapx.asarray(x, backend=backend)
    d = da.from_array(x, chunks=n // backend.nranks)
    rows = {
        "a + 1": (lambda: x + 1, lambda: a + 1, lambda: (d + 1).compute()),
        "np.sum(a)": (lambda: np.sum(x), lambda: np.sum(a), lambda: np.sum(d).compute()),
    }
    print(f"\nper-operation time on {n} elements ({backend.nranks} ranks / dask chunks)")
    print(f"{'operation':<10} {'numpy us':>9} {'dapx us':>9} {'dask us':>9}")
    with dask.config.set(scheduler="sync"):
        for name, (f_np, f_dx, f_dk) in rows.items():
            reps = [
                (_per_call(f_np, calls), _per_call(f_dx, calls), _per_call(f_dk, calls // 20))
                for _ in range(5)
            ]
            t = [statistics.median(r[i] for r in reps) * 1e6 for i in range(3)]
            print(f"{name:<10} {t[0]:>9.1f} {t[1]:>9.1f} {t[2]:>9.1f}")


def redistribution(backend, n=10**8, rounds=3):
    x = np.arange(n, dtype=np.float64)
    a = dapx.asarray(x, backend=backend)
    index = np.random.default_rng(2).permutation(n)
    variants = {
        "numpy fancy-index copy": lambda: x[index],
        "dapx block -> cyclic": lambda: a.redistribute("c"),
    }
    med = _interleaved(variants, rounds)
    ratio = med["dapx block -> cyclic"] / med["numpy fancy-index copy"]
    print(f"\nblock -> cyclic of {n:.0e} float64 on {backend.nranks} ranks")
    for name, t in med.items():
        print(f"{name:<24} {t:>8.3f} s")
    print(f"ratio {ratio:.2f}")


def peak_memory(backend, n=10**7):
    rng = np.random.default_rng(3)
    x, y, z = (rng.standard_normal(n) for _ in range(3))
    a, b, c = (dapx.asarray(v, backend=backend) for v in (x, y, z))

    def peak(fn):
        tracemalloc.start()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        result = fn()
        peak_bytes = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
        del result
        return peak_bytes

    p_np, p_dx = peak(lambda: x * y + z), peak(lambda: a * b + c)
    print(
        f"\npeak memory of a*b+c on {n:.0e} float64: numpy {p_np / 1e6:.1f} MB, "
        f"dapx {p_dx / 1e6:.1f} MB, ratio {p_dx / p_np:.3f}"
    )


def main():
    backend = dapx.simulated(4)
    dapx.config.gather_warning_threshold = 10**12
    peak_memory(backend)
    overhead(backend)
    large_ops(backend)
    redistribution(backend)


if __name__ == "__main__":
    main()
