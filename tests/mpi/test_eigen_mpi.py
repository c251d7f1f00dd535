"""`eigh` by parallel block Jacobi on real processes: NumPy's results, the simulated backend's bits.

The tournament's blocks move between processes point to point (sparse
exchanges); every rank must take the same decisions (sweeps, convergence)
from the allgathers, or the run hangs or fails.
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


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize(("n", "nb", "dist"), [(41, 3, "c"), (30, None, "b"), (5, 1, "b")])
def test_eigh_matches_numpy_and_the_simulated_bits(backend, dtype, n, nb, dist):
    x = hermitian(n, dtype, seed=n)
    x[:, 0] *= 1e-3  # a wider spread of eigenvalues (the upper triangle is not read)
    w, v = eigen.eigh(dapx.asarray(x, dist=dist, backend=backend), block_size=nb)
    got_w, got_v = w.gather(), v.gather()
    lower = np.tril(x, -1)
    a = lower + lower.conj().T + np.diag(x.diagonal().real)
    tol = 8 * n * np.finfo(float).eps * la.norm(a, 2)
    assert np.abs(got_w - la.eigvalsh(x)).max() <= tol
    assert la.norm(a @ got_v - got_v * got_w, 2) <= 2 * tol
    simulated = dapx.asarray(x, dist=dist, backend=dapx.simulated(backend.nranks))
    ref_w, ref_v = eigen.eigh(simulated, block_size=nb)
    assert np.array_equal(got_w, ref_w.gather())
    assert np.array_equal(got_v, ref_v.gather())


def test_eigvalsh_through_numpy_and_non_convergence_on_every_rank(backend, monkeypatch):
    x = hermitian(24, np.float64, seed=1)
    a = dapx.asarray(x, backend=backend)
    got = la.eigvalsh(a, "U").gather()
    assert np.abs(got - la.eigvalsh(x, "U")).max() <= 200 * np.finfo(float).eps * la.norm(x, 2)
    monkeypatch.setattr(eigen, "MAX_SWEEPS", 1)
    with pytest.raises(la.LinAlgError, match="did not converge"):  # raised by every rank
        eigen.eigvalsh(a, block_size=2)
