"""The four-step 1-D FFT on real processes: NumPy's results, the simulated backend's bits."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import dapx

pytestmark = pytest.mark.mpi

F = np.fft


@pytest.mark.parametrize("func", [F.fft, F.ifft, F.rfft, F.irfft, F.hfft, F.ihfft])
@pytest.mark.parametrize(("m", "n", "dist"), [(144, None, "b"), (100, 90, "c"), (35, 48, "b")])
def test_four_step_matches_numpy_and_the_simulated_bits(backend, func, m, n, dist):
    rng = np.random.default_rng(m)
    x = rng.standard_normal(m)
    if func in (F.fft, F.ifft, F.irfft, F.hfft):
        x = x + 1j * rng.standard_normal(m)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dapx.GatherWarning)
        got = func(dapx.asarray(x, dist=dist, backend=backend), n=n, norm="ortho")
        ref = func(
            dapx.asarray(x, dist=dist, backend=dapx.simulated(backend.nranks)), n=n, norm="ortho"
        )
    want = func(x, n=n, norm="ortho")
    g = got.gather()
    assert g.dtype == want.dtype and g.shape == want.shape
    assert np.linalg.norm(g - want) <= 8 * math.log2(want.size) * 2.3e-16 * np.linalg.norm(want)
    assert got.distribution == ref.distribution
    assert np.array_equal(g, ref.gather())
