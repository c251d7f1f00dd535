"""`eigh` on real processes, both methods: NumPy's results, the simulated backend's bits.

Householder's reflectors and panels are broadcast from their owners and the
products ``A v`` allgathered; Jacobi's blocks move point to point (sparse
exchanges). Every rank must take the same decisions (fallbacks, sweeps,
convergence) from the collectives, or the run hangs or fails.
"""

from __future__ import annotations

import numpy as np
import pytest

import dapx
from dapx.functions import eigen

pytestmark = pytest.mark.mpi

la = np.linalg


def hermitian(n: int, dtype, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, n))
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal((n, n))
    return ((x + x.conj().T) / 2).astype(dtype)


@pytest.mark.parametrize("method", ["tridiagonal", "jacobi"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize(("n", "nb", "dist"), [(41, 3, "c"), (30, None, "b"), (5, 1, "b")])
def test_eigh_matches_numpy_and_the_simulated_bits(backend, dtype, n, nb, dist, method):
    x = hermitian(n, dtype, seed=n)
    x[:, 0] *= 1e-3  # a wider spread of eigenvalues (the upper triangle is not read)
    a = dapx.asarray(x, dist=dist, backend=backend)
    w, v = eigen.eigh(a, block_size=nb, method=method)
    got_w, got_v = w.gather(), v.gather()
    lower = np.tril(x, -1)
    a = lower + lower.conj().T + np.diag(x.diagonal().real)
    tol = 8 * n * np.finfo(float).eps * la.norm(a, 2)
    assert np.abs(got_w - la.eigvalsh(x)).max() <= tol
    assert la.norm(a @ got_v - got_v * got_w, 2) <= 2 * tol
    simulated = dapx.asarray(x, dist=dist, backend=dapx.simulated(backend.nranks))
    ref_w, ref_v = eigen.eigh(simulated, block_size=nb, method=method)
    assert np.array_equal(got_w, ref_w.gather())
    assert np.array_equal(got_v, ref_v.gather())


def test_eigvalsh_through_numpy_and_non_convergence_on_every_rank(backend, monkeypatch):
    x = hermitian(24, np.float64, seed=1)
    a = dapx.asarray(x, backend=backend)
    got = la.eigvalsh(a, "U").gather()
    assert np.abs(got - la.eigvalsh(x, "U")).max() <= 200 * np.finfo(float).eps * la.norm(x, 2)
    monkeypatch.setattr(eigen, "MAX_SWEEPS", 1)
    with pytest.raises(la.LinAlgError, match="did not converge"):  # raised by every rank
        eigen.eigvalsh(a, block_size=2, method="jacobi")


def test_a_cluster_sends_every_rank_to_jacobi(backend):
    """The fallback is decided from data every process has: no rank is left in a collective."""
    n = 24
    q = np.linalg.qr(np.random.default_rng(3).standard_normal((n, n)))[0]
    x = (q * np.r_[-2.0, -1.0, 1 + 1e-6 * np.arange(n - 2)]) @ q.T  # one cluster of 22
    a = dapx.asarray(x, backend=backend)
    w, v = eigen.eigh(a, block_size=2)
    jv = eigen.eigh(a, block_size=2, method="jacobi")[1]
    if backend.nranks >= 2:  # 22 vectors > 2 x 12 on one rank only from 3 ranks on
        same = np.array_equal(v.gather(), jv.gather())
        assert same == (backend.nranks >= 3)
    got = v.gather()
    assert la.norm(x @ got - got * w.gather(), 2) <= 16 * n * np.finfo(float).eps * la.norm(x, 2)
