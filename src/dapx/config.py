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
    """

    __slots__ = ("gather_warning_threshold",)

    def __init__(self):
        self.gather_warning_threshold = int(
            os.environ.get("DAPX_GATHER_WARNING_THRESHOLD", 1_000_000)
        )

    def __repr__(self):
        return f"dapx.config(gather_warning_threshold={self.gather_warning_threshold})"


config = _Config()
