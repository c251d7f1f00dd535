"""Run-time settings of dapx."""

from __future__ import annotations

import os

__all__ = ["config"]


class _Config:
    """Settings read from the environment at import and changeable at run time.

    Attributes
    ----------
    gather_warning_threshold : int
        Arrays with more elements than this emit `dapx.GatherWarning` when
        converted implicitly to NumPy (``DAPX_GATHER_WARNING_THRESHOLD``,
        default 1_000_000).
    fft_layout : {"transposed", "input"}
        The layout of `numpy.fft` results on distributed arrays
        (``DAPX_FFT_LAYOUT``, default ``"transposed"``): the layout of the
        last transpose of a slab or pencil transform, which needs no further
        exchange (as mpi4py-fft's ``forward``), or the input's layout (one
        more exchange). Inverse transforms of a transposed result return to
        the original layout either way (see `dapx.functions.fft_transposes`).
    """

    __slots__ = ("_fft_layout", "gather_warning_threshold")

    def __init__(self):
        self.gather_warning_threshold = int(
            os.environ.get("DAPX_GATHER_WARNING_THRESHOLD", 1_000_000)
        )
        self.fft_layout = os.environ.get("DAPX_FFT_LAYOUT", "transposed")

    @property
    def fft_layout(self) -> str:
        return self._fft_layout

    @fft_layout.setter
    def fft_layout(self, value: str) -> None:
        if value not in ("transposed", "input"):
            raise ValueError(f"fft_layout must be 'transposed' or 'input', got {value!r}")
        self._fft_layout = value

    def __repr__(self):
        return (
            f"dapx.config(gather_warning_threshold={self.gather_warning_threshold}, "
            f"fft_layout={self.fft_layout!r})"
        )


config = _Config()
