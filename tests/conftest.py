"""Suite-wide settings: hidden gathers fail, and pytester is available.

With the gather warning threshold at 0, every implicit conversion of a
DistributedArray to NumPy (``np.asarray(a)``, ``np.testing`` on one, ...)
emits `dapx.GatherWarning`, which ``filterwarnings = ["error"]`` turns into a
failure: tests must gather explicitly with ``.gather()``.
"""

from __future__ import annotations

import dapx

pytest_plugins = ["pytester"]

dapx.config.gather_warning_threshold = 0
