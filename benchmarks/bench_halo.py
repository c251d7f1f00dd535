"""2-D 5-point Jacobi with halos: dapx next to NumPy, hand-written mpi4py and dask.

Run everything in one go (it starts ``mpiexec -n 2`` itself for the MPI part)::

    python benchmarks/bench_halo.py [--size 4096] [--iterations 50]

Targets (issue 5), on a 4096 x 4096 float64 grid, 50 iterations:

* 4 simulated ranks within 1.3x of a pure NumPy slicing stencil on one array;
* under ``mpiexec -n 2`` within 1.15x of a hand-written mpi4py ``Sendrecv`` code;
* at least 3x faster than ``dask.array.map_overlap`` on the same machine.

Every variant applies the same kernel (`dapx.cli.demo.jacobi_kernel`) to the same
problem and the results are checked (``assert``, bit for bit): on the
simulated backend dapx's fields against NumPy's, under MPI dapx's blocks
against the Sendrecv program's, and dask's ``map_overlap`` against NumPy on
a small problem. Every part warms up first (2 iterations of each variant: plans,
communicators, imports), then its variants alternate round by round with the
order reversed every other round. The simulated part runs in this process;
the MPI part runs one ``mpiexec -n 2`` per round, in which the Sendrecv code
and dapx each warm up and then run once, Sendrecv first in even rounds and
dapx first in odd ones; these MPI runs alternate with the dask runs (MPI
first, then dask first), and the speed-up is the median of the per-round
ratios.

Peak memory: the most memory each variant allocates (``tracemalloc``, which
sees NumPy's buffers) during a 2-iteration run, arrays included, in MB: for
the simulated part the 4 ranks together (one process), for the MPI part the
largest rank. Not measured for dask (its memory is in the scheduler's threads
and caches, not one call's allocations).

The simulated part runs dapx on its default grid (4 x 1 row slabs for
4096 x 4096: `dapx.default_grid` keeps the contiguous axis whole) and on an
explicit 2 x 2 grid, next to the bare kernel on the 2 x 2 blocks without dapx
(``numpy on 2x2 blocks``), which separates dapx's own cost (halo updates,
per-rank dispatch) from the decomposition's: with its default ufunc buffer of
8192 elements, NumPy (2.3+) copies the rows of a strided 2-D operand through
the buffer whenever three of them fit (rows of <= 2730 float64), so the
kernel's slices of 2 x 2 blocks (rows of 2048) run about 2x slower per
element than those of whole rows. A second table runs NumPy and dapx on 2 x 2
with ``np.setbufsize(--bufsize)`` (default 2048), where neither copies.

``--part overlap`` (issue 18) times ``u = dapx.map_overlap(step, u, depth=1,
boundary=0.0)`` with `step` returning a new padded block, against the same
problem written in place: on 2 simulated ranks against `update_halos` and the
kernel on two halo arrays, under ``mpiexec -n 2`` against the Sendrecv
program, and on the dask backend (``dapx.dask_backend()``'s 2-worker
``LocalCluster``, one rank per worker) against `update_halos` and the kernel
shipped to the ranks, one call per iteration as the loop makes one (target:
within 1.3x of each; results checked).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

import dapx
from dapx.cli.demo import boundary_values, jacobi_kernel


def _median_times(variants: dict, rounds: int, first_round: int = 0) -> dict[str, float]:
    """Medians of the times the variants return, run in turn, the order reversed every other round.

    Round ``first_round + k`` runs the variants in their given order when even, reversed
    when odd (the caller warms up).
    """
    times: dict[str, list[float]] = {name: [] for name in variants}
    order = list(variants)
    for k in range(first_round, first_round + rounds):
        for name in order if k % 2 == 0 else order[::-1]:
            times[name].append(variants[name]())
    return {name: statistics.median(ts) for name, ts in times.items()}


def _peak_mb(fn) -> float:
    """Peak MB allocated (NumPy buffers included) while `fn` runs."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    result = fn()
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    del result
    return peak / 1e6


# -- NumPy and dapx on simulated ranks ---------------------------------------------------------


