"""Small partials as bytes: what a full reduction combines travels without pickle.

A full reduction gathers one small value per rank (a NumPy scalar, or a tuple
of a few, or None for a rank with nothing to contribute) and combines them in
rank order on every process. `gather_values` moves them in one
`Backend.allgather_array` of fixed-size byte *slots*, one per rank. Each slot
describes itself (how many components, the exact type of each), so ranks need
not agree on a format beforehand: only the slot size is fixed. Values are
rebuilt with their exact types and bits (a ``numpy.longlong`` stays one, a
Python ``int`` stays a Python ``int``), so combining them gives the same bits
as combining the originals.

A value that no slot can hold (more components, arrays with dimensions,
other types) marks its slot; then every rank, seeing the mark, sends its
value again through the pickled `Backend.allgather`, so the outcome is the
same, only slower. Slots also carry a "this rank recorded warnings" flag:
the warnings themselves (text) travel in a second, pickled allgather only
when some rank has any.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["SLOT", "decode", "encode", "gather_values"]

#: Bytes per rank: 8 of header (flags, component count, one descriptor byte per
#: component) and 16 per component (complex128 and longdouble fit).
_WIDTH = 16
_MAX_COMPONENTS = 4
SLOT = 8 + _WIDTH * _MAX_COMPONENTS

# Header flags (byte 0).
_PACKED = 1  # the slot holds the value (else: everyone falls back to pickle)
_WARNED = 2  # this rank recorded warnings
_NONE = 4  # the value is None
_TUPLE = 8  # the value is a tuple of the components (else the one component itself)

# Descriptor byte of a component: kind * 32 + index of its NumPy type.
_SCALAR, _ARRAY0, _PY_BOOL, _PY_INT, _PY_FLOAT, _PY_COMPLEX = range(6)

#: NumPy scalar types a slot carries (native byte order, at most 16 bytes), by their
#: exact type: ``np.int_`` and ``np.longlong`` are both int64 here but stay distinct.
_TYPES = tuple(
    t
    for t in dict.fromkeys(
        (
            np.bool_,
            np.int8,
            np.uint8,
            np.int16,
            np.uint16,
            np.intc,
            np.uintc,
            np.int_,
            np.uint,
            np.longlong,
            np.ulonglong,
            np.float16,
            np.float32,
            np.float64,
            np.longdouble,
            np.complex64,
            np.complex128,
        )
    )
    if np.dtype(t).itemsize <= _WIDTH
)
_CODE = {t: i for i, t in enumerate(_TYPES)}
_DTYPES = tuple(np.dtype(t) for t in _TYPES)
_PYTHON = {bool: (_PY_BOOL, np.bool_), float: (_PY_FLOAT, np.float64)}
_PYTHON[complex] = (_PY_COMPLEX, np.complex128)
_INT64 = (-(2**63), 2**63)
_ZEROS = bytes(SLOT)
#: Per NumPy scalar type, the slot around its bytes: the header (without and with
#: the warnings flag) and the zeros after the value.
_SCALAR_SLOTS = {
    t: (
        tuple(bytes((_PACKED | w, 1, code, 0, 0, 0, 0, 0)) for w in (0, _WARNED)),
        bytes(SLOT - 8 - np.dtype(t).itemsize),
    )
    for t, code in _CODE.items()
}


def _component(c) -> tuple[int, bytes] | None:
    """The descriptor byte and the bytes of one component, or None if no slot holds it."""
    t = type(c)
    code = _CODE.get(t)
    if code is not None:  # a NumPy scalar
        return _SCALAR * 32 + code, c.tobytes()
    if t is np.ndarray:
        code = _CODE.get(c.dtype.type)
        if c.ndim or code is None or not c.dtype.isnative:
            return None
        return _ARRAY0 * 32 + code, c.tobytes()
    if t is int:
        if not _INT64[0] <= c < _INT64[1]:
            return None
        return _PY_INT * 32, np.int64(c).tobytes()
    python = _PYTHON.get(t)
    if python is None:
        return None
    kind, as_numpy = python
    return kind * 32, as_numpy(c).tobytes()


def encode(value: Any, warned: bool = False) -> np.ndarray:
    """The slot of one rank's `value`: ``SLOT`` bytes (uint8).

    Parameters
    ----------
    value : None, scalar or tuple of scalars
        NumPy scalars, 0-d arrays and Python ``bool``, ``int`` (int64 range),
        ``float`` and ``complex`` travel in the slot; for anything else the
        slot is marked as not holding the value.
    warned : bool
        Whether this rank recorded warnings.

    Examples
    --------
    >>> import numpy as np
    >>> decode(encode((np.float32(1.5), 3)).tobytes())
    (np.float32(1.5), 3)
    """
    fast = _SCALAR_SLOTS.get(type(value))
    if fast is not None:  # one NumPy scalar: the hot path of `gather_values`
        heads, pad = fast
        return np.frombuffer(heads[warned] + value.tobytes() + pad, np.uint8)
    flags = _WARNED if warned else 0
    if value is None:
        return np.frombuffer(bytes((flags | _PACKED | _NONE,)) + _ZEROS[1:], np.uint8)
    is_tuple = type(value) is tuple
    if not is_tuple:  # one Python scalar or 0-d array
        one = _component(value)
        if one is not None:
            desc, raw = one
            head = bytes((flags | _PACKED, 1, desc, 0, 0, 0, 0, 0))
            return np.frombuffer(head + raw + _ZEROS[: SLOT - 8 - len(raw)], np.uint8)
    comps = value if is_tuple else (value,)
    n = len(comps)
    packed = [_component(c) for c in comps] if n <= _MAX_COMPONENTS else [None]
    if None in packed:
        return np.frombuffer(bytes((flags,)) + _ZEROS[1:], np.uint8)
    head = bytes((flags | _PACKED | (_TUPLE if is_tuple else 0), n, *(d for d, _ in packed)))
    # Each component in a field of _WIDTH bytes: rebuilt from a fixed offset.
    body = b"".join(raw + _ZEROS[: _WIDTH - len(raw)] for _, raw in packed)
    slot = head + _ZEROS[: 8 - len(head)] + body
    return np.frombuffer(slot + _ZEROS[: SLOT - len(slot)], np.uint8)


def decode(data: bytes, start: int = 0) -> Any:
    """The value the packed slot at byte `start` of `data` holds (see `encode`).

    Types and bits are the ones `encode` was given.
    """
    flags = data[start]
    if flags & ~_WARNED == _PACKED and data[start + 2] < 32:  # one NumPy scalar: the hot path
        return np.frombuffer(data, _DTYPES[data[start + 2]], 1, start + 8)[0]
    if not flags & _PACKED:
        raise ValueError("this slot does not hold its value (it travels pickled)")
    if flags & _NONE:
        return None
    comps = []
    for j in range(data[start + 1]):
        kind, code = divmod(data[start + 2 + j], 32)
        at = start + 8 + _WIDTH * j
        if kind == _SCALAR:
            comps.append(np.frombuffer(data, _DTYPES[code], 1, at)[0])
        elif kind == _ARRAY0:
            comps.append(np.frombuffer(data, _DTYPES[code], 1, at).reshape(()).copy())
        elif kind == _PY_INT:
            comps.append(int(np.frombuffer(data, np.int64, 1, at)[0]))
        elif kind == _PY_BOOL:
            comps.append(data[at] != 0)
        elif kind == _PY_FLOAT:
            comps.append(float(np.frombuffer(data, np.float64, 1, at)[0]))
        else:
            comps.append(complex(np.frombuffer(data, np.complex128, 1, at)[0]))
    return tuple(comps) if flags & _TUPLE else comps[0]


def gather_values(
    backend, values: Mapping[int, Any], seen: Sequence = ()
) -> tuple[list, list[list]]:
    """Every rank's small value, in rank order, and the warnings every rank recorded.

    Collective. One `Backend.allgather_array` of byte slots in the common case;
    a pickled `Backend.allgather` instead when some rank's value does not fit a
    slot, and a second one for the warnings when some rank recorded any.

    Parameters
    ----------
    backend : Backend
    values : mapping of int to value
        One value per local rank (see `encode`).
    seen : sequence of (category, message)
        The warnings this process recorded (shared by its local ranks).

    Returns
    -------
    (list, list of list)
        The values in rank order, and per rank the warnings it recorded (an
        empty list when no rank recorded any).

    Examples
    --------
    >>> import numpy as np, dapx
    >>> b = dapx.simulated(3)
    >>> gather_values(b, {0: np.float64(1.0), 1: None, 2: (np.int8(2), 3)})
    ([np.float64(1.0), None, (np.int8(2), 3)], [])
    """
    warned = bool(seen)
    slots = {r: encode(v, warned) for r, v in values.items()}
    data = backend.allgather_array(slots).tobytes()
    flags = data[::SLOT]  # byte 0 of every slot
    if not functools.reduce(operator.and_, flags) & _PACKED:
        # Every rank sees the same flags, so all of them fall back together.
        everyone = backend.allgather({r: (v, list(seen)) for r, v in values.items()})
        return [v for v, _ in everyone], [w for _, w in everyone]
    out = [decode(data, i) for i in range(0, len(data), SLOT)]
    if not functools.reduce(operator.or_, flags) & _WARNED:
        return out, []
    return out, backend.allgather({r: list(seen) for r in values})
