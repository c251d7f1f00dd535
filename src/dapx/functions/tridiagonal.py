"""Householder tridiagonalization of a distributed Hermitian matrix, and its inverse.

The three stages of ScaLAPACK's ``pdsyevx`` (Golub and Van Loan 8.3, 8.4;
LAPACK's ``zhetrd``/``zlatrd``, ``dsterf``, ``dstein``, ``zunmtr``), on a
``1 x P`` grid whose columns are dealt in blocks of ``nb`` (DAP ``'c'`` with
``block_size``), every rank holding all rows of its columns:

* **Reduction** (`reduce_to_tridiagonal`), blocked right-looking: for each
  panel of ``nb`` columns (one block, so one rank's), column ``j`` of the
  lazily updated matrix ``A - V W^H - W V^H`` is formed by its owner, which
  computes the reflector ``H_j = I - tau v v^H`` with ``H_j^H x = beta e_1``
  (``beta`` real) and broadcasts ``(d_j, beta, tau, v)``. Every rank computes
  the rows of ``y = A v`` that its columns give (``A`` is Hermitian, so its
  columns' adjoints are rows) and one allgather assembles ``y``, from which
  every process forms the same ``w = tau y - tau (w^H v) v / 2``. At the end
  of the panel each rank subtracts ``V W^H + W V^H`` from its trailing columns
  (two GEMMs: the level-3 half of the flops). The reflectors stay where the
  columns were, as in LAPACK.
* **Tridiagonal eigenproblem** (`tridiagonal_eigenvectors`): the ``n``
  values of ``T`` on every process (``dsterf`` on each split-off block, the same bits
  everywhere); the eigen-indices are cut into one range per rank, nearly even,
  never inside a cluster (eigenvalues of a split-off block closer than
  ``1e-3 ||T_block||_1``, the ones ``dstein`` orthogonalizes against each
  other), and each rank computes its range's vectors by inverse iteration
  (``dstein``): vectors of different ranges are orthogonal through their
  eigenvalues' gaps, those within a cluster by reorthogonalization.
* **Back-transformation** (`back_transform`): ``V = Q Z`` with
  ``Q = H_0 H_1 ... H_{n-2}``, panel by panel from the last: the panel's
  owner forms ``I - V_p T_p V_p^H`` (LAPACK's ``larft``) and broadcasts
  ``[V_p; T_p]``; each rank applies it to its columns of ``Z``.

Memory per rank: its columns of ``A`` (reflectors in place), ``V`` and ``W``
of the current panel (``2 n nb``), one broadcast panel (``(n + nb) nb``), and
its range of eigenvectors (``n m`` for ``m`` eigen-indices: about ``n / P``,
more only when a cluster does not fit; `tridiagonal_eigenvectors` reports the
largest range so that a caller can choose another method). A collective
receives at most ``n + 3`` elements in the reduction (one broadcast and one
allgather per column) and one panel in the back-transformation.

Determinism: the reflectors, ``w`` and the panels are computed from the same
broadcast bits by every process, and ``y`` is assembled from one allgather, so
the simulated and MPI backends give bitwise identical results for the same
number of ranks.

Examples
--------
>>> import numpy as np, dapx
>>> x = np.array([[4.0, 1.0, 2.0], [1.0, 3.0, 0.0], [2.0, 0.0, 1.0]])
>>> backend = dapx.simulated(2)
>>> maps = [dapx.BlockMap(3, nprocs=1), dapx.CyclicMap(3, 2, 1)]
>>> dist = dapx.Distribution(maps, (1, 2))
>>> h = {r: x[:, dist.maps[1].global_indices(r)].copy() for r in backend.local_ranks}
>>> d, e, taus = reduce_to_tridiagonal(h, dist, backend)
>>> t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
>>> bool(np.allclose(np.linalg.eigvalsh(t), np.linalg.eigvalsh(x)))
True
"""

from __future__ import annotations

import numpy as np

from ..layout.distribution import Distribution

__all__ = [
    "ORTHOGONALIZE",
    "back_transform",
    "householder",
    "reduce_to_tridiagonal",
    "scipy_lapack",
    "tridiagonal_eigenvalues",
    "tridiagonal_eigenvectors",
]

#: Eigenvalues of a block closer than this times its 1-norm are a cluster (``dstein``'s ``ORTOL``).
ORTHOGONALIZE = 1e-3
_EPS = float(np.finfo(np.float64).eps)
_TINY = float(np.finfo(np.float64).tiny)