def numpy_jacobi(n: int, iterations: int):
    p = np.zeros((n + 2, n + 2))
    p[0, :] = boundary_values(np.arange(-1, n + 1), n)
    q = p.copy()
    t0 = time.perf_counter()
    for _ in range(iterations):
        jacobi_kernel(p, q)
        p, q = q, p
    return time.perf_counter() - t0, p


def _dapx_fields(n: int, backend, grid=None):
    fields = []
    for _ in range(2):
        u = dapx.zeros((n, n), halo=1, grid=grid, backend=backend)
        for r in backend.local_ranks:
            if u.distribution.coords(r)[0] == 0:
                u.local_with_halo(r)[0, :] = boundary_values(u.distribution.global_indices(r)[1], n)
        fields.append(u)
    return fields


def dapx_jacobi(n: int, iterations: int, backend, grid=None):
    u, v = _dapx_fields(n, backend, grid)
    ranks = backend.local_ranks
    backend.barrier()
    t0 = time.perf_counter()
    for _ in range(iterations):
        u.update_halos()
        for r in ranks:
            jacobi_kernel(u.local_with_halo(r), v.local_with_halo(r))
        u, v = v, u
    backend.barrier()
    return time.perf_counter() - t0, u


def blocks_jacobi(n: int, iterations: int):
    """The bare kernel on the four padded blocks of a 2 x 2 grid: no halo exchange."""
    half = (n + 1) // 2
    pairs = [(np.zeros((half + 2, half + 2)), np.zeros((half + 2, half + 2))) for _ in range(4)]
    for p, q in pairs:
        p[...], q[...] = 1.0, 1.0  # touch the pages, as the other variants do
    t0 = time.perf_counter()
    for _ in range(iterations):
        for p, q in pairs:
            jacobi_kernel(p, q)
        pairs = [(q, p) for p, q in pairs]
    return time.perf_counter() - t0


def _with_bufsize(size: int, fn):
    """`fn` run with NumPy's ufunc buffer at `size` elements, restored afterwards."""

    def run():
        old = np.setbufsize(size)
        try:
            return fn()
        finally:
            np.setbufsize(old)

    return run


def simulated_part(n: int, iterations: int, rounds: int, bufsize: int) -> dict:
    backend = dapx.simulated(4)
    state = {}

    def variant(key, fn):
        def run():
            t, state[key] = fn()
            return t

        return run

    def variants(it):
        v = {
            "numpy": variant("numpy", lambda: numpy_jacobi(n, it)),
            "dapx": variant("dapx", lambda: dapx_jacobi(n, it, backend)),
            "2x2": variant("2x2", lambda: dapx_jacobi(n, it, backend, grid=(2, 2))),
            "blocks": lambda: blocks_jacobi(n, it),
        }
        for key in ("numpy", "2x2"):  # the same two with a smaller NumPy buffer, interleaved
            v[f"{key}-buf"] = _with_bufsize(bufsize, v[key])
        return v

    warm = variants(2)
    for fn in warm.values():  # warm-up: halo plans, the heap's pages
        fn()
    peaks = {key: _peak_mb(warm[key]) for key in ("numpy", "dapx", "2x2", "blocks")}
    med = _median_times(variants(iterations), rounds)
    expected = state["numpy"][1:-1, 1:-1]
    for key in ("dapx", "2x2"):
        np.testing.assert_array_equal(state[key].interior.gather(), expected, err_msg=key)
    grid = state["dapx"].distribution.grid_shape
    return {**med, "grid": grid, "peak": peaks}


# -- under mpiexec -n 2: dapx on MPI and a hand-written Sendrecv code ----------------------------


def sendrecv_jacobi(n: int, iterations: int, comm):
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    bounds = dapx.layout.maps.even_bounds(n, size)
    rows = int(bounds[rank + 1] - bounds[rank])
    p = np.zeros((rows + 2, n + 2))
    if rank == 0:
        p[0, :] = boundary_values(np.arange(-1, n + 1), n)
    q = p.copy()
    up = rank - 1 if rank > 0 else MPI.PROC_NULL
    down = rank + 1 if rank < size - 1 else MPI.PROC_NULL
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(iterations):
        comm.Sendrecv(p[1], dest=up, recvbuf=p[-1], source=down)
        comm.Sendrecv(p[-2], dest=down, recvbuf=p[0], source=up)
        jacobi_kernel(p, q)
        p, q = q, p
    comm.Barrier()
    return time.perf_counter() - t0, p[1:-1, 1:-1]


