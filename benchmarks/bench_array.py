"""DistributedArray on 4 simulated ranks next to NumPy (and dask.array for overhead).

Run with::

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 python benchmarks/bench_array.py [--quick]

Every row does the same work on both sides, and every dapx (and dask) result
is compared with NumPy's (``assert``) before anything is timed:

* ``a*b+c``, ``np.sum``, ``np.std``, ``a[::2] + 1`` on 4e7 float64 against the
  same NumPy expression on one array;
* per-operation time of ``a + 1`` and ``np.sum(a)`` on 1,000 elements, next to
  NumPy and dask.array (synchronous scheduler, one chunk per rank);
* block -> cyclic of 1e8 float64: building every rank's cyclic block, which
  on rank r holds ``x[r::P]``. The NumPy program that builds those P blocks is
  the strided reorder ``x.reshape(-1, P).T.copy()`` (row r is rank r's block),
  so that is the reference (an earlier version compared with a
  random-permutation gather, far slower than the reorder).

Variants are interleaved over several rounds after a warm-up, the order
reversed every other round; medians and ratios are printed. Next to each
large row, the peak of the memory allocated while the operation runs (by
``tracemalloc``, which sees NumPy's data buffers; one process holds all 4
ranks, so this is the sum over ranks), for NumPy and dapx.
Targets (issue 3): large ops within 1.25x of NumPy; per-op overhead on 1,000
elements under 30 us; block -> cyclic within 3x of NumPy (set against the
random gather: the reorder is a stricter reference); peak memory of ``a*b+c``
within 10% of NumPy's.
"""

from __future__ import annotations

import argparse
import statistics
import time
import tracemalloc

import numpy as np

import dapx


def _interleaved(variants: dict, rounds: int) -> dict[str, float]:
    """Medians after one warm-up call of each; the order is reversed every other round."""
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


def _per_call(fn, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def _peak(fn) -> int:
    """Peak bytes allocated (NumPy buffers included) while `fn` runs, its result included."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    result = fn()
    peak_bytes = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    del result
    return peak_bytes


def large_ops(backend, n=4 * 10**7, rounds=7):
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(n) for _ in range(3))
    a, b, c = (dapx.asarray(v, backend=backend) for v in (x, y, z))
    np.testing.assert_array_equal((a * b + c).gather(), x * y + z)
    np.testing.assert_allclose(float(np.sum(a)), np.sum(x), rtol=1e-9)
    np.testing.assert_allclose(float(np.std(a)), np.std(x), rtol=1e-12)
    np.testing.assert_array_equal((a[::2] + 1).gather(), x[::2] + 1)
    pairs = {
        "a*b+c": (lambda: x * y + z, lambda: a * b + c),
        "np.sum": (lambda: np.sum(x), lambda: np.sum(a)),
        "np.std": (lambda: np.std(x), lambda: np.std(a)),
        "a[::2] + 1": (lambda: x[::2] + 1, lambda: a[::2] + 1),
    }
    peaks = {name: (_peak(f_np), _peak(f_dx)) for name, (f_np, f_dx) in pairs.items()}
    variants = {}
    for name, (numpy_fn, dapx_fn) in pairs.items():
        variants[f"numpy {name}"] = numpy_fn
        variants[f"dapx {name}"] = dapx_fn
    med = _interleaved(variants, rounds)
    print(f"\n4 simulated ranks, {n:.0e} float64 (median of {rounds}; peak MB allocated)")
    print(
        f"{'operation':<14} {'numpy s':>9} {'dapx s':>9} {'ratio':>7} "
        f"{'numpy MB':>9} {'dapx MB':>9} {'ratio':>7}"
    )
    for name in pairs:
        t_np, t_dx = med[f"numpy {name}"], med[f"dapx {name}"]
        m_np, m_dx = (v / 1e6 for v in peaks[name])
        m_ratio = f"{m_dx / m_np:>7.3f}" if m_np >= 1 else f"{'-':>7}"
        print(
            f"{name:<14} {t_np:>9.4f} {t_dx:>9.4f} {t_dx / t_np:>7.2f} "
            f"{m_np:>9.1f} {m_dx:>9.1f} {m_ratio}"
        )


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
    with dask.config.set(scheduler="sync"):
        for f_np, f_dx, f_dk in rows.values():
            want = f_np()
            got = f_dx()
            np.testing.assert_allclose(got if np.ndim(want) == 0 else got.gather(), want)
            np.testing.assert_allclose(f_dk(), want)
        print(f"\nper-operation time on {n} elements ({backend.nranks} ranks / dask chunks)")
        print(f"{'operation':<10} {'numpy us':>9} {'dapx us':>9} {'dask us':>9}")
        for name, (f_np, f_dx, f_dk) in rows.items():
            reps = [
                (_per_call(f_np, calls), _per_call(f_dx, calls), _per_call(f_dk, calls // 20))
                for _ in range(5)
            ]
            t = [statistics.median(r[i] for r in reps) * 1e6 for i in range(3)]
            print(f"{name:<10} {t[0]:>9.1f} {t[1]:>9.1f} {t[2]:>9.1f}")


def redistribution(backend, n=10**8, rounds=3):
    """Block -> cyclic: rank r's block becomes x[r::P], i.e. row r of x.reshape(-1, P).T."""
    p = backend.nranks
    assert n % p == 0, "the NumPy reorder needs n divisible by the number of ranks"
    x = np.arange(n, dtype=np.float64)
    a = dapx.asarray(x, backend=backend)
    result, reference = a.redistribute("c"), x.reshape(-1, p).T.copy()
    for r in backend.local_ranks:
        np.testing.assert_array_equal(result.local(r), reference[r])
    del result, reference
    variants = {
        "numpy x.reshape(-1, P).T.copy()": lambda: x.reshape(-1, p).T.copy(),
        "dapx block -> cyclic": lambda: a.redistribute("c"),
    }
    peaks = {name: _peak(fn) / 1e6 for name, fn in variants.items()}
    med = _interleaved(variants, rounds)
    t_np, t_dx = med.values()
    m_np, m_dx = peaks.values()
    print(f"\nblock -> cyclic of {n:.0e} float64 on {p} ranks (median of {rounds})")
    for name, t in med.items():
        print(f"{name:<32} {t:>8.3f} s   peak {peaks[name]:>8.1f} MB")
    print(f"ratio {t_dx / t_np:.2f} (memory {m_dx / m_np:.2f})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes / 10, fewer rounds")
    args = parser.parse_args()
    backend = dapx.simulated(4)
    dapx.config.gather_warning_threshold = 10**12
    if args.quick:
        overhead(backend, calls=500)
        large_ops(backend, n=4 * 10**6, rounds=3)
        redistribution(backend, n=10**7, rounds=3)
    else:
        overhead(backend)
        large_ops(backend)
        redistribution(backend)


if __name__ == "__main__":
    main()
