"""``python -m dapx demo``: a 2-D heat equation on a distributed array with a halo.

The steady heat equation (Laplace's equation) on the unit square, solved by
Jacobi iterations, which are also explicit time steps of the heat equation
at the largest stable step: each new value is the mean of its four
neighbours. The top wall is held at ``sin(pi x)``, the others at 0, as
Dirichlet values stored in the ghost cells at the domain edge, which
``update_halos()`` (boundary ``"none"``) leaves alone while it refreshes
the ghost cells between ranks.

Each rank updates its own block with the same NumPy kernel the plain NumPy
solver (`numpy_solution`) applies to the whole array, so the two agree bit
for bit. It runs on 4 simulated ranks by default and on MPI under
``mpiexec -n N python -m dapx demo``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["boundary_values", "jacobi_kernel", "main", "numpy_solution", "solve"]


def boundary_values(x: np.ndarray, n: int) -> np.ndarray:
    """The temperature of the top wall at column indices `x` of an `n`-column grid.

    Columns -1 and `n` are the corners of the wall (temperature 0).

    >>> boundary_values(np.array([-1, 0, 1, 2]), 3)
    array([0.        , 0.70710678, 1.        , 0.70710678])
    """
    return np.sin(np.pi * (x + 1) / (n + 1))


#: Elements per row strip of `jacobi_kernel`: 512 KiB per float64 operand, so a strip's
#: three reads and its output stay in a 4 MiB cache.
_STRIP_ELEMENTS = 65536


def jacobi_kernel(p: np.ndarray, q: np.ndarray) -> None:
    """``q[1:-1, 1:-1] = (north + south + west + east) / 4`` from `p`, with no temporaries.

    The rows are done in strips that fit in the CPU cache; the result is the
    same as ``((north + south) + west + east) * 0.25`` on the whole array.

    >>> p = np.arange(16.0).reshape(4, 4)
    >>> q = np.zeros_like(p)
    >>> jacobi_kernel(p, q)
    >>> q[1:-1, 1:-1]
    array([[ 5.,  6.],
           [ 9., 10.]])
    """
    # Four passes over strips of rows that stay in the CPU cache, rather than four passes
    # over the whole array from memory (about 1.4x faster on 4096 x 4096); same arithmetic.
    rows = max(1, _STRIP_ELEMENTS // p.shape[1])
    for i in range(1, p.shape[0] - 1, rows):
        j = min(i + rows, p.shape[0] - 1)
        out = q[i:j, 1:-1]
        np.add(p[i - 1 : j - 1, 1:-1], p[i + 1 : j + 1, 1:-1], out=out)
        out += p[i:j, :-2]
        out += p[i:j, 2:]
        out *= 0.25


def _initial(n: int, backend, grid):
    """A zero field with a halo of 1 whose top edge ghost cells hold the wall temperature."""
    import dapx

    u = dapx.zeros((n, n), halo=1, grid=grid, backend=backend)
    dist = u.distribution
    for r in backend.local_ranks:
        if dist.coords(r)[0] == 0:  # ranks along the top wall
            columns = dist.global_indices(r)[1]  # -1 and n are the edge ghost columns
            u.local_with_halo(r)[0, :] = boundary_values(columns, n)
    return u


def solve(
    n: int = 200,
    steps: int = 5000,
    backend=None,
    progress: bool = False,
    check_every: int = 0,
    grid=None,
) -> tuple[Any, float]:
    """Run `steps` Jacobi iterations on an ``n x n`` grid; return the field and the residual.

    Parameters
    ----------
    n : int
        Interior points per side.
    steps : int
        Iterations (>= 1).
    backend : dapx backend, optional
        Default: the current backend.
    progress : bool
        Show a tqdm progress bar (on rank 0 only).
    check_every : int
        When positive, show the residual on the progress bar every so many
        steps (a collective reduction each time).
    grid : (int, int), optional
        Process grid; default: dapx's (`dapx.layout.grid.default_grid`).

    Returns
    -------
    (DistributedArray, float)
        The final field (with its halo) and the residual
        ``max |u_last - u_before|`` over the interior.

    Examples
    --------
    >>> import dapx
    >>> u, residual = solve(8, 50, backend=dapx.simulated(4))
    >>> u.shape, u.distribution.grid_shape, residual < 1e-2
    ((8, 8), (4, 1), True)
    >>> solve(8, 50, backend=dapx.simulated(4), grid=(2, 2))[0].distribution.grid_shape
    (2, 2)
    """
    import dapx

    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    backend = dapx.get_backend() if backend is None else backend
    if not backend.local_ranks:
        # Note: the solver writes the wall into edge ghost cells and runs its kernel on this
        # process's blocks; a client that holds no rank (dask) would compute nothing.
        raise ValueError(
            f"the demo solver runs on the blocks this process holds, and {backend!r} holds none: "
            "run it on the simulated or MPI backend (on dask, step with dapx.map_overlap)"
        )
    u, v = _initial(n, backend, grid), _initial(n, backend, grid)
    ranks = backend.local_ranks
    bar = None
    if progress and 0 in ranks:
        try:
            from tqdm import tqdm
        except ImportError:  # pragma: no cover - tqdm is in the "all" extra
            print("(install tqdm for a progress bar)", file=sys.stderr)
        else:
            bar = tqdm(total=steps, unit="step", file=sys.stderr, dynamic_ncols=True)
    for step in range(1, steps + 1):
        u.update_halos()  # boundary "none": the wall values in the edge ghost cells stay
        for r in ranks:
            jacobi_kernel(u.local_with_halo(r), v.local_with_halo(r))
        u, v = v, u
        if check_every > 0 and step % check_every == 0 and step < steps:
            change = float(np.max(np.abs(u.interior - v.interior)))
            if bar is not None:
                bar.set_postfix(residual=f"{change:.2e}", refresh=False)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    residual = float(np.max(np.abs(u.interior - v.interior)))
    return u, residual


def numpy_solution(n: int, steps: int) -> np.ndarray:
    """The same solver in plain NumPy on one ``(n + 2) x (n + 2)`` array; the interior."""
    p = np.zeros((n + 2, n + 2))
    p[0, :] = boundary_values(np.arange(-1, n + 1), n)
    q = p.copy()
    for _ in range(steps):
        jacobi_kernel(p, q)
        p, q = q, p
    return p[1:-1, 1:-1]


def _picture(field: np.ndarray, dist, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n0, n1 = field.shape
    fig, ax = plt.subplots(figsize=(6.4, 5.6), dpi=110)
    image = ax.imshow(field, cmap="inferno", origin="upper", extent=(0, n1, n0, 0))
    fig.colorbar(image, ax=ax, label="temperature")
    rows, cols = dist.maps[0].bounds[1:-1], dist.maps[1].bounds[1:-1]
    for y in rows:
        ax.axhline(y, color="white", lw=1.2, ls="--")
    for x in cols:
        ax.axvline(x, color="white", lw=1.2, ls="--")
    for r in range(dist.nranks):
        (r0, r1), (c0, c1) = (
            (int(m.bounds[c]), int(m.bounds[c + 1])) for m, c in zip(dist.maps, dist.coords(r))
        )
        ax.text(
            (c0 + c1) / 2,
            (r0 + r1) / 2,
            f"rank {r}",
            color="white",
            ha="center",
            va="center",
            fontsize=9,
            alpha=0.8,
        )
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _grid_arg(text: str) -> tuple[int, int]:
    try:
        rows, cols = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected ROWSxCOLS such as 2x2, got {text!r}") from None
    if rows < 1 or cols < 1:
        raise argparse.ArgumentTypeError(f"grid sizes must be positive, got {text!r}")
    return rows, cols


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m dapx demo``."""
    import dapx

    parser = argparse.ArgumentParser(prog="python -m dapx demo", description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=200, help="interior points per side (200)")
    parser.add_argument("--steps", type=int, default=5000, help="Jacobi iterations (5000)")
    parser.add_argument(
        "--ranks", type=int, default=4, help="simulated ranks when not under mpiexec (4)"
    )
    parser.add_argument(
        "--grid",
        type=_grid_arg,
        default=None,
        help="process grid ROWSxCOLS, e.g. 2x2 (default: dapx's)",
    )
    parser.add_argument("--output", default="dapx-demo.png", help="PNG of the final field")
    parser.add_argument("--no-plot", action="store_true", help="do not write the PNG")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    if args.size < 1 or args.steps < 1 or args.ranks < 1:
        parser.error("--size, --steps and --ranks must be positive")

    from ..backends import is_installed, mpi_world_size

    if mpi_world_size() > 1 and is_installed("mpi4py"):
        backend = dapx.mpi()
        kind = "MPI processes"
    else:
        backend = dapx.simulated(args.ranks)
        kind = "simulated ranks in this process"
    root = 0 in backend.local_ranks
    n = args.size
    start = time.perf_counter()
    if args.grid is not None and args.grid[0] * args.grid[1] != backend.nranks:
        parser.error(f"--grid {args.grid[0]}x{args.grid[1]} does not have {backend.nranks} ranks")
    u, residual = solve(
        n,
        args.steps,
        backend,
        progress=root and not args.quiet,
        check_every=max(1, args.steps // 20),
        grid=args.grid,
    )
    backend.barrier()
    elapsed = time.perf_counter() - start
    dist = u.distribution
    field = None if args.no_plot else u.interior.gather()  # on purpose, for the picture
    if root:
        grid = " x ".join(str(g) for g in dist.grid_shape)
        print("dapx demo: the 2-D heat equation at steady state (Jacobi iterations)")
        print(f"  grid      {n} x {n} points, halo 1 (top wall sin(pi x), other walls 0)")
        print(f"  ranks     {backend.nranks} {kind}, process grid {grid}")
        print(f"  steps     {args.steps} in {elapsed:.2f} s: {args.steps / elapsed:.0f} steps/s")
        print(f"  residual  max |u_k+1 - u_k| = {residual:.3e}")
    if field is not None and root:
        try:
            _picture(
                field,
                dist,
                Path(args.output),
                f"dapx demo: {n} x {n}, {args.steps} Jacobi steps on "
                f"{backend.nranks} ranks (grid {grid})",
            )
        except ImportError:  # pragma: no cover - matplotlib is in the "all" extra
            print("  picture   (install matplotlib to write it)")
        else:
            print(f"  picture   {args.output} (final field, rank boundaries dashed)")
    return 0
