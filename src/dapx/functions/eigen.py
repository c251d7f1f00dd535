"""Eigenvalues and eigenvectors of one Hermitian matrix, never whole: `eigh`, `eigvalsh`.

Two methods for a single distributed ``n x n`` symmetric (Hermitian) matrix
``A``; ``method='auto'`` (the default) chooses:

* **Householder** (`dapx.functions.tridiagonal`, with SciPy's LAPACK): the
  blocked right-looking reduction to tridiagonal form on block-cyclic
  columns, LAPACK's tridiagonal solvers, inverse iteration on each rank's
  range of eigenvalues and the back-transformation. About ``4/3 n^3`` flops
  for the reduction (half of them BLAS-3) and ``2 n^3`` more for the vectors;
  the default.
* **Parallel block Jacobi** (below): several times the flops, but every
  rank keeps to twice its share whatever the spectrum. Used when SciPy is
  missing, for a matrix with a non-finite element (NaN results at once), and
  when a cluster of eigenvalues (closer than ``1e-3 ||T||``, which inverse
  iteration must orthogonalize on one rank) would put more than twice a
  share of eigenvectors on one rank: the decision comes from data every
  process has, so every rank takes it.

Block Jacobi (Golub and Van Loan 8.5; the one-sided storage of Hestenes,
Brent and Luk's round-robin ordering, with block rotations as in ScaLAPACK's
and Bečka, Okša and Vajteršic's block Jacobi methods):

* **Layout.** The columns are split into ``2m`` blocks of at most ``nb``
  columns (``nb = min(NB, ceil(n / 2P))``, ``m`` a multiple of the number of
  ranks ``P``); each rank holds ``m / P`` *pairs* of blocks with all their
  rows. Only one triangle of ``A`` is read (``UPLO``, as NumPy): the input is
  redistributed once to whole columns, and once transposed (a transpose of
  the layout, then one exchange) for the mirrored triangle.
* **One-sided storage.** Each block ``j`` keeps ``V_j`` (``n x w_j``, the
  accumulated rotations, at first columns of the identity) and
  ``W_j = A V_j`` (at first the block's columns of ``A``). For a pair
  ``(I, J)`` the ``2w x 2w`` matrix ``M = [V_I V_J]^H [W_I W_J]`` is
  ``V^H A V`` restricted to the pair, computed from the pair's own columns;
  its eigendecomposition ``M = Z diag(d) Z^H`` (LAPACK, `numpy.linalg.eigh`)
  gives the block rotation ``[V_I V_J] <- [V_I V_J] Z`` and the same for
  ``W`` (row chunks, so the work space is ``O(chunk * w)``). No shift is
  needed: the method is two-sided Jacobi on ``A`` (indefinite, singular or
  with repeated eigenvalues alike), in the storage of one-sided Jacobi.
* **Round-robin.** A sweep is ``2m - 1`` steps of the circle method: every
  rank rotates its pairs, then the blocks move one position (the first block
  stays): within a rank by reference, across ranks through two exchanges
  (`dapx.exchange.execute`: at each rank boundary one block moves right and
  one moves left), so every pair of blocks meets once per sweep.
* **Rotations near the identity.** ``eigh``'s vectors are reordered so that
  the k-th smallest eigenvalue's takes the place of the k-th smallest
  diagonal element, and those of a repeated eigenvalue (closer than ``tau``)
  are rotated to the basis nearest the identity (orthogonal Procrustes):
  near convergence ``Z`` is then close to ``I``, as in scalar Jacobi, and
  the convergence quadratic; sorted or arbitrary bases would keep moving
  converged columns between blocks.
* **Convergence.** A pair whose ``M`` has an off-diagonal element above
  ``tau = TOL * eps * ||A||_F`` (a threshold Jacobi method: absolute accuracy,
  like LAPACK's ``eps ||A||``) is rotated; the others are left. After each
  sweep one allgather of every rank's largest off-diagonal element decides
  on every rank at once: a sweep that rotated nothing ends the iteration
  (``V^H A V`` is diagonal to ``tau``), as does one whose largest element,
  below ``64 tau``, is not half the previous sweep's (rounding noise);
  `MAX_SWEEPS` sweeps without that raise `numpy.linalg.LinAlgError` on every
  rank. Random matrices take ~10 sweeps, spectra with tight clusters
  or many tiny eigenvalues up to ~30 (Jacobi converges linearly until the
  off-diagonal elements are below the gaps). Eigenvalues are the
  Rayleigh quotients ``v_j^H w_j``, sorted ascending (one allgather of the
  ``n`` values); eigenvectors are ``V``'s columns in that order, moved once
  (an unstructured column map to the input's layout). Errors are a few
  hundred ``eps ||A||`` at most in the tests (``n <= 150``), eigenvalues
  and orthogonality alike.

Memory per rank: its blocks of ``V`` and ``W`` (``2 n c`` elements for
``c`` columns held, ``c <= 2 nb m / P``: twice its share of the matrix, the
eigenvectors included), a pair's ``M`` and ``Z`` (``(2 nb)^2 <= 2 n nb``)
and one row chunk of the rotation (``~2 MiB``); each tournament exchange
receives at most one block of ``V`` and ``W``, ``2 n nb`` elements
(``tests/test_eigen.py`` measures it), so besides its share a rank holds
``O(n nb)`` more, with ``nb <= NB`` independent of ``n``. The redistributions
at the start and the end receive at most a rank's share of the matrix; the
collectives gather ``P`` scalars per sweep and the ``n`` eigenvalues once.

Cost: ``~12 n^3 / P`` flops per sweep, ``~log n`` sweeps (quadratic
convergence; the last one only checks), several times LAPACK's tridiagonal
reduction (``benchmarks/bench_eigh.py`` measures the ratio).

Determinism: every block is rotated by the rank holding it, from the same
bits in the same order on every backend, and the decisions come from
allgathers, so the simulated and MPI backends give bitwise identical
results for the same number of ranks (Householder's likewise). A single rank
(``P = 1``, no block size asked for) calls LAPACK on its (whole) matrix
directly.

Like NumPy, the computation is in double precision (float64 or complex128)
and results are cast to NumPy's result dtypes. A matrix with a non-finite
element in the triangle read gives NaN eigenvalues and eigenvectors.

Examples
--------
>>> import numpy as np, dapx
>>> x = np.array([[2.0, 1.0, 0.0], [1.0, 2.0, 1.0], [0.0, 1.0, 2.0]])
>>> w, v = eigh(dapx.asarray(x, backend=dapx.simulated(3)))
>>> bool(np.allclose(w.gather(), np.linalg.eigvalsh(x)))
True
>>> bool(np.allclose(x @ v.gather(), v.gather() * w.gather()))
True
"""

