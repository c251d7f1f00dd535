"""The Distributed Array Protocol (``__distarray__``): validation and versions.

`validate_distbuffer` checks every rule that can be checked on one rank and
returns the distbuffer in a normal form: DAP v0.10 semantics, complete
dimension dictionaries (every optional key present with its default), plain
Python ints, tuples for padding and ``intp`` arrays for indices. Rules that
need every rank's dictionary (coverage, matching padding, grid layout) are
checked by `dapx.Distribution.from_distbuffers`.

Versions 0.10.x are read as they are; 0.9.x is converted (its ``'n'``
dist_type and its padded ``start``/``stop``, which excluded communication
padding). Any other major version is rejected.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..errors import DAPError, dap_error
from .maps import CyclicMap

__all__ = [
    "PROTOCOL_VERSION",
    "DAPError",
    "Distbuffer",
    "normalize_dim_dict",
    "parse_version",
    "validate_distbuffer",
]

#: The version dapx emits.
PROTOCOL_VERSION = "0.10.0"

_VERSION_RE = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")
_TOP_KEYS = frozenset({"__version__", "buffer", "dim_data"})
_COMMON = ("dist_type", "size", "proc_grid_size", "proc_grid_rank")
_REQUIRED = {"b": ("start", "stop"), "c": ("start",), "u": ("indices",)}
_OPTIONAL = {"b": ("padding", "periodic"), "c": ("block_size",), "u": ("one_to_one",)}


class Distbuffer(NamedTuple):
    """A validated distbuffer in normal form (v0.10 semantics, complete dicts)."""

    version: str
    """The version the producer declared."""
    buffer: np.ndarray
    """The local buffer as a NumPy array sharing memory with the producer's."""
    dim_data: tuple[dict, ...]
    """Complete v0.10 dimension dictionaries, one per dimension."""


def parse_version(version: Any, *, rank: int | None = None) -> tuple[int, int, int]:
    """Parse and check a ``__version__`` string; return (major, minor, patch).

    Accepted: 0.9.x and 0.10.x (and later 0.y.z minor versions, which the
    protocol declares backwards compatible).

    >>> parse_version("0.10.0")
    (0, 10, 0)
    >>> parse_version("1.0.0")
    Traceback (most recent call last):
    ...
    dapx.errors.DAPError: key '__version__': major version 1 is not supported ...
    """
    if not isinstance(version, str):
        raise dap_error(
            f"must be a 'major.minor.patch' string, got {version!r}", rank=rank, key="__version__"
        )
    m = _VERSION_RE.fullmatch(version)
    if m is None:
        raise dap_error(
            f"{version!r} is not of the form 'major.minor.patch'", rank=rank, key="__version__"
        )
    major, minor, patch = (int(g) for g in m.groups())
    if major != 0:
        raise dap_error(
            f"major version {major} is not supported (dapx reads 0.9.x and 0.10.x)",
            rank=rank,
            key="__version__",
        )
    if minor < 9:
        raise dap_error(
            f"version {version} predates 0.9 and is not supported (dapx reads 0.9.x and 0.10.x)",
            rank=rank,
            key="__version__",
        )
    return major, minor, patch