def mpi_part(n: int, iterations: int, rounds: int, first_round: int) -> None:
    """Round ``first_round`` runs Sendrecv first when even, dapx first when odd."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    backend = dapx.mpi()
    state = {}

    def run_sendrecv():
        t, state["sendrecv"] = sendrecv_jacobi(n, iterations, comm)
        return comm.allreduce(t, op=MPI.MAX)

    def run_dapx():
        t, state["dapx"] = dapx_jacobi(n, iterations, backend)
        return comm.allreduce(t, op=MPI.MAX)

    # Warm up (the halo plan, the Cartesian communicator) outside the timed rounds, and
    # measure each variant's peak allocation on a short run (the largest rank's).
    warm = {
        "sendrecv": lambda: sendrecv_jacobi(n, 2, comm),
        "dapx": lambda: dapx_jacobi(n, 2, backend),
    }
    order = list(warm) if first_round % 2 == 0 else list(warm)[::-1]
    peaks = {}
    for key in order:
        warm[key]()
        peaks[key] = comm.allreduce(_peak_mb(warm[key]), op=MPI.MAX)
    med = _median_times({"sendrecv": run_sendrecv, "dapx": run_dapx}, rounds, first_round)
    mine = state["dapx"].interior.local()
    same = comm.allreduce(bool(np.array_equal(mine, state["sendrecv"])), op=MPI.LAND)
    if not same:
        raise AssertionError("dapx and the hand-written Sendrecv program disagree")
    grid = state["dapx"].distribution.grid_shape
    if comm.Get_rank() == 0:
        print(json.dumps({**med, "nranks": comm.Get_size(), "grid": grid, "peak": peaks}))


# -- dask.array map_overlap -----------------------------------------------------------------------


def dask_part(n: int, iterations: int, rounds: int, chunks: tuple[int, int]) -> dict:
    import dask
    import dask.array as da

    def step(block):
        out = np.empty_like(block)
        jacobi_kernel(block, out)
        return out

    def run(iterations=iterations):
        x = da.zeros((n, n), chunks=chunks).persist()
        t0 = time.perf_counter()
        for _ in range(iterations):
            x = x.map_overlap(step, depth=1, boundary=0).persist()
        return time.perf_counter() - t0

    with dask.config.set(scheduler="threads", num_workers=2):
        if rounds == 0:  # warm-up only
            run(2)
            return {}
        med = {"dask": statistics.median(run() for _ in range(rounds))}
    # Same kernel, cold walls everywhere: check against NumPy on a few iterations.
    small = da.from_array(np.random.default_rng(0).random((40, 40)), chunks=(20, 40))
    y = small
    for _ in range(5):
        y = y.map_overlap(step, depth=1, boundary=0)
    p = np.pad(small.compute(), 1)
    q = p.copy()
    for _ in range(5):
        jacobi_kernel(p, q)
        p, q = q, p
    np.testing.assert_array_equal(y.compute(), p[1:-1, 1:-1], err_msg="dask map_overlap")
    return med


# -- map_overlap in steady state (issue 18): u = map_overlap(step, u) vs in-place programs ---------


def _overlap_initial(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    return np.add.outer(rows % 7, cols % 5).astype(float)


def _overlap_step(b: np.ndarray) -> np.ndarray:
    """The Jacobi kernel as a ``map_overlap`` step: a new padded block (its halo never read)."""
    out = np.empty_like(b)
    jacobi_kernel(b, out)
    return out


def overlap_loop(n: int, iterations: int, backend):
    """``u = dapx.map_overlap(step, u, depth=1, boundary=0.0)``, the step returning a new block."""
    u = dapx.zeros((n, n), backend=backend)
    for r in backend.local_ranks:
        rows, cols = u.distribution.global_indices(r)
        u.locals[r][...] = _overlap_initial(rows, cols)
    backend.barrier()
    t0 = time.perf_counter()
    for _ in range(iterations):
        u = dapx.map_overlap(_overlap_step, u, depth=1, boundary=0.0)
    backend.barrier()
    return time.perf_counter() - t0, u


def overlap_in_place(n: int, iterations: int, backend):
    """The same problem written in place with dapx: two halo arrays, `update_halos`, the kernel."""
    u, v = (dapx.zeros((n, n), halo=1, backend=backend) for _ in range(2))
    inner = u.interior
    for r in backend.local_ranks:
        rows, cols = inner.distribution.global_indices(r)
        inner.locals[r][...] = _overlap_initial(rows, cols)
    ranks = backend.local_ranks
    backend.barrier()
    t0 = time.perf_counter()
    for _ in range(iterations):
        u.update_halos()
        for r in ranks:
            jacobi_kernel(u.local_with_halo(r), v.local_with_halo(r))
        u, v = v, u
    backend.barrier()
    return time.perf_counter() - t0, u.interior


def sendrecv_overlap(n: int, iterations: int, comm):
    """The same problem as a hand-written mpi4py program (zero boundary, two buffers)."""
    from mpi4py import MPI

    rank, size = comm.Get_rank(), comm.Get_size()
    bounds = dapx.layout.maps.even_bounds(n, size)
    lo, hi = int(bounds[rank]), int(bounds[rank + 1])
    p = np.zeros((hi - lo + 2, n + 2))
    p[1:-1, 1:-1] = _overlap_initial(np.arange(lo, hi), np.arange(n))
    q = np.zeros_like(p)
    up = rank - 1 if rank > 0 else MPI.PROC_NULL
    down = rank + 1 if rank < size - 1 else MPI.PROC_NULL
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(iterations):
        comm.Sendrecv(p[1], dest=up, recvbuf=p[-1], source=down)
        comm.Sendrecv(p[-2], dest=down, recvbuf=p[0], source=up)
        jacobi_kernel(p, q)
        p, q = q, p
    comm.Barrier()
    return time.perf_counter() - t0, p[1:-1, 1:-1]


def overlap_part(n: int, iterations: int, rounds: int, backend, baseline) -> dict:
    """Median times of the map_overlap loop and of `baseline` on `backend` (results checked)."""
    state = {}

    def variant(key, fn, it):
        def run():
            t, state[key] = fn(n, it)
            return max(backend.allgather(dict.fromkeys(backend.local_ranks, t)))

        return run

    def variants(it):
        return {
            "in-place": variant("in-place", baseline, it),
            "map_overlap": variant("map_overlap", lambda n, it: overlap_loop(n, it, backend), it),
        }

    for fn in variants(2).values():
        fn()
    med = _median_times(variants(iterations), rounds)
    mine = {r: state["map_overlap"].locals[r] for r in backend.local_ranks}
    ref = state["in-place"]
    if isinstance(ref, np.ndarray):  # the Sendrecv program's block: one rank per process
        same = all(np.array_equal(b, ref) for b in mine.values())
    else:
        same = all(np.array_equal(b, ref.locals[r]) for r, b in mine.items())
    if not all(backend.allgather(dict.fromkeys(backend.local_ranks, same))):
        raise AssertionError("the map_overlap loop and the in-place program disagree")
    return med


# -- the report -----------------------------------------------------------------------------------


def _line(label: str, t: float, ratio: float | None = None, peak: float | None = None) -> str:
    """One report line: seconds, ratio to the reference, peak MB (blank where not given)."""
    text = f"  {label:<28} {t:8.3f} s"
    text += f"   {ratio:5.2f}x" if ratio is not None else " " * 9
    return (text + (f"  {peak:8.1f}" if peak is not None else "")).rstrip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--part", choices=["all", "simulated", "mpi", "dask", "overlap"], default="all"
    )
    # Set on the processes this script starts under mpiexec, not by hand.
    parser.add_argument("--mpi-rank", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mpi-overlap", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--first-round", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument(
        "--bufsize",
        type=int,
        default=2048,
        help="NumPy ufunc buffer size of the second simulated table",
    )
    args = parser.parse_args()
    n, it, rounds = args.size, args.iterations, args.rounds
    if args.mpi_rank:
        mpi_part(n, it, rounds, args.first_round)
        return 0
    if args.mpi_overlap:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        med = overlap_part(n, it, rounds, dapx.mpi(), lambda n, it: sendrecv_overlap(n, it, comm))
        if comm.Get_rank() == 0:
            print(json.dumps(med))
        return 0
    if args.part == "overlap":
        return overlap_report(n, it, rounds)
    print(f"2-D 5-point Jacobi, {n} x {n} float64, {it} iterations (median of {rounds} rounds)")
    if args.part in ("all", "simulated"):
        s = simulated_part(n, it, rounds, args.bufsize)
        print("\n4 simulated ranks vs one NumPy array (target <= 1.30x), results checked")
        print(f"NumPy's ufunc buffer {np.getbufsize()} elements (its default):{'peak MB':>10}")
        print(_line("numpy slicing stencil", s["numpy"], peak=s["peak"]["numpy"]))
        default = " x ".join(map(str, s["grid"]))
        rows = [
            ("dapx", f"dapx, default grid {default}"),
            ("2x2", "dapx, grid 2 x 2"),
            ("blocks", "numpy on 2x2 blocks, no dapx"),
        ]
        for key, label in rows:
            print(_line(label, s[key], s[key] / s["numpy"], s["peak"][key]))
        print(f"  dapx's own cost on 2 x 2: {s['2x2'] / s['blocks']:.2f}x the bare kernels")
        print(f"np.setbufsize({args.bufsize}) for both:")
        print(_line("numpy slicing stencil", s["numpy-buf"]))
        print(_line("dapx, grid 2 x 2", s["2x2-buf"], s["2x2-buf"] / s["numpy-buf"]))
    chunks = ((n + 1) // 2, n)  # the decomposition of the 2 MPI ranks
    runs: dict[str, list] = {"mpi": [], "dask": []}
    if args.part in ("all", "dask"):
        dask_part(n, it, 0, chunks)
    for k in range(rounds):  # MPI and dask alternate, each going first every other round
        parts = [
            ("mpi", lambda k=k: _mpi_run(n, it, k)),
            ("dask", lambda: dask_part(n, it, 1, chunks)),
        ]
        for part, fn in parts if k % 2 == 0 else parts[::-1]:
            if args.part in ("all", part):
                runs[part].append(fn())
    if runs["mpi"]:
        mpi = {k: statistics.median(r[k] for r in runs["mpi"]) for k in ("sendrecv", "dapx")}
        peak = {k: max(r["peak"][k] for r in runs["mpi"]) for k in ("sendrecv", "dapx")}
        ratio = statistics.median(r["dapx"] / r["sendrecv"] for r in runs["mpi"])
        print(
            f"\nmpiexec -n 2, grid {tuple(runs['mpi'][0]['grid'])} (target <= 1.15x), "
            "results checked; peak MB of the largest rank"
        )
        print(_line("mpi4py Sendrecv", mpi["sendrecv"], peak=peak["sendrecv"]))
        print(_line("dapx update_halos", mpi["dapx"], ratio, peak["dapx"]))
    if runs["dask"]:
        chunks_text = f"chunks {chunks}, 2 threads, same kernel"
        print(f"\ndask.array map_overlap, {chunks_text}, results checked")
        dask_time = statistics.median(r["dask"] for r in runs["dask"])
        print(_line("dask", dask_time))
        if runs["mpi"]:
            speedups = [d["dask"] / m["dapx"] for d, m in zip(runs["dask"], runs["mpi"])]
            print(
                f"  dapx on 2 MPI ranks is {statistics.median(speedups):.1f}x faster "
                f"(target >= 3x; rounds: {', '.join(f'{x:.1f}' for x in speedups)})"
            )
    return 0


def _fill_initial(inner) -> None:
    for r in inner.backend.local_ranks:
        rows, cols = inner.distribution.global_indices(r)
        inner.locals[r][...] = _overlap_initial(rows, cols)


def _in_place_step(u, v) -> None:
    """One in-place iteration on the ranks: `update_halos`, then the kernel into `v`."""
    u.update_halos()
    for r in u.backend.local_ranks:
        jacobi_kernel(u.local_with_halo(r), v.local_with_halo(r))


def dask_overlap(n: int, iterations: int, rounds: int) -> dict:
    """The map_overlap loop and the in-place form on the dask backend, driven from the client.

    Each call returns when every rank has done its part, so the loops' times are the ranks'.
    """
    # dapx.dask_backend() starts its own workers, one per core, with this process's malloc
    # settings and one malloc arena (`dapx.backends.dask.worker_environ`).
    with dapx.dask_backend(nranks=2) as backend:
        state = {}

        def start():
            u, v = (dapx.zeros((n, n), halo=1, backend=backend) for _ in range(2))
            backend.call(_fill_initial, (u.interior,))
            return u, v

        def loop(it):
            u = start()[0].interior
            t0 = time.perf_counter()
            for _ in range(it):
                u = dapx.map_overlap(_overlap_step, u, depth=1, boundary=0.0)
            state["map_overlap"] = u
            return time.perf_counter() - t0

        def in_place(it):
            u, v = start()
            t0 = time.perf_counter()
            for _ in range(it):
                backend.call(_in_place_step, (u, v))
                u, v = v, u
            state["in-place"] = u.interior
            return time.perf_counter() - t0

        variants = {"in-place": in_place, "map_overlap": loop}
        for fn in variants.values():
            fn(2)
        med = _median_times(
            {k: functools.partial(f, iterations) for k, f in variants.items()}, rounds
        )
        got, expected = state["map_overlap"].gather(), state["in-place"].gather()
        if not np.array_equal(got, expected):
            raise AssertionError(
                "dask backend: the map_overlap loop and the in-place form disagree"
            )
    return med


def overlap_report(n: int, iterations: int, rounds: int) -> int:
    """The map_overlap loop against in-place programs: 2 simulated ranks, mpiexec -n 2."""
    print(f"u = map_overlap(step, u, depth=1), {n} x {n}, {iterations} iterations (target <= 1.3x)")
    backend = dapx.simulated(2)
    in_place = functools.partial(overlap_in_place, backend=backend)
    sim = overlap_part(n, iterations, rounds, backend, in_place)
    print("2 simulated ranks, vs dapx update_halos + kernel in place, results checked")
    print(_line("in place", sim["in-place"]))
    print(_line("map_overlap loop", sim["map_overlap"], sim["map_overlap"] / sim["in-place"]))
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = {k: v for k, v in os.environ.items() if k != "DAPX_BACKEND"}
    cmd = [str(mpiexec if mpiexec.exists() else "mpiexec"), "-n", "2", sys.executable, __file__]
    cmd += ["--mpi-overlap", "--size", str(n), "--iterations", str(iterations)]
    cmd += ["--rounds", str(rounds)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    mpi = json.loads(out.strip().splitlines()[-1])
    print("mpiexec -n 2, vs the hand-written mpi4py Sendrecv program, results checked")
    print(_line("mpi4py Sendrecv", mpi["in-place"]))
    print(_line("map_overlap loop", mpi["map_overlap"], mpi["map_overlap"] / mpi["in-place"]))
    dask = dask_overlap(n, iterations, rounds)
    print(
        "dask backend, 2 workers, vs update_halos + kernel shipped per iteration, results checked"
    )
    print(_line("in place", dask["in-place"]))
    print(_line("map_overlap loop", dask["map_overlap"], dask["map_overlap"] / dask["in-place"]))
    return 0


def _mpi_run(n: int, iterations: int, round_index: int) -> dict:
    """One timed round of the MPI part, in its own ``mpiexec -n 2`` (see `mpi_part`)."""
    mpiexec = Path(sys.executable).parent / "mpiexec"
    env = {k: v for k, v in os.environ.items() if k != "DAPX_BACKEND"}
    cmd = [
        str(mpiexec if mpiexec.exists() else "mpiexec"),
        "-n",
        "2",
        sys.executable,
        __file__,
        "--mpi-rank",
        "--size",
        str(n),
        "--iterations",
        str(iterations),
        "--rounds",
        "1",
        "--first-round",
        str(round_index),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


if __name__ == "__main__":
    sys.exit(main())