from __future__ import annotations

import math

import numpy as np

from ..core.array import DistributedArray, new_array
from ..exchange.execute import execute
from ..layout.distribution import Distribution
from ..layout.maps import BlockMap, CyclicMap, UnstructuredMap, even_bounds
from . import tridiagonal
from .reduction_engine import from_replicated
from .shaping import matrix_transpose

__all__ = ["MAX_SWEEPS", "METHODS", "NB", "TOL", "Tournament", "eigh", "eigvalsh"]

LinAlgError = np.linalg.LinAlgError

#: The largest block of columns; smaller matrices get smaller blocks (two per rank).
NB = 128
#: Sweeps before `numpy.linalg.LinAlgError` (quadratic convergence needs ~log n).
MAX_SWEEPS = 60
#: The rotation threshold in units of ``eps ||A||_F``.
TOL = 4.0
#: Off-diagonal elements below ``_FLOOR * tau`` that a sweep no longer halves are rounding noise.
_FLOOR = 64.0
#: Bytes of a row chunk of the rotation's GEMM.
_CHUNK_BYTES = 1 << 21
_EPS = float(np.finfo(np.float64).eps)
_WHOLE = (slice(None), slice(None))


def _check_block_size(block_size) -> None:
    if block_size is not None and (not isinstance(block_size, (int, np.integer)) or block_size < 1):
        raise ValueError(f"block_size must be a positive integer, got {block_size!r}")


