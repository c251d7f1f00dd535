"""Parsing the description given to `Distribution.create` into per-dimension maps.

`Distribution.create` accepts specs per dimension (``"b"``, ``"c"``, ``"u"``,
``"n"`` or dicts), grid sizes with free entries, block sizes, DAP padding,
periodicity and halos, each given once for every dimension, per dimension or
(halos) by axis. The helpers here normalise those to one entry per
dimension, check them, resolve the process grid and build each dimension's
`Map`; `by_axis` is shared with the other options given by axis (halo
boundary conditions, overlap depths).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import DAPError
from .checks import per_dim
from .grid import default_grid
from .maps import BlockMap, CyclicMap, UnstructuredMap, even_bounds

if TYPE_CHECKING:
    from .distribution import Distribution

__all__ = ["by_axis", "with_halo"]


_DIST_NAMES = {
    "b": "b",
    "block": "b",
    "c": "c",
    "cyclic": "c",
    "u": "u",
    "unstructured": "u",
    "n": "n",
    None: "n",
}
_SPEC_KEYS = {
    "dist",
    "dist_type",
    "bounds",
    "block_size",
    "indices",
    "one_to_one",
    "padding",
    "periodic",
    "halo",
}


def per_dim_spec(dist, ndim):
    if dist is None:
        return ["b"] * ndim
    if isinstance(dist, (str, Mapping)):
        return [dist] * ndim
    if not isinstance(dist, Sequence):
        raise TypeError(f"dist must be a spec or one spec per dimension, got {dist!r}")
    dist = list(dist)
    if len(dist) != ndim:
        raise ValueError(f"dist needs one entry per dimension ({ndim}), got {len(dist)}: {dist}")
    return dist


def per_dim_padding(padding, ndim):
    """Padding is one int for every dimension, or one entry per dimension."""
    if padding is None or isinstance(padding, (int, np.integer)):
        return [padding] * ndim
    if not isinstance(padding, (Sequence, np.ndarray)):
        raise TypeError(f"padding must be an int or one entry per dimension, got {padding!r}")
    padding = list(padding)
    if len(padding) != ndim:
        raise ValueError(
            f"padding needs an int or one entry per dimension ({ndim}), got {padding}; "
            "an entry is an int, a (lo, hi) pair, or one pair per grid rank"
        )
    return padding


def by_axis(entries: Mapping, ndim: int, what: str) -> dict[int, Any]:
    """`entries` keyed by axis (negatives count from the end), checked, as ``{axis: value}``.

    Halos, boundary conditions and overlap depths may all be given this way.

    >>> by_axis({-1: 2, 0: 1}, 3, "halo")
    {2: 2, 0: 1}
    """
    out = {}
    for axis, value in entries.items():
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"{what} dict keys must be axes (ints), got {axis!r}")
        if not -ndim <= axis < ndim:
            raise ValueError(f"{what} names axis {axis}, out of range for {ndim} dimensions")
        out[int(axis) % ndim] = value
    return out


def per_dim_halo(halo, ndim):
    """A halo is one int, one int or (lo, hi) per dimension, or a dict by axis."""
    if halo is None:
        return [None] * ndim
    if isinstance(halo, Mapping):
        out = [None] * ndim
        for axis, width in by_axis(halo, ndim, "halo").items():
            out[axis] = width
        return out
    if isinstance(halo, (int, np.integer)) and not isinstance(halo, bool):
        return [halo] * ndim
    if not isinstance(halo, (Sequence, np.ndarray)) or isinstance(halo, str):
        raise TypeError(
            f"halo must be an int, one int or (lo, hi) pair per dimension, or a dict by axis, "
            f"got {halo!r}"
        )
    halo = list(halo)
    if ndim == 1 and len(halo) == 2 and all(np.ndim(h) == 0 for h in halo):
        return [tuple(halo)]  # a 1-d array's (lo, hi)
    if len(halo) != ndim:
        raise ValueError(
            f"halo needs an int or one entry per dimension ({ndim}), got {halo}; "
            "an entry is an int or a (lo, hi) pair"
        )
    return halo


def halo_pair(width, dim) -> tuple[int, int] | None:
    if width is None:
        return None
    pair = (width, width) if np.ndim(width) == 0 else tuple(np.asarray(width).tolist())
    if len(pair) != 2 or any(
        isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 0 for w in pair
    ):
        raise ValueError(
            f"dimension {dim}: a halo is an int >= 0 or a (lo, hi) pair of them, got {width!r}"
        )
    return int(pair[0]), int(pair[1])


def parse_spec(spec, dim, block_size, padding, periodic, halo=None):
    if isinstance(spec, Mapping):
        unknown = set(spec) - _SPEC_KEYS
        if unknown:
            raise ValueError(f"dimension {dim}: unknown key(s) {sorted(unknown)} in {dict(spec)}")
        kind = spec.get("dist", spec.get("dist_type", "b"))
        options = dict(spec)
    else:
        kind, options = spec, {}
    if kind not in _DIST_NAMES:
        raise ValueError(
            f"dimension {dim}: unknown distribution {kind!r}; use 'b', 'c', 'u' or 'n'/None"
        )
    kind = _DIST_NAMES[kind]
    for key, value in (
        ("block_size", block_size),
        ("padding", padding),
        ("periodic", periodic),
        ("halo", halo),
    ):
        if value is not None and key not in options:
            options[key] = value
    options["halo"] = halo_pair(options.get("halo"), dim)
    if options["halo"] is not None and _has_padding(options.get("padding")):
        raise TypeError(f"dimension {dim}: pass either padding or halo, not both")
    if kind != "c" and options.get("block_size") not in (None, 1) and block_size is None:
        raise ValueError(f"dimension {dim}: block_size applies to cyclic dimensions only")
    if kind != "c":
        options.pop("block_size", None)
    if kind in ("c", "u") and _has_padding(options.get("padding")):
        raise DAPError(
            f"dim {dim}: padding applies only to block dimensions, not dist {kind!r}; "
            "redistribute to block first"
        )
    if kind in ("c", "u") and options["halo"] is not None and any(options["halo"]):
        raise DAPError(
            f"dim {dim}: a halo {options['halo']} applies only to block dimensions, not "
            f"dist {kind!r} (its neighbours' indices are not adjacent); use dist='b' there"
        )
    if kind in ("c", "u") and options.get("periodic"):
        raise DAPError(f"dim {dim}: periodic applies only to block dimensions, not dist {kind!r}")
    return kind, options


def _has_padding(p):
    return p is not None and np.any(np.asarray(p) != 0)


def resolve_grid(parsed, grid, nranks, shape):
    ndim = len(shape)
    fixed = []
    for kind, options in parsed:
        if kind == "n":
            fixed.append(1)
        elif kind == "u" and "indices" in options:
            fixed.append(len(options["indices"]))
        elif kind == "b" and "bounds" in options:
            fixed.append(len(options["bounds"]) - 1)
        else:
            fixed.append(0)
    if grid is None:
        dims = fixed
    else:
        grid = list(grid)
        if len(grid) != ndim:
            raise ValueError(f"grid needs one entry per dimension ({ndim}), got {grid}")
        dims = []
        for i, (g, f) in enumerate(zip(grid, fixed)):
            g = 0 if g is None else g
            if f and g and f != g:
                raise ValueError(
                    f"dimension {i}: grid size {g} conflicts with the {f} ranks its "
                    f"distribution describes"
                )
            dims.append(g or f)
    if all(d > 0 for d in dims):
        return tuple(dims)
    if nranks is None:
        nranks = int(os.environ.get("DAPX_RANKS", "4"))
    halo_widths = [max(options.get("halo") or (1,)) for _, options in parsed]
    return default_grid(shape, nranks, dims, min_extent=halo_widths)


def build_map(parsed, size, nprocs, dim):
    kind, options = parsed
    try:
        if kind == "n":
            if nprocs != 1:
                raise ValueError(f"an undistributed dimension needs grid size 1, got {nprocs}")
            kind = "b"
        if kind == "b":
            bounds = options.get("bounds")
            bounds = even_bounds(size, nprocs) if bounds is None else np.asarray(bounds)
            halo = options.get("halo")
            padding = options.get("padding") if halo is None else halo
            if halo is not None and halo[0] != halo[1] and (nprocs > 1 or options.get("periodic")):
                raise DAPError(
                    f"the halo {halo} is asymmetric, which the DAP allows only on an "
                    "undistributed, non-periodic dimension (the high halo of each rank is "
                    "the low halo of its neighbour): use a symmetric halo "
                    f"{max(halo)} here"
                )
            return BlockMap(
                size,
                bounds,
                nprocs=nprocs,
                padding=_padding_table(padding, nprocs),
                periodic=bool(options.get("periodic") or False),
                ghost_edges=halo is not None,
            )
        if kind == "c":
            block_size = options.get("block_size")
            return CyclicMap(size, nprocs, 1 if block_size is None else block_size)
        if "indices" not in options:
            raise ValueError("an unstructured dimension needs 'indices' (one array per rank)")
        return UnstructuredMap(size, options["indices"], options.get("one_to_one"))
    except DAPError as e:
        hint = ""
        if options.get("halo") is not None and "wider than" in str(e):
            hint = " (a halo may not be wider than a neighbour's block: use fewer ranks "
            hint += "along this dimension or a narrower halo)"
        raise DAPError(f"dim {dim}: {e}{hint}") from None
    except ValueError as e:
        raise ValueError(f"dimension {dim}: {e}") from None


def _padding_table(padding, nprocs):
    if padding is None:
        return None
    p = np.asarray(padding)
    if p.dtype.kind not in "iu":
        raise ValueError(f"padding must be integers, got {padding!r}")
    if p.ndim == 0:
        return np.full((nprocs, 2), int(p), np.intp)
    if p.shape == (2,):
        return np.tile(p.astype(np.intp), (nprocs, 1))
    if p.shape == (nprocs, 2):
        return p.astype(np.intp)
    raise ValueError(
        f"padding must be an int, a (lo, hi) pair, or one pair per grid rank ({nprocs}), "
        f"got {padding!r}"
    )


def with_halo(dist: Distribution, halo, periodic) -> Distribution:
    """`dist`'s blocks (even blocks for other dimensions) on its grid, with a new halo."""
    halos = per_dim_halo(halo, dist.ndim)
    periodics = per_dim(periodic, dist.ndim, "periodic")
    maps = []
    for k, (m, h, p) in enumerate(zip(dist.maps, halos, periodics)):
        lo, hi = halo_pair(h, k) or (0, 0)
        block = isinstance(m, BlockMap)
        p = (m.periodic if block else False) if p is None else bool(p)
        if lo != hi and (m.nprocs > 1 or p):
            raise DAPError(
                f"dim {k}: the halo {(lo, hi)} is asymmetric, which the DAP allows only on an "
                f"undistributed, non-periodic dimension: use a symmetric halo {max(lo, hi)}"
            )
        padding = np.tile(np.array([lo, hi], np.intp), (m.nprocs, 1))
        try:
            maps.append(
                BlockMap(
                    m.size,
                    m.bounds if block else None,
                    nprocs=m.nprocs,
                    padding=padding,
                    periodic=p,
                    ghost_edges=True,
                )
            )
        except DAPError as e:
            raise DAPError(f"dim {k}: {e}") from None
    return type(dist)(maps, dist.grid)