def validate_distbuffer(distbuffer: Any, *, rank: int | None = None) -> Distbuffer:
    """Check every single-rank DAP rule and return the distbuffer in normal form.

    Parameters
    ----------
    distbuffer : Mapping
        What a producer's ``__distarray__()`` returned.
    rank : int, optional
        The process rank the dict came from, for error messages.

    Raises
    ------
    DAPError
        Naming the rank, dimension, key and rule that were broken.

    Examples
    --------
    >>> import numpy as np
    >>> db = {"__version__": "0.10.0", "buffer": np.zeros(3),
    ...       "dim_data": ({"dist_type": "c", "size": 6, "proc_grid_size": 2,
    ...                     "proc_grid_rank": 1, "start": 1},)}
    >>> validate_distbuffer(db).dim_data[0]["block_size"]
    1
    >>> db["dim_data"][0]["start"] = 0
    >>> validate_distbuffer(db, rank=1)
    Traceback (most recent call last):
    ...
    dapx.errors.DAPError: rank 1, dim 0, key 'start': must be 1 for grid rank 1 ...
    """
    if not isinstance(distbuffer, Mapping):
        raise dap_error(
            f"a distbuffer must be a dict with keys {sorted(_TOP_KEYS)}, "
            f"got {type(distbuffer).__name__}",
            rank=rank,
        )
    missing = _TOP_KEYS - distbuffer.keys()
    if missing:
        raise dap_error(f"distbuffer lacks required key(s) {sorted(missing)}", rank=rank)
    unknown = distbuffer.keys() - _TOP_KEYS
    if unknown:
        raise dap_error(f"distbuffer has unknown key(s) {sorted(unknown)}", rank=rank)
    version = distbuffer["__version__"]
    _, minor, _ = parse_version(version, rank=rank)
    buffer = _as_buffer(distbuffer["buffer"], rank)
    dim_data = distbuffer["dim_data"]
    if not isinstance(dim_data, (tuple, list)):
        raise dap_error(
            f"must be a tuple of dimension dictionaries, got {type(dim_data).__name__}",
            rank=rank,
            key="dim_data",
        )
    if len(dim_data) != buffer.ndim:
        raise dap_error(
            f"has {len(dim_data)} dimension dictionaries but the buffer has "
            f"{buffer.ndim} dimensions (shape {buffer.shape})",
            rank=rank,
            key="dim_data",
        )
    dims = tuple(
        normalize_dim_dict(dd, buffer.shape[i], minor=minor, dim=i, rank=rank)
        for i, dd in enumerate(dim_data)
    )
    return Distbuffer(version, buffer, dims)


def normalize_dim_dict(
    dim_dict: Any,
    length: int,
    *,
    minor: int = 10,
    dim: int | None = None,
    rank: int | None = None,
) -> dict:
    """Validate one dimension dictionary against a buffer `length`; return its normal form.

    Parameters
    ----------
    dim_dict : Mapping
        A v0.9 (``minor=9``) or v0.10 dimension dictionary.
    length : int
        ``buffer.shape[dim]``.

    Examples
    --------
    >>> normalize_dim_dict({}, 4)  # doctest: +NORMALIZE_WHITESPACE
    {'dist_type': 'b', 'size': 4, 'proc_grid_size': 1, 'proc_grid_rank': 0,
     'start': 0, 'stop': 4, 'padding': (0, 0), 'periodic': False}
    >>> normalize_dim_dict({"dist_type": "n", "size": 4}, 4, minor=9)["dist_type"]
    'b'
    """

    def fail(rule, key=None):
        return dap_error(rule, rank=rank, dim=dim, key=key)

    if not isinstance(dim_dict, Mapping):
        raise fail(f"a dimension dictionary must be a dict, got {type(dim_dict).__name__}")
    if not dim_dict:
        return _block_dict(length, 1, 0, 0, length, (0, 0), False)
    d = dict(dim_dict)
    if "dist_type" not in d:
        raise fail("every dimension dictionary needs 'dist_type'", "dist_type")
    dist_type = d["dist_type"]
    if minor == 9 and dist_type == "n":
        return _from_v09_undistributed(d, length, fail)
    if not isinstance(dist_type, str) or dist_type not in _REQUIRED:
        allowed = "'b', 'c', 'u'" + (" or 'n'" if minor == 9 else "")
        raise fail(f"must be one of {allowed}, got {dist_type!r}", "dist_type")
    allowed_keys = set(_COMMON) | set(_REQUIRED[dist_type]) | set(_OPTIONAL[dist_type])
    if minor == 9:
        allowed_keys.add("periodic")  # 0.9 allowed 'periodic' on every dist_type
    for key in (*_COMMON, *_REQUIRED[dist_type]):
        if key not in d:
            raise fail(f"dist_type {dist_type!r} requires this key", key)
    unknown = d.keys() - allowed_keys
    if unknown:
        raise fail(f"unknown key(s) {sorted(unknown)} for dist_type {dist_type!r}")
    size = _int(d["size"], "size", fail, minimum=0)
    P = _int(d["proc_grid_size"], "proc_grid_size", fail, minimum=1)
    r = _int(d["proc_grid_rank"], "proc_grid_rank", fail, minimum=0)
    if r >= P:
        raise fail(f"must be < proc_grid_size ({P}), got {r}", "proc_grid_rank")
    if dist_type == "b":
        return _normalize_block(d, length, size, P, r, minor, fail)
    if minor == 9 and d.pop("periodic", False):
        raise fail(
            f"periodic=True on dist_type {dist_type!r} cannot be represented in v0.10 "
            "(only block dimensions are periodic)",
            "periodic",
        )
    if dist_type == "c":
        return _normalize_cyclic(d, length, size, P, r, fail)
    return _normalize_unstructured(d, length, size, P, r, fail)