class Tournament:
    """The round-robin schedule of ``2m`` column blocks over ``P`` ranks, ``k`` pairs each.

    Position ``i`` (``0 <= i < m``) pairs blocks ``top[i]`` and ``bot[i]``
    and lives on rank ``i // k``. Each step moves the blocks by the circle
    method (``top[0]`` stays); ``2m - 1`` steps meet every pair once and
    bring every block back.

    Examples
    --------
    >>> t = Tournament(10, 2, block_size=2)
    >>> t.k, t.m, t.widths.tolist()
    (2, 4, [2, 2, 1, 1, 1, 1, 1, 1])
    >>> t.pairs(1)
    [(4, 5), (6, 7)]
    >>> t.advance()  # (block, from rank, to rank)
    [(2, 0, 1), (5, 1, 0)]
    """

    def __init__(self, n: int, nranks: int, block_size: int | None = None):
        _check_block_size(block_size)
        nb = block_size or min(NB, max(1, -(-n // (2 * nranks))))
        self.n, self.nranks = n, nranks
        self.k = max(1, -(-n // (2 * nranks * nb)))
        self.m = nranks * self.k
        self.bounds = even_bounds(n, 2 * self.m)
        self.widths = np.diff(self.bounds)
        self.top = np.arange(0, 2 * self.m, 2)
        self.bot = np.arange(1, 2 * self.m, 2)

    def column_bounds(self) -> np.ndarray:
        """The first column of each rank's blocks at the start (a block map's bounds)."""
        return self.bounds[:: 2 * self.k]

    def pairs(self, rank: int) -> list[tuple[int, int]]:
        """The pairs of blocks on `rank`, in position order."""
        lo = rank * self.k
        return [(int(self.top[i]), int(self.bot[i])) for i in range(lo, lo + self.k)]

    def owners(self) -> np.ndarray:
        """The rank of every block."""
        owner = np.empty(2 * self.m, np.intp)
        ranks = np.arange(self.m) // self.k
        owner[self.top], owner[self.bot] = ranks, ranks
        return owner

    def advance(self) -> list[tuple[int, int, int]]:
        """One step of the circle method: the blocks that change rank, ``(block, src, dst)``."""
        if self.m == 1:
            return []
        before = self.owners()
        top, bot = self.top.copy(), self.bot.copy()
        self.top[1], self.top[2:] = bot[0], top[1:-1]
        self.bot[:-1], self.bot[-1] = bot[1:], top[-1]
        after = self.owners()
        moved = np.flatnonzero(before != after)
        return [(int(b), int(before[b]), int(after[b])) for b in moved]


def _exchange(held: dict, moves: list, n: int, widths: np.ndarray, dtype, backend) -> None:
    """Move whole blocks between ranks, at most one sent and one received per rank: one exchange.

    `held` maps each local rank to its ``{block: array}``; moved blocks leave
    the sender's dict and arrive in the receiver's.
    """
    nranks = backend.nranks
    sources, sends, recvcounts, recvs, arriving, destinations = {}, {}, {}, {}, {}, {}
    for r in backend.local_ranks:
        counts, items = np.zeros(nranks, np.intp), []
        out = [(b, d) for b, s, d in moves if s == r]
        sources[r] = np.empty((0, 0), dtype)
        if out:
            (b, d), block = out[0], held[r].pop(out[0][0])
            sources[r], counts[d] = block, block.size
            items.append((_WHOLE, 0, block.size, block.shape))
        sends[r] = (counts, items)
        expect, places = np.zeros(nranks, np.intp), []
        inc = [(b, s) for b, s, d in moves if d == r]
        if inc:
            (b, s) = inc[0]
            shape = (2 * n, int(widths[b]))
            expect[s] = math.prod(shape)
            places.append((s, _WHOLE, 0, expect[s], shape))
            destinations[r], arriving[r] = np.empty(shape, dtype), b
        recvcounts[r] = expect
        if places:
            recvs[r] = places
    execute(
        sources, sends, recvcounts, recvs, destinations, dtype, backend, sparse=True, adopt=True
    )
    for r, b in arriving.items():
        held[r][b] = destinations[r]


def _near_identity(m: np.ndarray, tau: float) -> np.ndarray:
    """Eigenvectors of the Hermitian `m`, ordered and rotated to be as close to ``I`` as may be.

    The k-th smallest eigenvalue's vector goes to the place of the k-th
    smallest diagonal element, and the vectors of eigenvalues closer than
    `tau` (a repeated eigenvalue: any basis of its space diagonalizes `m`)
    are rotated to the basis nearest the identity's columns (orthogonal
    Procrustes). Near convergence ``Z`` is then close to ``I`` rather than a
    sorting permutation or an arbitrary rotation, which would keep mixing
    converged columns between blocks (and converge linearly).
    """
    values, vectors = np.linalg.eigh(m)
    place = np.argsort(m.diagonal().real, kind="stable")
    z = np.empty_like(vectors)
    z[:, place] = vectors
    for group in np.split(np.arange(len(values)), np.flatnonzero(np.diff(values) > tau) + 1):
        if len(group) > 1:
            at = place[group]
            u, _, vh = np.linalg.svd(z[at][:, at])
            z[:, at] = z[:, at] @ (u @ vh).conj().T
    return z


def _rotate_pair(xa: np.ndarray, xb: np.ndarray, n: int, tau: float) -> float:
    """Diagonalize the pair's ``V^H A V`` if an off-diagonal element exceeds `tau`.

    ``xa = [V_I; W_I]`` and ``xb = [V_J; W_J]`` (``2n x w``) are updated in
    place. Returns the largest off-diagonal element before the rotation.
    """
    wa, wb = xa.shape[1], xb.shape[1]
    w = wa + wb
    if w < 2:
        return 0.0
    complex_ = xa.dtype.kind == "c"
    m = np.empty((w, w), xa.dtype)
    for rows, x in ((slice(0, wa), xa), (slice(wa, w), xb)):
        vh = x[:n].conj().T if complex_ else x[:n].T
        m[rows, :wa] = vh @ xa[n:]
        m[rows, wa:] = vh @ xb[n:]
    m += m.conj().T if complex_ else m.T
    m *= 0.5
    off = np.abs(m)
    np.fill_diagonal(off, 0.0)
    largest = float(off.max())
    if not largest > tau:
        return largest
    z = _near_identity(m, tau)
    chunk = max(1, _CHUNK_BYTES // (w * xa.itemsize))
    for r0 in range(0, 2 * n, chunk):
        r1 = min(r0 + chunk, 2 * n)
        y = np.concatenate((xa[r0:r1], xb[r0:r1]), axis=1) @ z
        xa[r0:r1], xb[r0:r1] = y[:, :wa], y[:, wa:]
    return largest


def _hermitian_columns(a: DistributedArray, dist: Distribution, upper: bool, work) -> dict:
    """The local columns of the Hermitian matrix whose `upper` (else lower) triangle `a` holds."""
    cols = a if a.distribution == dist else a.redistribute(dist)
    mirrored = matrix_transpose(a).redistribute(dist)  # its columns are a's rows
    out = {}
    for r in a.backend.local_ranks:
        glob = dist.maps[1].global_indices(r)
        rows = np.arange(a.shape[0])[:, None]
        other = (
            rows > glob[None, :] if upper else rows < glob[None, :]
        )  # the triangle not read from a
        t = mirrored.locals[r]
        h = np.where(other, np.conj(t) if work.kind == "c" else t, cols.locals[r]).astype(work)
        if work.kind == "c":  # LAPACK ignores the imaginary parts of the diagonal
            diag = (glob, np.arange(len(glob)))
            h[diag] = h[diag].real
        out[r] = h
    return out


def _scaled_norm(h: dict, backend) -> tuple[float, float]:
    """``(scale, ||A||_F / scale)``, `scale` a power of two near the largest element.

    NaN when an element is not finite; ``(1, 0)`` for the zero matrix. One
    allgather; the partial sums are added in rank order.
    """
    local = {}
    for r, b in h.items():
        big = float(np.abs(b).max()) if b.size else 0.0
        ssq = float(np.sum(np.abs(b / big) ** 2)) if big and np.isfinite(big) else 0.0
        local[r] = np.array([big, ssq])
    rows = backend.allgather_array(local)
    biggest = float(rows[:, 0].max())
    if not np.isfinite(biggest):
        return math.nan, 0.0
    if biggest == 0.0:
        return 1.0, 0.0
    scale = 2.0 ** round(math.log2(biggest))
    total = 0.0
    for big, ssq in rows:
        if big:
            total += ssq * (big / scale) ** 2
    return scale, math.sqrt(total)


def _check(a: DistributedArray, UPLO: str) -> tuple[bool, np.dtype, np.dtype]:
    if not isinstance(UPLO, str) or UPLO.upper() not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    probe = np.linalg.eigh(np.eye(1, dtype=a.dtype))  # NumPy's dtypes and its TypeError
    return UPLO.upper() == "U", probe.eigenvalues.dtype, probe.eigenvectors.dtype


METHODS = ("auto", "tridiagonal", "jacobi")


def _solve(a: DistributedArray, UPLO: str, block_size, vectors: bool, method: str = "auto"):
    """``(sorted eigenvalues on every process, eigenvector array or None)``."""
    upper, real_t, result_t = _check(a, UPLO)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    _check_block_size(block_size)
    if method == "tridiagonal" and tridiagonal.scipy_lapack() is None:
        raise ImportError("eigh(method='tridiagonal') needs SciPy's LAPACK: pip install scipy")
    work = np.dtype(np.complex128 if result_t.kind == "c" else np.float64)
    kinds = (upper, real_t, result_t, work)
    whole = a.backend.nranks == 1 and block_size is None  # LAPACK itself, in _jacobi
    if method == "jacobi" or (method == "auto" and (whole or tridiagonal.scipy_lapack() is None)):
        return _jacobi(a, kinds, block_size, vectors)
    found = _householder(a, kinds, block_size, vectors, forced=method == "tridiagonal")
    return _jacobi(a, kinds, block_size, vectors) if found is None else found


def _householder(a: DistributedArray, kinds, block_size, vectors: bool, forced: bool):
    """Householder reduction, LAPACK on ``T``, inverse iteration (`dapx.functions.tridiagonal`).

    None (the caller uses Jacobi, which gives NaN results at once) for a
    matrix with a non-finite element, and, unless `forced`, when some rank
    would hold more than twice its share of the eigenvectors (a cluster of
    eigenvalues that inverse iteration keeps together) or when inverse
    iteration failed on some rank.
    """
    upper, real_t, result_t, work = kinds
    n, backend = a.shape[0], a.backend
    nranks = backend.nranks
    nb = block_size or min(NB, max(1, -(-n // (2 * nranks))))
    dist = Distribution([BlockMap(n, nprocs=1), CyclicMap(n, nranks, nb)], (1, nranks))
    h = _hermitian_columns(a, dist, upper, work)
    scale, _ = _scaled_norm(h, backend)
    if not np.isfinite(scale):
        return None  # Jacobi's path gives the NaNs without iterating
    if scale != 1.0:
        for b in h.values():
            b /= scale
    d, e, taus = tridiagonal.reduce_to_tridiagonal(h, dist, backend)
    if not vectors:
        return (tridiagonal.tridiagonal_eigenvalues(d, e) * scale).astype(real_t), None
    values, cuts, z = tridiagonal.tridiagonal_eigenvectors(d, e, backend)
    roomy = np.diff(cuts).max() <= 2 * -(-n // nranks)
    if z is None or not (roomy or forced):
        if z is None and forced:
            raise LinAlgError("Eigenvectors did not converge")
        return None
    z = tridiagonal.back_transform(h, dist, taus, z, backend)
    held = Distribution([BlockMap(n, nprocs=1), BlockMap(n, cuts)], (1, nranks))
    out = {r: b.astype(result_t, copy=False) for r, b in z.items()}
    v = new_array(held, out, backend, result_t)
    return (values * scale).astype(real_t), v.redistribute(_target(a))


def _jacobi(a: DistributedArray, kinds, block_size, vectors: bool):
    """Parallel block Jacobi (this module's docstring)."""
    upper, real_t, result_t, work = kinds
    n, backend = a.shape[0], a.backend
    t = Tournament(n, backend.nranks, block_size)
    start = Distribution([BlockMap(n, nprocs=1), BlockMap(n, t.column_bounds())], (1, t.nranks))
    h = _hermitian_columns(a, start, upper, work)
    scale, norm = _scaled_norm(h, backend)
    finite = np.isfinite(scale)
    if backend.nranks == 1 and block_size is None and finite:
        (r,) = h  # one rank holds the whole matrix: LAPACK itself
        values, vecs = np.linalg.eigh(h[r], "U" if upper else "L")
        if not vectors:
            return values.astype(real_t), None
        dist = Distribution([BlockMap(n, nprocs=1), BlockMap(n, nprocs=1)], (1, 1))
        v = new_array(dist, {r: vecs.astype(result_t)}, backend, result_t)
        return values.astype(real_t), v.redistribute(_target(a))
    held = {}
    for r, cols in h.items():
        held[r], c0 = {}, int(start.maps[1].bounds[r])
        for pair in t.pairs(r):
            for b in pair:
                lo, hi = int(t.bounds[b]), int(t.bounds[b + 1])
                x = np.zeros((2 * n, hi - lo), work)
                x[n:] = cols[:, lo - c0 : hi - c0]
                if finite and scale != 1.0:
                    x[n:] /= scale
                x[lo + np.arange(hi - lo), np.arange(hi - lo)] = 1.0
                held[r][b] = x
        h[r] = None
    if finite:
        _iterate(held, t, n, TOL * _EPS * norm, work, backend)
    values = {}
    for r, blocks in held.items():
        parts = []
        for b in (b for pair in t.pairs(r) for b in pair):
            x = blocks[b]
            if not finite:
                x.fill(np.nan)
            parts.append(np.einsum("ij,ij->j", x[:n].conj(), x[n:]).real * scale)
        values[r] = np.concatenate(parts)
    every = np.concatenate(backend.allgather(values))
    order = np.argsort(every, kind="stable")
    if not vectors:
        return every[order].astype(real_t), None
    position = np.empty(n, np.intp)
    position[order] = np.arange(n)
    counts = [sum(int(t.widths[b]) for pair in t.pairs(r) for b in pair) for r in range(t.nranks)]
    starts = np.concatenate(([0], np.cumsum(counts)))
    indices = [position[starts[r] : starts[r + 1]] for r in range(t.nranks)]
    dist = Distribution([BlockMap(n, nprocs=1), UnstructuredMap(n, indices)], (1, t.nranks))
    out = {}
    for r, blocks in held.items():
        vs = [blocks.pop(b)[:n] for pair in t.pairs(r) for b in pair]
        out[r] = np.concatenate(vs, axis=1).astype(result_t) if vs else np.empty((n, 0), result_t)
    v = new_array(dist, out, backend, result_t)
    return every[order].astype(real_t), v.redistribute(_target(a))


def _iterate(held: dict, t: Tournament, n: int, tau: float, work, backend) -> None:
    """Sweeps of the round-robin until one rotates nothing (every rank decides alike)."""
    previous = math.inf
    for _ in range(MAX_SWEEPS):
        largest = dict.fromkeys(held, 0.0)
        for _step in range(2 * t.m - 1):
            for r, blocks in held.items():
                for i, j in t.pairs(r):
                    largest[r] = max(largest[r], _rotate_pair(blocks[i], blocks[j], n, tau))
            moves = t.advance()
            for direction in (1, -1):  # one block across each rank boundary, each way
                these = [mv for mv in moves if (mv[2] - mv[1]) * direction > 0]
                if these:
                    _exchange(held, these, n, t.widths, work, backend)
        worst = float(backend.allgather_array({r: np.float64(v) for r, v in largest.items()}).max())
        if not worst > tau or (worst <= _FLOOR * tau and worst > previous / 2):
            return  # nothing rotated, or rounding noise that rotations no longer reduce
        previous = worst
    raise LinAlgError("Eigenvalues did not converge")


def _target(a: DistributedArray) -> Distribution:
    """The eigenvectors' layout: the input's, or even blocks for a padded input."""
    d = a.distribution
    padded = d.is_padded or d.has_halo
    return Distribution.create(a.shape, nranks=a.backend.nranks) if padded else d


def eigh(
    a: DistributedArray, UPLO: str = "L", *, block_size: int | None = None, method: str = "auto"
):
    """`numpy.linalg.eigh` of one Hermitian matrix: ``(eigenvalues, eigenvectors)``.

    Parameters
    ----------
    a : DistributedArray
        An ``n x n`` matrix, any layout; only the triangle `UPLO` is read.
    UPLO : {'L', 'U'}
        The triangle read, as NumPy.
    block_size : int, optional
        Columns per block: the reduction's panels or Jacobi's blocks
        (`Tournament`). Given on one rank, the distributed method runs there
        too instead of LAPACK on the whole matrix.
    method : {'auto', 'tridiagonal', 'jacobi'}
        ``'tridiagonal'``: Householder reduction, bisection and inverse
        iteration (`dapx.functions.tridiagonal`, needs SciPy), even when a
        cluster of eigenvalues puts more than twice its share of eigenvectors
        on one rank. ``'jacobi'``: parallel block Jacobi (this module).
        ``'auto'``: the first, unless SciPy is missing, the matrix has a
        non-finite element, or such a cluster turns up (then Jacobi, which
        keeps every rank to its share).

    Returns
    -------
    eigenvalues : DistributedArray
        The ``n`` eigenvalues, ascending (NumPy's real dtype).
    eigenvectors : DistributedArray
        ``n x n``, column ``j`` the unit eigenvector of eigenvalue ``j``, in
        `a`'s layout (even blocks for a padded input). Unique up to a sign
        (phase), and within a repeated eigenvalue up to a rotation.

    Raises
    ------
    numpy.linalg.LinAlgError
        On every rank, when `MAX_SWEEPS` sweeps do not converge.

    Examples
    --------
    >>> import numpy as np, dapx
    >>> x = np.diag([3.0, 1.0, 2.0, 0.0])
    >>> w, v = eigh(dapx.asarray(x, backend=dapx.simulated(2)), block_size=1)
    >>> w.gather().tolist(), bool(np.allclose(np.abs(v.gather()).sum(axis=0), 1))
    ([0.0, 1.0, 2.0, 3.0], True)
    """
    values, v = _solve(a, UPLO, block_size, vectors=True, method=method)
    return from_replicated(values, a.backend), v


def eigvalsh(
    a: DistributedArray, UPLO: str = "L", *, block_size: int | None = None, method: str = "auto"
):
    """`numpy.linalg.eigvalsh` of one Hermitian matrix: its eigenvalues, ascending.

    The arguments are `eigh`'s; the eigenvalues of the tridiagonal matrix
    come from LAPACK's ``dsterf`` on every process (no clusters to place).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> x = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> np.round(eigvalsh(dapx.asarray(x, backend=dapx.simulated(2))).gather(), 12).tolist()
    [-1.0, 1.0]
    """
    values, _ = _solve(a, UPLO, block_size, vectors=False, method=method)
    return from_replicated(values, a.backend)
