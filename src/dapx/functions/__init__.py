"""NumPy's functions on distributed arrays, written once for every backend.

Each module registers its implementations with `dapx.core.dispatch.implements`;
importing this package registers them all.
"""

from __future__ import annotations

from . import (  # noqa: F401 (each module registers its np.* implementations)
    along_axis,
    arranging,
    broadcasting,
    calculus,
    contraction,
    correlations,
    diagonals,
    elementwise_library,
    fourier,
    grids,
    histograms,
    introspection,
    joining,
    linalg,
    linalg_products,
    linear_algebra,
    manipulation,
    mathematical,
    nanreductions,
    overlap,
    placing,
    polynomials,
    quantiles,
    random,
    reductions,
    scans,
    selection,
    sets,
    shaping,
    sorting,
    stacking,
    statistics,
    ufunc_methods,
    unravel,
    windows,
)
