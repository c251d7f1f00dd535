"""Scaling report: per-rank cost as the rank count grows, MPI weak and strong scaling, predictions.

Run (about three minutes on a 2-core machine)::

    MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=68719476736 OMP_NUM_THREADS=1 \\
        .venv/bin/python benchmarks/bench_scaling.py [--max-ranks 4096] [--markdown]

Three parts, each printed as a table (``--markdown`` prints them as Markdown, as in the README):

1. **Per-rank cost on the simulated backend** as P goes 4 -> 16 -> ... -> 4,096, with 1,000 float64
   per rank (weak scaling inside one process): ``a*b+c``, ``np.sum(a)``, a steady-state
   ``update_halos`` of a 2-D array, one Jacobi step (``dapx.map_overlap`` with dask's signature,
   zero boundary) and a 2-D transpose (redistribution from a ``p x q`` grid to ``q x p``). The
   total time divided by P is what one rank costs; a flat row means no per-rank cost grows with
   P. Plans are warm (built by the checked first call).
2. **Weak and strong scaling under mpiexec -n 1 and -n 2** on this machine (the script launches
   itself): weak keeps 4*10^6 float64 per process, strong keeps 8*10^6 in all. Times are the
   slowest rank's, medians of interleaved rounds; efficiency is t(1)/t(2) for weak scaling and
   t(1)/(2 t(2)) for strong. Both processes share one memory bus here, so bandwidth-bound work
   cannot scale perfectly on this machine. The per-call cost on 1,000 elements is measured too.
3. **Predictions** for 10^6 float64 per rank at 64, 1,024 and 16,384 ranks, from the per-element
   costs measured under mpiexec (part 2), dapx's per-call cost (part 2, small arrays), and a
   stated network model (printed with the table). They are estimates, not measurements.

Every result is checked against NumPy in the same run (assertions, on every rank under MPI).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import dapx

PER_RANK = 1000
WEAK_PER_PROCESS = 4_000_000
STRONG_TOTAL = 8_000_000
PREDICT_PER_RANK = 1_000_000
PREDICT_RANKS = (64, 1024, 16384)

# The network model of part 3: one rank per node on a 100 Gb/s fabric with full bisection.
LATENCY = 2e-6  # seconds per message (MPI point to point, one switch hop)
BANDWIDTH = 12.5e9  # bytes per second per rank (100 Gb/s line rate)

OPS = ("a*b+c", "np.sum", "update_halos", "Jacobi step", "transpose")


def jacobi(p: np.ndarray) -> np.ndarray:
    """One Jacobi step of a padded block (dask's map_overlap convention: same shape out)."""
    q = np.empty_like(p)
    q[1:-1, 1:-1] = p[:-2, 1:-1] + p[2:, 1:-1]
    q[1:-1, 1:-1] += p[1:-1, :-2]
    q[1:-1, 1:-1] += p[1:-1, 2:]
    q[1:-1, 1:-1] *= 0.25
    return q


def jacobi_numpy(x: np.ndarray) -> np.ndarray:
    """The same step on the whole zero-padded array, in the same order of operations."""
    return jacobi(np.pad(x, 1))[1:-1, 1:-1]


def square_shape(elements: int) -> tuple[int, int]:
    n = max(math.isqrt(elements), 1)
    return n, max(elements // n, 1)


def transposable_grid(nranks: int) -> tuple[int, int]:
    """A 2-D grid of `nranks` whose transpose differs (``p x q`` with p < q when possible)."""
    p = math.isqrt(nranks)
    while p > 1 and nranks % p:
        p -= 1
    return (p, nranks // p) if p * p != nranks else (max(p // 2, 1), nranks // max(p // 2, 1))


def workloads(backend, n_flat: int, shape2d: tuple[int, int], grid2d: tuple[int, int]):
    """The five operations on `backend`, each a (run, check) pair; check asserts against NumPy."""
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(n_flat) for _ in range(3))
    a, b, c = (dapx.asarray(v, backend=backend) for v in (x, y, z))
    field = rng.standard_normal(shape2d)
    h = dapx.asarray(field, backend=backend, halo=1)
    u = dapx.asarray(field, backend=backend, grid=grid2d)
    t = dapx.asarray(field, backend=backend, grid=grid2d)
    out = {}

    def check_blocks(result, expected, halo=False):
        for r in backend.local_ranks:
            idx = [np.asarray(g) for g in result.distribution.global_indices(r)]
            block = result.local_with_halo(r) if halo else result.local(r)
            if halo:
                idx = [i + 1 for i in idx]
            np.testing.assert_array_equal(block, expected[np.ix_(*idx)])

    def elementwise():
        out["e"] = a * b + c

    def total():
        out["s"] = np.sum(a)

    def halos():
        h.update_halos(boundary="nearest")

    def step():
        out["j"] = dapx.map_overlap(jacobi, u, depth=1, boundary=0.0)

    def transpose():
        out["t"] = t.redistribute(grid=grid2d[::-1])

    checks = {
        "a*b+c": lambda: check_blocks(out["e"], x * y + z),
        "np.sum": lambda: np.testing.assert_allclose(float(out["s"]), np.sum(x), rtol=1e-12),
        "update_halos": lambda: check_blocks(h, np.pad(field, 1, mode="edge"), halo=True),
        "Jacobi step": lambda: check_blocks(out["j"], jacobi_numpy(field)),
        "transpose": lambda: check_blocks(out["t"], field),
    }
    runs = dict(zip(OPS, (elementwise, total, halos, step, transpose)))
    return {name: (runs[name], checks[name]) for name in OPS}


def interleaved(pairs: dict, rounds: int, barrier=lambda: None, slowest=lambda t: t) -> dict:
    """Median seconds per call of each op: first call checked, then rounds interleaved."""
    for run, check in pairs.values():
        run()
        check()
    times = {name: [] for name in pairs}
    for _ in range(rounds):
        for name, (run, _) in pairs.items():
            barrier()
            start = time.perf_counter()
            run()
            times[name].append(slowest(time.perf_counter() - start))
    return {name: statistics.median(ts) for name, ts in times.items()}


# -- part 1: the simulated backend ----------------------------------------------------------------


def simulated_part(max_ranks: int, rounds: int) -> dict[int, dict[str, float]]:
    """Per-rank microseconds of each op on ``dapx.simulated(P)``."""
    table = {}
    nranks = 4
    while nranks <= max_ranks:
        backend = dapx.simulated(nranks)
        n = PER_RANK * nranks
        pairs = workloads(backend, n, square_shape(n), transposable_grid(nranks))
        medians = interleaved(pairs, rounds)
        table[nranks] = {op: 1e6 * s / nranks for op, s in medians.items()}
        nranks *= 4
    return table


# -- part 2: under mpiexec ------------------------------------------------------------------------


def mpi_child(rounds: int) -> None:
    """Runs under mpiexec: times weak, strong and small sizes; rank 0 prints one JSON line."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    nprocs = comm.Get_size()
    backend = dapx.mpi()

    def barrier():
        comm.Barrier()

    def slowest(seconds):
        return comm.allreduce(seconds, op=MPI.MAX)

    def measure(n_flat: int, elements_2d: int, reps: int) -> dict[str, float]:
        pairs = workloads(backend, n_flat, square_shape(elements_2d), transposable_grid(nprocs))
        if reps == 1:
            return interleaved(pairs, rounds, barrier, slowest)
        # Small arrays: time `reps` calls in a row, so a call's microseconds are resolved.
        batched = {
            name: (lambda run=run: [run() for _ in range(reps)], check)
            for name, (run, check) in pairs.items()
        }
        return {k: v / reps for k, v in interleaved(batched, rounds, barrier, slowest).items()}

    results = {
        "weak": measure(WEAK_PER_PROCESS * nprocs, WEAK_PER_PROCESS * nprocs, 1),
        "strong": measure(STRONG_TOTAL, STRONG_TOTAL, 1),
        "small": measure(PER_RANK * nprocs, PER_RANK * nprocs, 50),
    }
    if comm.Get_rank() == 0:
        print("RESULT " + json.dumps(results), flush=True)


def mpi_part(rounds: int, timeout: float) -> dict[int, dict]:
    mpiexec = Path(sys.executable).with_name("mpiexec")
    out = {}
    for nprocs in (1, 2):
        env = dict(os.environ, DAPX_BACKEND="mpi")
        cmd = [
            str(mpiexec),
            "-n",
            str(nprocs),
            sys.executable,
            __file__,
            "--child",
            "--rounds",
            str(rounds),
        ]
        done = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"mpiexec -n {nprocs} failed:\n{done.stderr[-3000:]}")
        line = next(s for s in done.stdout.splitlines() if s.startswith("RESULT "))
        out[nprocs] = json.loads(line[len("RESULT ") :])
    return out


# -- part 3: predictions --------------------------------------------------------------------------


def network_terms(op: str, nranks: int, n: int) -> tuple[float, str]:
    """Seconds one rank spends on the network for `op` at `nranks` ranks, and the assumption."""
    m = math.isqrt(n)  # the side of a square block of n elements
    if op == "a*b+c":
        return 0.0, "no communication"
    if op == "np.sum":
        steps = math.ceil(math.log2(nranks))
        return steps * LATENCY + 8 * (nranks - 1) / BANDWIDTH, (
            "allgather of P partials (recursive doubling), combined in rank order on every rank"
        )
    if op in ("update_halos", "Jacobi step"):
        return 4 * (LATENCY + 8 * m / BANDWIDTH), f"4 faces of {m} float64, one after another"
    return (nranks - 1) * LATENCY + 8 * n * (nranks - 1) / nranks / BANDWIDTH, (
        "pairwise all-to-all with every other rank, no contention"
    )


def predictions(mpi: dict[int, dict]) -> list[tuple[str, list[float], str]]:
    """Predicted seconds per op at PREDICT_RANKS, with the assumptions behind each."""
    rows = []
    n = PREDICT_PER_RANK
    for op in OPS:
        # Local work per element, from two processes sharing this machine's memory bus (the
        # transpose's pack, shared-memory copy and unpack included); dapx's per-call cost from
        # the small arrays (1,000 elements) under mpiexec -n 2 (it includes on-node messages).
        # A halo update's local work (packing and unpacking faces) grows with the block's perimeter
        # (faces and boundary fill), not its area.
        measured, predicted, unit = WEAK_PER_PROCESS, n, "element"
        if op == "update_halos":
            height, width = square_shape(2 * WEAK_PER_PROCESS)
            measured, predicted = 2 * (height // 2 + width), 4 * math.isqrt(n)
            unit = "element of a block's perimeter"
        per_unit = mpi[2]["weak"][op] / measured
        per_call = mpi[2]["small"][op]
        times = []
        for nranks in PREDICT_RANKS:
            comm, why = network_terms(op, nranks, n)
            times.append(per_call + predicted * per_unit + comm)
        local = (
            f"{per_unit * 1e9:.2f} ns per {unit} of local work, {per_call * 1e6:.0f} us per call"
        )
        assumption = f"{local}; {why}"
        rows.append((op, times, assumption))
    return rows


# -- printing -------------------------------------------------------------------------------------


def table(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
        return "\n".join(lines)
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows)]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    return "\n".join(fmt.format(*r) for r in [header, *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-ranks", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        mpi_child(args.rounds)
        return

    sim = simulated_part(args.max_ranks, args.rounds)
    ranks = sorted(sim)
    print(f"1. simulated backend, {PER_RANK} float64 per rank: microseconds per rank (total / P)\n")
    rows = [[op] + [f"{sim[p][op]:.1f}" for p in ranks] for op in OPS]
    print(table(["operation"] + [f"P={p}" for p in ranks], rows, args.markdown))

    mpi = mpi_part(args.rounds, args.timeout)
    print(
        f"\n2. mpiexec on this machine: weak ({WEAK_PER_PROCESS:.0e} float64 per process), "
        f"strong ({STRONG_TOTAL:.0e} in all), milliseconds; small: microseconds per call on "
        f"{PER_RANK} per process\n"
    )
    rows = []
    for op in OPS:
        w1, w2 = mpi[1]["weak"][op], mpi[2]["weak"][op]
        s1, s2 = mpi[1]["strong"][op], mpi[2]["strong"][op]
        rows.append(
            [
                op,
                *(f"{w1 * 1e3:.1f}", f"{w2 * 1e3:.1f}", f"{w1 / w2:.2f}"),
                *(f"{s1 * 1e3:.1f}", f"{s2 * 1e3:.1f}", f"{s1 / (2 * s2):.2f}"),
                *(f"{mpi[1]['small'][op] * 1e6:.0f}", f"{mpi[2]['small'][op] * 1e6:.0f}"),
            ]
        )
    header = ["operation", "weak n=1", "weak n=2", "weak eff.", "strong n=1", "strong n=2"]
    header += ["strong eff.", "small n=1 us", "small n=2 us"]
    print(table(header, rows, args.markdown))

    print(
        f"\n3. predicted seconds for {PREDICT_PER_RANK:.0e} float64 per rank (weak scaling); "
        "network: "
        f"{LATENCY * 1e6:.0f} us per message, {BANDWIDTH / 1e9:.1f} GB/s per rank (100 Gb/s, one "
        "rank per node, full bisection); local rates measured under mpiexec -n 2 here\n"
    )
    rows = [
        [op] + [f"{t * 1e3:.2f} ms" for t in times] + [why] for op, times, why in predictions(mpi)
    ]
    print(
        table(
            ["operation"] + [f"P={p}" for p in PREDICT_RANKS] + ["assumptions"], rows, args.markdown
        )
    )


if __name__ == "__main__":
    main()
