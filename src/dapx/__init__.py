"""dapx: distributed arrays that behave like NumPy arrays, built on the DAP.

The public namespace is assembled block by block below; every name is listed
in ``__all__``.
"""

from __future__ import annotations

from ._version import __version__

__all__ = ["__version__"]

from .errors import DAPError

__all__ += ["DAPError"]

from .grid import ProcessGrid, dims_create

__all__ += ["ProcessGrid", "dims_create"]

from .maps import BlockMap, CyclicMap, Map, UnstructuredMap

__all__ += ["BlockMap", "CyclicMap", "Map", "UnstructuredMap"]

from .distribution import Distribution

__all__ += ["Distribution"]

from . import protocol

__all__ += ["protocol"]
