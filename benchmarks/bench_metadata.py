"""Metadata speed: every rank's ``global_indices`` next to ``np.arange(10**8)``.

Run with::

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 python benchmarks/bench_metadata.py

Variants are interleaved over several rounds and the median is printed with
its ratio to ``np.arange`` of the same number of indices (target: <= 3x).
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from dapx import Distribution

N = 10**8
P = 1024


def _all_ranks(dist: Distribution):
    def run():
        for rank in range(dist.nranks):
            dist.global_indices(rank)

    return run


def main(rounds: int = 5) -> None:
    perm = np.random.default_rng(0).permutation(N)
    splits = np.array_split(perm, P)
    del perm
    variants = {
        "np.arange(10**8)": lambda: np.arange(N),
        "1-D block, 1024 ranks": _all_ranks(Distribution.create(N, "b", grid=(P,))),
        "1-D irregular block": _all_ranks(
            Distribution.create(
                N, {"dist": "b", "bounds": np.linspace(0, N, P + 1).astype(int)}, grid=(P,)
            )
        ),
        "1-D block, padded 2": _all_ranks(Distribution.create(N, "b", grid=(P,), padding=2)),
        "1-D cyclic": _all_ranks(Distribution.create(N, "c", grid=(P,))),
        "1-D block-cyclic 7": _all_ranks(Distribution.create(N, "c", grid=(P,), block_size=7)),
        "1-D unstructured": _all_ranks(
            Distribution.create(N, {"dist": "u", "indices": splits}, grid=(P,))
        ),
        "2-D 4096^2 on 32x32": _all_ranks(Distribution.create((4096, 4096), grid=(32, 32))),
        "2-D 4096^2 cyclic 32x32": _all_ranks(
            Distribution.create((4096, 4096), "c", grid=(32, 32))
        ),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    for name, fn in variants.items():  # warm up: page in and JIT-free caches
        fn()
    for _ in range(rounds):
        for name, fn in variants.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    base = statistics.median(times["np.arange(10**8)"])
    print(f"{'variant':<28} {'median s':>10} {'x arange':>9}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:<28} {med:>10.4f} {med / base:>9.2f}")


if __name__ == "__main__":
    main()