def _block_dict(size, P, r, start, stop, padding, periodic):
    return {
        "dist_type": "b",
        "size": size,
        "proc_grid_size": P,
        "proc_grid_rank": r,
        "start": start,
        "stop": stop,
        "padding": padding,
        "periodic": periodic,
    }


def _normalize_block(d, length, size, P, r, minor, fail):
    start = _int(d["start"], "start", fail)
    stop = _int(d["stop"], "stop", fail)
    padding = _padding(d.get("padding", (0, 0)), fail)
    periodic = _bool(d.get("periodic", False), "periodic", fail)
    lo, hi = padding
    comm_lo, comm_hi = (True, True) if periodic else (r > 0, r < P - 1)
    comm_lo_w, comm_hi_w = (lo if comm_lo else 0), (hi if comm_hi else 0)
    if minor == 9:
        # 0.9's start/stop bound the owned indices; 0.10's include communication padding.
        owned_start, owned_stop = start, stop
        start, stop = start - comm_lo_w, stop + comm_hi_w
    else:
        owned_start, owned_stop = start + comm_lo_w, stop - comm_hi_w
    if not periodic and start < 0:
        raise fail(f"must be >= 0, got {start}", "start")
    if not periodic and stop > size:
        raise fail(f"must be <= size ({size}), got {stop}", "stop")
    if stop < start:
        raise fail(f"must be >= start ({start}), got {stop}", "stop")
    if not 0 <= owned_start <= owned_stop <= size:
        raise fail(
            f"the owned range {owned_start}..{owned_stop} (start/stop without "
            f"communication padding {comm_lo_w, comm_hi_w}) must lie within 0..{size}",
            "start",
        )
    if stop - start != length:
        raise fail(
            f"stop - start ({stop} - {start} = {stop - start}) must equal the buffer's "
            f"length in this dimension ({length})",
            "stop",
        )
    if r == 0 and owned_start != 0:
        raise fail(
            f"grid rank 0 owns the first block, which starts at index 0; start {start} with "
            f"communication padding {comm_lo_w} puts it at {owned_start}, leaving a gap",
            "start",
        )
    if lo + hi > stop - start:
        raise fail(f"padding {padding} is wider than the local extent ({stop - start})", "padding")
    return _block_dict(size, P, r, start, stop, padding, periodic)


def _normalize_cyclic(d, length, size, P, r, fail):
    block_size = _int(d.get("block_size", 1), "block_size", fail, minimum=1)
    start = _int(d["start"], "start", fail, minimum=0)
    expected = min(r * block_size, size)
    # Note: an empty section is "start == size" in 0.10; the natural r * block_size (past the
    # end) says the same and is accepted, then normalised to size.
    if expected == size and start >= size:
        start = size
    if start != expected:
        raise fail(
            f"must be {expected} for grid rank {r} with block_size {block_size} "
            f"and size {size}, got {start}",
            "start",
        )
    count = CyclicMap(size, P, block_size).local_length(r)
    if count != length:
        raise fail(
            f"grid rank {r} of {P} holds {count} indices of a size-{size} cyclic dimension "
            f"with block_size {block_size}, but the buffer's length is {length}",
            "size",
        )
    return {
        "dist_type": "c",
        "size": size,
        "proc_grid_size": P,
        "proc_grid_rank": r,
        "start": start,
        "block_size": block_size,
    }


