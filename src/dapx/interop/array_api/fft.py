"""The standard's fft extension: `numpy.fft`, dispatched to dapx; frequencies distributed."""

from __future__ import annotations

import numpy as np

from ...core import creation
from ._devices import resolve_device

_NAMES = [
    "fft",
    "ifft",
    "fftn",
    "ifftn",
    "rfft",
    "irfft",
    "rfftn",
    "irfftn",
    "hfft",
    "ihfft",
    "fftshift",
    "ifftshift",
]
__all__ = [*_NAMES, "fftfreq", "rfftfreq"]
globals().update({name: getattr(np.fft, name) for name in _NAMES})


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """`numpy.fft.fftfreq` as a distributed array (each rank computes its own)."""
    values = np.fft.fftfreq(n, d)
    return creation.asarray(values.astype(dtype or np.float64), backend=resolve_device(device))


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """`numpy.fft.rfftfreq` as a distributed array."""
    values = np.fft.rfftfreq(n, d)
    return creation.asarray(values.astype(dtype or np.float64), backend=resolve_device(device))