def scipy_lapack():
    """``scipy.linalg.lapack``, or None when SciPy is not installed (then `eigh` uses Jacobi)."""
    try:
        from scipy.linalg import lapack
    except ImportError:
        return None
    return lapack


def householder(x: np.ndarray) -> tuple[np.ndarray, complex, float]:
    """``(v, tau, beta)``: ``(I - tau v v^H)^H x = beta e_1``, ``v[0] = 1``, ``beta`` real.

    LAPACK's ``zlarfg``: ``tau = 0`` (the identity) when ``x`` is already
    ``beta e_1`` with a real ``beta``.

    Examples
    --------
    >>> v, tau, beta = householder(np.array([3.0, 4.0]))
    >>> h = np.eye(2) - tau * np.outer(v, v)
    >>> (np.round(h.T @ np.array([3.0, 4.0]), 12) + 0.0).tolist(), beta
    ([-5.0, 0.0], -5.0)
    """
    alpha, rest = x[0], x[1:]
    v = np.zeros_like(x)
    v[0] = 1
    norm = float(np.linalg.norm(rest)) if len(rest) else 0.0
    if norm == 0.0 and np.imag(alpha) == 0:
        return v, x.dtype.type(0), float(np.real(alpha))
    beta = -float(np.copysign(np.hypot(abs(alpha), norm), np.real(alpha)))
    v[1:] = rest / (alpha - beta)
    return v, (beta - alpha) / beta, beta


def _columns(dist: Distribution, backend) -> dict[int, np.ndarray]:
    return {r: dist.maps[1].global_indices(r) for r in backend.local_ranks}


