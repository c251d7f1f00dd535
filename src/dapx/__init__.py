"""dapx: distributed arrays that behave like NumPy arrays, built on the DAP.

The public namespace is assembled block by block below; every name is listed
in ``__all__``.
"""

from __future__ import annotations

from ._version import __version__

__all__ = ["__version__"]

from .errors import DAPError

__all__ += ["DAPError"]

from .grid import ProcessGrid, default_grid, dims_create

__all__ += ["ProcessGrid", "default_grid", "dims_create"]

from .maps import BlockMap, CyclicMap, Map, UnstructuredMap

__all__ += ["BlockMap", "CyclicMap", "Map", "UnstructuredMap"]

from .distribution import Distribution

__all__ += ["Distribution"]

from . import protocol

__all__ += ["protocol"]

from .errors import GatherWarning, RankError

__all__ += ["GatherWarning", "RankError"]

from .config import config

__all__ += ["config"]

from .backends import (
    Backend,
    dask_backend,
    default_backend,
    get_backend,
    set_backend,
    simulated,
    use_backend,
)
from .backends import (
    mpi_backend as mpi,
)

__all__ += [
    "Backend",
    "dask_backend",
    "default_backend",
    "get_backend",
    "mpi",
    "set_backend",
    "simulated",
    "use_backend",
]

from .array import DistributedArray

__all__ += ["DistributedArray"]

from .creation import (
    arange,
    asarray,
    empty,
    empty_like,
    from_distarray,
    from_local,
    fromfunction,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    zeros,
    zeros_like,
)

__all__ += [
    "arange",
    "asarray",
    "empty",
    "empty_like",
    "from_distarray",
    "from_local",
    "fromfunction",
    "full",
    "full_like",
    "linspace",
    "ones",
    "ones_like",
    "zeros",
    "zeros_like",
]

from . import random, testing

__all__ += ["random", "testing"]

from . import contraction as _contraction  # noqa: F401 (registers np.* implementations)
from . import joining as _joining  # noqa: F401 (registers np.* implementations)
from . import linalg as _linalg  # noqa: F401 (registers np.* implementations)
from . import manipulation as _manipulation  # noqa: F401 (registers np.* implementations)
from . import nanreductions as _nanreductions  # noqa: F401 (registers np.* implementations)
from . import quantiles as _quantiles  # noqa: F401 (registers np.* implementations)
from . import reductions as _reductions  # noqa: F401 (registers np.* implementations)
from . import scans as _scans  # noqa: F401 (registers np.* implementations)
from . import shaping as _shaping  # noqa: F401 (registers np.* implementations)
from . import sorting as _sorting  # noqa: F401 (registers np.* implementations)
from . import statistics as _statistics  # noqa: F401 (registers np.* implementations)
from .daskarray import from_dask
from .partitioned import from_partitioned

__all__ += ["from_dask", "from_partitioned"]

from . import broadcasting as _broadcasting  # noqa: F401 (registers np.* implementations)
from . import unravel as _unravel  # noqa: F401 (registers np.* implementations)
from . import windows as _windows  # noqa: F401 (registers np.* implementations)
from .overlap import map_overlap

__all__ += ["map_overlap"]

from ._xarray_hook import register_accessor_with_xarray as _register_xarray_accessor

_register_xarray_accessor()  # the .dap accessor, without importing xarray (see _xarray_hook)