def _normalize_unstructured(d, length, size, P, r, fail):
    try:
        indices = np.asarray(
            memoryview(d["indices"]) if not isinstance(d["indices"], np.ndarray) else d["indices"]
        )
    except TypeError:
        raise fail(
            f"must be a buffer of integers, got {type(d['indices']).__name__}", "indices"
        ) from None
    if indices.size == 0 and indices.ndim == 1:
        indices = indices.astype(np.intp)
    if indices.ndim != 1 or indices.dtype.kind not in "iu":
        raise fail(
            f"must be a 1-D buffer of integers, got shape {indices.shape} dtype {indices.dtype}",
            "indices",
        )
    if indices.size != length:
        raise fail(f"lists {indices.size} indices but the buffer's length is {length}", "indices")
    out = (indices < -size) | (indices >= size)
    if out.any():
        raise fail(f"index {int(indices[out][0])} is outside a dimension of size {size}", "indices")
    normalized = np.where(indices < 0, indices + size, indices)
    if np.unique(normalized).size != normalized.size:
        raise fail("values must be locally unique", "indices")
    return {
        "dist_type": "u",
        "size": size,
        "proc_grid_size": P,
        "proc_grid_rank": r,
        "indices": indices.astype(np.intp, copy=False),
        "one_to_one": _bool(d.get("one_to_one", False), "one_to_one", fail),
    }


def _from_v09_undistributed(d, length, fail):
    unknown = d.keys() - {"dist_type", "size", "padding", "periodic"}
    if unknown:
        raise fail(f"unknown key(s) {sorted(unknown)} for dist_type 'n'")
    if "size" not in d:
        raise fail("dist_type 'n' requires this key", "size")
    size = _int(d["size"], "size", fail, minimum=0)
    padding = _padding(d.get("padding", (0, 0)), fail)
    periodic = _bool(d.get("periodic", False), "periodic", fail)
    return _normalize_block(
        {"start": 0, "stop": size, "padding": padding, "periodic": periodic},
        length,
        size,
        1,
        0,
        9,
        fail,
    )


def _as_buffer(buffer, rank) -> np.ndarray:
    if isinstance(buffer, np.ndarray):
        return buffer
    try:
        view = memoryview(buffer)
    except TypeError:
        raise dap_error(
            f"must support the buffer protocol (PEP 3118), got {type(buffer).__name__}",
            rank=rank,
            key="buffer",
        ) from None
    return np.asarray(view)


def _int(value, key, fail, minimum=None) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise fail(f"must be an int, got {value!r}", key)
    value = int(value)
    if minimum is not None and value < minimum:
        raise fail(f"must be >= {minimum}, got {value}", key)
    return value


def _bool(value, key, fail) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise fail(f"must be a bool, got {value!r}", key)
    return bool(value)


def _padding(value, fail) -> tuple[int, int]:
    if not isinstance(value, (tuple, list, np.ndarray)) or len(value) != 2:
        raise fail(f"must be a 2-tuple of ints, got {value!r}", "padding")
    return (
        _int(value[0], "padding", fail, minimum=0),
        _int(value[1], "padding", fail, minimum=0),
    )


def dim_dicts_equal(a: dict, b: dict) -> bool:
    """Whether two normalised dimension dictionaries are identical."""
    if a.keys() != b.keys():
        return False
    for key, value in a.items():
        other = b[key]
        if isinstance(value, np.ndarray) or isinstance(other, np.ndarray):
            if not np.array_equal(value, other):
                return False
        elif value != other:
            return False
    return True


def check_sequence_of_distbuffers(distbuffers: Any) -> Sequence:
    if isinstance(distbuffers, Mapping) or not isinstance(distbuffers, Sequence):
        raise DAPError(
            "expected a sequence of distbuffers, one per rank in rank order, "
            f"got {type(distbuffers).__name__}"
        )
    if not distbuffers:
        raise DAPError("expected at least one distbuffer")
    return distbuffers