def _places(dist: Distribution, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Each column's rank and local index (the column map's own `owner`)."""
    rank, local = dist.maps[1].owner(np.arange(n))
    return rank, local


def reduce_to_tridiagonal(h: dict, dist: Distribution, backend):
    """Reduce the Hermitian matrix whose columns `h` holds to ``T = Q^H A Q``, in place.

    Parameters
    ----------
    h : dict
        Each local rank's columns (all ``n`` rows, float64 or complex128) of
        the whole Hermitian matrix, in the column order of `dist`; on return
        column ``j`` holds reflector ``j``'s ``v`` in rows ``j + 1:``.
    dist : Distribution
        ``1 x P``, the columns block-cyclic (`CyclicMap` with ``block_size``).
    backend : Backend

    Returns
    -------
    d, e : numpy.ndarray
        The diagonal and off-diagonal of ``T`` (real), on every process.
    taus : numpy.ndarray
        The reflectors' ``tau``, on every process.
    """
    n, nranks = dist.global_shape[0], backend.nranks
    nb = dist.maps[1].block_size
    dtype = next(iter(h.values())).dtype
    cols = _columns(dist, backend)
    rank_of, local_of = _places(dist, n)
    held = np.bincount(rank_of, minlength=nranks)  # columns per rank
    passed = np.zeros(nranks, np.intp)  # columns 0 .. j per rank, as j advances
    d, e = np.zeros(n), np.zeros(max(n - 1, 0))
    taus = np.zeros(max(n - 1, 0), dtype)
    for k0 in range(0, n - 1, nb):
        k1 = min(k0 + nb, n - 1)
        owner = int(rank_of[k0])  # a panel is one block: one rank's
        v_panel = np.zeros((n, k1 - k0), dtype)
        w_panel = np.zeros((n, k1 - k0), dtype)
        for t, j in enumerate(range(k0, k1)):
            message = None
            if owner in h:
                lc = int(local_of[j])
                a = h[owner][j:, lc].copy()
                if t:
                    a -= v_panel[j:, :t] @ w_panel[j, :t].conj()
                    a -= w_panel[j:, :t] @ v_panel[j, :t].conj()
                v, tau, beta = householder(a[1:])
                h[owner][j + 1 :, lc] = v
                message = np.concatenate(([a[0].real, beta, tau], v)).astype(dtype, copy=False)
            message = backend.bcast_array(message, owner, (n - j + 2,), dtype)
            d[j], e[j], taus[j] = message[0].real, message[1].real, message[2]
            v = message[3:]
            v_panel[j + 1 :, t] = v
            passed[owner] += 1
            y = _trailing_times(
                h, cols, (rank_of, local_of, held, passed), v, v_panel, w_panel, j, t, backend
            )
            w = taus[j] * y
            w -= 0.5 * taus[j] * np.vdot(w, v) * v
            w_panel[j + 1 :, t] = w
        for r, block in h.items():  # the right-looking update of the trailing columns
            s = int(np.searchsorted(cols[r], k1))
            if s < block.shape[1]:
                c = cols[r][s:]
                block[k1:, s:] -= v_panel[k1:] @ w_panel[c].conj().T
                block[k1:, s:] -= w_panel[k1:] @ v_panel[c].conj().T
    if n:
        owner = int(rank_of[n - 1])
        last = h[owner][n - 1, -1].real if owner in h else None
        d[n - 1] = backend.bcast_array(last, owner, (), np.float64)
    return d, e, taus


def _trailing_times(h, cols, places, v, v_panel, w_panel, j, t, backend) -> np.ndarray:
    """``y``: the trailing matrix (rows and columns ``j + 1:``) times the reflector `v`.

    Each rank gives the rows of ``y`` its columns hold (``A`` is Hermitian:
    ``(A v)_i = conj(v^H A[:, i])``), corrected for the panel's earlier
    reflectors; one allgather of equal-length pieces assembles ``y``.
    `places` is each column's rank and local index, each rank's count of
    columns, and of columns ``0 .. j``.
    """
    rank_of, local_of, held, first = places
    width = int((held - first).max())
    wv = w_panel[j + 1 :, :t].conj().T @ v
    vv = v_panel[j + 1 :, :t].conj().T @ v
    pieces = {}
    for r, block in h.items():
        s = int(first[r])
        piece = np.zeros(width, block.dtype)
        y = np.conj(v.conj() @ block[j + 1 :, s:])
        if t:
            c = cols[r][s:]
            y -= v_panel[c, :t] @ wv + w_panel[c, :t] @ vv
        piece[: len(y)] = y
        pieces[r] = piece
    gathered = backend.allgather_array(pieces)
    rank = rank_of[j + 1 :]
    return gathered[rank, local_of[j + 1 :] - first[rank]]


def tridiagonal_eigenvalues(d: np.ndarray, e: np.ndarray) -> np.ndarray:
    """The eigenvalues of ``T``, ascending (LAPACK's ``dsterf``), on every process alike.

    Raises
    ------
    numpy.linalg.LinAlgError
        When the QL/QR iteration does not converge.

    Examples
    --------
    >>> tridiagonal_eigenvalues(np.array([2.0, 2.0]), np.array([1.0])).tolist()
    [1.0, 3.0]
    """
    if len(d) < 2:  # (SciPy's wrappers refuse an empty e)
        return d.copy()
    values, info = scipy_lapack().dsterf(d, e)
    if info:
        raise np.linalg.LinAlgError("Eigenvalues did not converge")
    return values


def tridiagonal_eigenvectors(d: np.ndarray, e: np.ndarray, backend):
    """Every process's eigenvalues of ``T`` and the local ranks' ranges of eigenvectors.

    Returns
    -------
    values : numpy.ndarray
        All ``n`` eigenvalues, ascending (the same bits everywhere).
    cuts : numpy.ndarray
        ``P + 1`` bounds: rank ``r`` holds eigenvectors ``cuts[r]:cuts[r + 1]``.
    vectors : dict or None
        Each local rank's ``n x m`` eigenvectors of ``T`` in that range, or
        None when inverse iteration failed on some rank (every process
        learns it from one allgather).
    """
    lapack, n, nranks = scipy_lapack(), len(d), backend.nranks
    if n < 2:  # (SciPy's wrappers refuse an empty e)
        cuts = np.minimum(np.arange(nranks + 1), n)
        return d.copy(), cuts, {r: np.eye(n, cuts[r + 1] - cuts[r]) for r in backend.local_ranks}
    w, block, split = _split_values(d, e, lapack)
    order = np.lexsort((np.arange(n), w))  # ascending; ties in the block order
    cuts = _ranges(d, e, w, block, split, order, nranks)
    vectors, failed = {}, {}
    for r in backend.local_ranks:
        chosen = np.sort(order[cuts[r] : cuts[r + 1]])  # dstein wants the block order
        blocks = np.zeros(n, np.int32)
        blocks[: len(chosen)] = block[chosen]
        z, info = lapack.dstein(d, e, w[chosen], blocks, split)
        place = np.argsort(w[chosen], kind="stable")
        vectors[r], failed[r] = z[:, : len(chosen)][:, place], np.int64(info != 0)
    if backend.allgather_array(failed).any():
        return w[order], cuts, None
    return w[order], cuts, vectors


def _split_values(d: np.ndarray, e: np.ndarray, lapack):
    """The eigenvalues of each split-off block, ascending within it (what ``dstein`` takes).

    ``T`` splits where ``e_j^2 <= eps^2 |d_j d_j+1| + tiny`` (``dstebz``'s
    test); each block's values come from ``dsterf`` (``O(n^2)`` at most, where
    bisection of every eigenvalue costs ~20 times more). Returns the values,
    each one's block (1-based) and the blocks' last rows (1-based, padded to
    ``n``), as ``dstebz`` with ``ORDER='B'`` gives them.
    """
    n = len(d)
    small = e * e <= _EPS**2 * np.abs(d[:-1] * d[1:]) + _TINY
    ends = np.r_[np.flatnonzero(small) + 1, n]
    starts = np.r_[0, ends[:-1]]
    values = d.copy()  # right for the blocks of one row
    for s, t in zip(starts[ends - starts > 1], ends[ends - starts > 1], strict=True):
        values[s:t], info = lapack.dsterf(d[s:t], e[s : t - 1])
        if info:
            raise np.linalg.LinAlgError("Eigenvalues did not converge")
    block = np.repeat(np.arange(1, len(ends) + 1, dtype=np.int32), ends - starts)
    split = np.zeros(n, np.int32)
    split[: len(ends)] = ends
    return values, block, split


def _ranges(d, e, w, block, split, order, nranks: int) -> np.ndarray:
    """Nearly even ranges of eigen-indices, each cluster within one range."""
    n = len(d)
    size = np.abs(d)
    size[1:] += np.abs(e)
    size[:-1] += np.abs(e)
    ends = split[: int(block.max())]  # the last row (1-based) of each split-off block
    norms = np.maximum.reduceat(size, np.r_[0, ends[:-1]])
    close = np.diff(w) < ORTHOGONALIZE * norms[block[1:] - 1]
    cluster = np.cumsum(np.r_[True, (np.diff(block) != 0) | ~close]) - 1
    position = np.empty(n, np.intp)
    position[order] = np.arange(n)
    first = np.full(cluster[-1] + 1, n)
    last = np.full(cluster[-1] + 1, -1)
    np.minimum.at(first, cluster, position)
    np.maximum.at(last, cluster, position)
    inside = np.zeros(n + 1, np.intp)  # a cut at p falls inside a cluster: first < p <= last
    np.add.at(inside, first + 1, 1)
    np.add.at(inside, last + 1, -1)
    allowed = np.flatnonzero(np.cumsum(inside) == 0)
    want = np.arange(nranks + 1) * n // nranks
    above = allowed[np.minimum(np.searchsorted(allowed, want), len(allowed) - 1)]
    below = allowed[np.maximum(np.searchsorted(allowed, want, side="right") - 1, 0)]
    cuts = np.where(want - below <= above - want, below, above)
    cuts[0], cuts[-1] = 0, n
    return np.maximum.accumulate(cuts)


def back_transform(h: dict, dist: Distribution, taus: np.ndarray, z: dict, backend) -> dict:
    """``Q Z`` for each local rank's columns `z` of ``Z``, ``Q`` the reflectors `h` holds.

    Panels from the last to the first: the owner broadcasts ``[V_p; T_p]``
    (``I - V_p T_p V_p^H = H_k0 ... H_k1-1``, LAPACK's ``larft``), every rank
    applies it to its rows ``k0 + 1:`` of ``Z``.
    """
    n = dist.global_shape[0]
    nb = dist.maps[1].block_size
    dtype = next(iter(h.values())).dtype  # float64 or complex128 on every rank; Z is real
    out = {r: b.astype(dtype) for r, b in z.items()}
    rank_of, local_of = _places(dist, n)
    for k0 in reversed(range(0, n - 1, nb)):
        k1 = min(k0 + nb, n - 1)
        owner, kb = int(rank_of[k0]), k1 - k0
        panel = None
        if owner in h:
            lc = int(local_of[k0])
            v = np.tril(h[owner][k0 + 1 :, lc : lc + kb])  # the unit lower trapezoid
            t = np.zeros((kb, kb), v.dtype)
            for i in range(kb):
                t[:i, i] = -taus[k0 + i] * (t[:i, :i] @ (v[:, :i].conj().T @ v[:, i]))
                t[i, i] = taus[k0 + i]
            panel = np.concatenate((v, t))
        panel = backend.bcast_array(panel, owner, (n - k0 - 1 + kb, kb), dtype)
        v, t = panel[: n - k0 - 1], panel[n - k0 - 1 :]
        for block in out.values():
            if block.shape[1]:
                block[k0 + 1 :] -= v @ (t @ (v.conj().T @ block[k0 + 1 :]))
    return out
