"""Fuzzing the importers: mostly-wrong dicts raise DAPError, never anything else.

`__distarray__` dicts (one rank: `dapx.protocol.validate_distbuffer`; every
rank: `dapx.Distribution.from_distbuffers` and `dapx.from_distarray`) and
`__partitioned__` dicts (`dapx.from_partitioned`) are built from valid ones
and then broken: keys dropped or added, values replaced by wrong types, NaN,
huge or negative numbers, mismatched or object buffers, garbage containers.
"""

from __future__ import annotations

import contextlib

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dapx

FUZZ = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

GARBAGE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([-1, 0, 1, 2, 3, 2**31, 2**63, -(2**63)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([np.int64(2), np.float64(np.nan), np.bool_(True), np.uint8(3)]),
    st.text(max_size=4),
    st.sampled_from(["b", "c", "u", "n", "x", "0.10.0", "0.9.0", "1.0.0", "0.10"]),
    st.lists(st.integers(-3, 10), max_size=4).map(tuple),
    st.lists(st.integers(-3, 10), max_size=4),
    st.builds(lambda n: np.arange(n), st.integers(0, 5)),
    st.just(np.array([1.5, np.nan])),
    st.just(np.array([None, 1], dtype=object)),
    st.just(np.zeros((2, 2))),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.just(object()),
)


def _valid_distbuffers(nranks: int, size: int, kind: str, block_size: int) -> list[dict]:
    m = {
        "b": lambda: dapx.BlockMap(size, nprocs=nranks),
        "c": lambda: dapx.CyclicMap(size, nranks, block_size=block_size),
        "u": lambda: dapx.UnstructuredMap(
            size, [np.arange(size)[r::nranks] for r in range(nranks)]
        ),
    }[kind]()
    return [
        {
            "__version__": "0.10.0",
            "buffer": np.arange(m.local_length(r), dtype=float),
            "dim_data": (m.dim_dict(r),),
        }
        for r in range(nranks)
    ]


@st.composite
def broken_distbuffers(draw) -> list[dict]:
    nranks = draw(st.integers(1, 3))
    kind = draw(st.sampled_from("bcu"))
    dicts = _valid_distbuffers(nranks, draw(st.integers(0, 7)), kind, draw(st.integers(1, 3)))
    originals = [d["dim_data"][0] for d in dicts]
    for _ in range(draw(st.integers(1, 3))):
        rank = draw(st.integers(0, nranks - 1))
        d = dicts[rank]
        where = draw(st.sampled_from(["top", "dim", "buffer", "dim_data"]))
        if where == "top":
            key = draw(st.sampled_from(["__version__", "buffer", "dim_data", "extra"]))
            if draw(st.booleans()):
                d.pop(key, None)
            else:
                d[key] = draw(GARBAGE)
        elif where == "buffer":
            d["buffer"] = draw(
                st.one_of(
                    GARBAGE,
                    st.builds(lambda n: np.zeros(n), st.integers(0, 9)),
                    st.just(np.zeros(3, dtype=object)),
                    st.just(np.zeros((1, 3))),
                    st.just(memoryview(b"abc")),
                )
            )
        elif where == "dim_data":
            d["dim_data"] = draw(
                st.one_of(GARBAGE, st.just(()), st.just([{}]), st.just((originals[rank],) * 2))
            )
        else:
            dim = dict(originals[rank])
            key = draw(
                st.sampled_from(
                    [
                        "dist_type",
                        "size",
                        "proc_grid_size",
                        "proc_grid_rank",
                        "start",
                        "stop",
                        "padding",
                        "periodic",
                        "block_size",
                        "indices",
                        "one_to_one",
                    ]
                )
            )
            if draw(st.booleans()):
                dim.pop(key, None)
            else:
                dim[key] = draw(GARBAGE)
            d["dim_data"] = (dim,)
            originals[rank] = dim
    return dicts


def _only_dap_errors(call, *args, **kwargs) -> None:
    # Anything but a DAPError propagates and fails the test.
    with contextlib.suppress(dapx.DAPError):
        call(*args, **kwargs)


@FUZZ
@given(broken_distbuffers())
def test_one_rank_validation_raises_only_dap_errors(dicts):
    for r, d in enumerate(dicts):
        _only_dap_errors(dapx.protocol.validate_distbuffer, d, rank=r)


@FUZZ
@given(broken_distbuffers())
def test_distributions_from_broken_distbuffers_raise_only_dap_errors(dicts):
    _only_dap_errors(dapx.Distribution.from_distbuffers, dicts)


@FUZZ
@given(broken_distbuffers())
def test_from_distarray_raises_only_dap_errors(dicts):
    backend = dapx.simulated(len(dicts))
    _only_dap_errors(dapx.from_distarray, dicts, backend=backend)


@st.composite
def broken_partitioned(draw) -> dict:
    nranks = draw(st.integers(1, 3))
    size = draw(st.integers(nranks, 8))
    bounds = np.linspace(0, size, nranks + 1).astype(int)
    partitions = {
        (r,): {
            "start": (int(bounds[r]),),
            "shape": (int(bounds[r + 1] - bounds[r]),),
            "data": np.arange(bounds[r], bounds[r + 1], dtype=float),
            "location": [r],
        }
        for r in range(nranks)
    }
    obj = {
        "shape": (size,),
        "partition_tiling": (nranks,),
        "partitions": partitions,
        "get": lambda x: x,
        "locals": [(r,) for r in range(nranks)],
    }
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["top", "partition", "partitions"]))
        if where == "top":
            key = draw(st.sampled_from(["shape", "partition_tiling", "partitions", "get", "x"]))
            if draw(st.booleans()):
                obj.pop(key, None)
            else:
                obj[key] = draw(GARBAGE)
        elif where == "partitions" and isinstance(obj.get("partitions"), dict):
            key = draw(st.sampled_from([(0,), (5,), (0, 0), 0, "a", (-1,)]))
            obj["partitions"][key] = draw(st.one_of(GARBAGE, st.just({})))
        elif isinstance(obj.get("partitions"), dict) and obj["partitions"]:
            part = obj["partitions"][draw(st.sampled_from(sorted(obj["partitions"], key=str)))]
            if isinstance(part, dict):
                key = draw(st.sampled_from(["start", "shape", "data", "location"]))
                if draw(st.booleans()):
                    part.pop(key, None)
                else:
                    part[key] = draw(GARBAGE)
    return obj, nranks


@FUZZ
@given(broken_partitioned())
def test_from_partitioned_raises_only_dap_errors(case):
    obj, nranks = case
    _only_dap_errors(dapx.from_partitioned, obj, backend=dapx.simulated(nranks))
