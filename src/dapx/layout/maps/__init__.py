"""One immutable map per kind of 1-D distribution.

A map describes how the indices ``0 .. size-1`` of one array dimension are
laid out over the ``nprocs`` grid ranks along that dimension. It answers every
index question without communication and without a Python loop over elements,
and it round-trips to and from the DAP dimension dictionaries of all its grid
ranks (`dim_dict` / `from_dim_dicts`), which the tests use as an oracle.

Vocabulary used throughout:

* *local order*: the order of a rank's local buffer, padding included;
* *owned* indices: those a rank is the owner of. Boundary padding is owned
  (it counts toward ``size``); communication padding is a copy of indices
  owned by a neighbour.

A `BlockMap` with ``ghost_edges=True`` follows dapx's halo semantics instead:
*all* padding is ghost cells (not owned, not counted in ``size``), including
the padding at a non-periodic domain edge, which holds boundary-condition
values rather than data. Its ``size`` is the domain; its DAP dictionaries
(`BlockMap.dim_dict`) still describe the padding exactly as the DAP does, as
boundary padding that the exported ``size`` counts (see `BlockMap.as_dap`
and `BlockMap.as_halo`, which convert between the two readings).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import DAPError
from .base import Map, even_bounds
from .block import BlockMap
from .cyclic import CyclicMap
from .unstructured import UnstructuredMap

__all__ = ["BlockMap", "CyclicMap", "Map", "UnstructuredMap", "even_bounds", "map_from_dim_dicts"]


_MAP_TYPES = {"b": BlockMap, "c": CyclicMap, "u": UnstructuredMap}


def map_from_dim_dicts(dicts: Sequence[dict]) -> Map:
    """Build the map of one dimension from the normalised v0.10 dicts of its grid ranks.

    The dicts must already have passed `dapx.protocol.validate_distbuffer`
    (they are complete), be one per grid rank in grid-rank order, and agree on
    the keys that must be equal along the dimension.
    """
    if not dicts:
        raise DAPError("a dimension needs at least one dimension dictionary")
    return _MAP_TYPES[dicts[0]["dist_type"]].from_dim_dicts(dicts)
