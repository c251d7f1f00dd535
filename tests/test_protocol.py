"""One test per DAP validation rule (single-rank and cross-rank), plus the normal form.

Every negative test feeds one concrete bad input and checks that a `dapx.DAPError`
names where the rule was broken ("rank 1, dim 0, key 'start'") and what the rule is.
Single-rank rules are checked by `dapx.protocol.validate_distbuffer` (called with
``rank=1`` so that the rank prefix is visible); cross-rank rules by
`dapx.Distribution.from_distbuffers`.
"""

from __future__ import annotations

import array
import copy
import re

import numpy as np
import pytest
from dapx.protocol import validate_distbuffer

import dapx
from dapx import Distribution

V10 = "0.10.0"
V09 = "0.9.0"


# -- builders ------------------------------------------------------------------------------


def common(dist_type, size, P, r, **kw) -> dict:
    return {"dist_type": dist_type, "size": size, "proc_grid_size": P, "proc_grid_rank": r, **kw}


def block(size, start, stop, P=1, r=0, **kw) -> dict:
    return common("b", size, P, r, start=start, stop=stop, **kw)


def cyclic(size, start, P=1, r=0, **kw) -> dict:
    return common("c", size, P, r, start=start, **kw)


def unstructured(size, indices, P=1, r=0, **kw) -> dict:
    return common("u", size, P, r, indices=np.asarray(indices), **kw)


def cyclic_count(size, P, r, block_size=1) -> int:
    """Reference count of the indices a cyclic grid rank holds (no dapx code)."""
    return sum(1 for i in range(size) if (i // block_size) % P == r)


def _length(d: dict) -> int:
    kind = d["dist_type"]
    if kind == "b":
        return max(d["stop"] - d["start"], 0)
    if kind == "c":
        return cyclic_count(
            d["size"], d["proc_grid_size"], d["proc_grid_rank"], d.get("block_size", 1)
        )
    return len(d["indices"])


def dist(*dims, shape=None, buffer=None, version=V10) -> dict:
    """A distbuffer; the buffer's shape is inferred from the dicts unless given."""
    if buffer is None:
        if shape is None:
            shape = tuple(_length(d) for d in dims)
        buffer = np.arange(int(np.prod(shape)), dtype=float).reshape(shape)
    return {"__version__": version, "buffer": buffer, "dim_data": tuple(dims)}


def _pattern(p) -> str:
    return p.pattern if isinstance(p, re.Pattern) else re.escape(p)


def _expect(fn, patterns):
    """`fn()` raises DAPError whose message contains every pattern (literal or re.Pattern)."""
    with pytest.raises(dapx.DAPError, match=_pattern(patterns[0])) as excinfo:
        fn()
    for p in patterns[1:]:
        excinfo.match(_pattern(p))


def invalid(distbuffer, *patterns, rank=1):
    _expect(lambda: validate_distbuffer(distbuffer, rank=rank), patterns)


def invalid_ranks(distbuffers, *patterns):
    _expect(lambda: Distribution.from_distbuffers(distbuffers), patterns)


def ok(distbuffer, rank=1):
    return validate_distbuffer(distbuffer, rank=rank)


# -- top level --------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [None, "0.10.0", [("__version__", V10)], 3])
def test_distbuffer_not_a_dict(bad):
    invalid(bad, "rank 1: a distbuffer must be a dict", type(bad).__name__)


@pytest.mark.parametrize("key", ["__version__", "buffer", "dim_data"])
def test_distbuffer_missing_key(key):
    db = dist(block(3, 0, 3))
    del db[key]
    invalid(db, f"rank 1: distbuffer lacks required key(s) ['{key}']")


def test_distbuffer_unknown_key():
    db = dist(block(3, 0, 3))
    db["extra"] = 1
    invalid(db, "rank 1: distbuffer has unknown key(s) ['extra']")


# -- version ----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [10, 0.1, None, (0, 10, 0), b"0.10.0"])
def test_version_not_a_string(version):
    invalid(
        dist(block(3, 0, 3), version=version),
        "rank 1, key '__version__': must be a 'major.minor.patch' string",
    )


@pytest.mark.parametrize(
    "version", ["0.10", "v0.10.0", "0.10.0a", "0.10.0.0", "", " 0.10.0", "0.10.0\n", "0.010.0"]
)
def test_version_malformed(version):
    invalid(
        dist(block(3, 0, 3), version=version),
        f"rank 1, key '__version__': {version!r} is not of the form 'major.minor.patch'",
    )


@pytest.mark.parametrize(("version", "major"), [("1.0.0", 1), ("2.10.0", 2), ("10.0.0", 10)])
def test_version_major_not_zero(version, major):
    invalid(
        dist(block(3, 0, 3), version=version),
        f"rank 1, key '__version__': major version {major} is not supported",
    )


@pytest.mark.parametrize("version", ["0.8.0", "0.8.9", "0.1.0", "0.0.1"])
def test_version_too_old(version):
    invalid(
        dist(block(3, 0, 3), version=version),
        f"rank 1, key '__version__': version {version} predates 0.9",
    )


@pytest.mark.parametrize("version", ["0.9.0", "0.9.7", "0.10.0", "0.10.3"])
def test_version_accepted(version):
    out = ok(dist(block(3, 0, 3), version=version))
    assert out.version == version
    assert out.dim_data[0]["stop"] == 3


# -- buffer and dim_data -----------------------------------------------------------------------


@pytest.mark.parametrize("buffer", [[0.0, 1.0, 2.0], "abc", None, 3])
def test_buffer_without_buffer_protocol(buffer):
    db = dist(block(3, 0, 3))
    db["buffer"] = buffer
    invalid(
        db,
        "rank 1, key 'buffer': must support the buffer protocol",
        type(buffer).__name__,
    )


@pytest.mark.parametrize("dim_data", [None, {0: {}}, "b", ({} for _ in range(1)), 3])
def test_dim_data_not_a_tuple(dim_data):
    db = dist(block(3, 0, 3))
    db["dim_data"] = dim_data
    invalid(
        db,
        "rank 1, key 'dim_data': must be a tuple of dimension dictionaries",
        type(dim_data).__name__,
    )


@pytest.mark.parametrize(
    ("shape", "dims"),
    [((2, 3), ({},)), ((3,), ({}, {})), ((), ({},)), ((3,), ())],
)
def test_dim_data_length_differs_from_buffer_ndim(shape, dims):
    invalid(
        dist(*dims, shape=shape),
        f"rank 1, key 'dim_data': has {len(dims)} dimension dictionaries but the buffer "
        f"has {len(shape)} dimensions",
    )


def test_zero_dimensional_distbuffer_accepted():
    buf = np.array(2.5)
    out = ok(dist(buffer=buf))
    assert out.dim_data == ()
    assert np.shares_memory(out.buffer, buf)


# -- dimension dictionaries: common keys --------------------------------------------------------


@pytest.mark.parametrize("bad", [None, ["b"], "b", 0, ("dist_type", "b")])
def test_dim_dict_not_a_dict(bad):
    invalid(
        dist({}, bad, shape=(2, 3)),
        "rank 1, dim 1: a dimension dictionary must be a dict",
        type(bad).__name__,
    )


def test_dim_dict_missing_dist_type():
    d = block(3, 0, 3)
    del d["dist_type"]
    invalid(dist(d, shape=(3,)), "rank 1, dim 0, key 'dist_type': ", "needs 'dist_type'")


@pytest.mark.parametrize("dist_type", ["x", "B", "block", "", None, 1, ["b"]])
def test_dim_dict_unknown_dist_type(dist_type):
    d = common(dist_type, 3, 1, 0, start=0, stop=3)
    invalid(
        dist(d, shape=(3,)),
        f"rank 1, dim 0, key 'dist_type': must be one of 'b', 'c', 'u', got {dist_type!r}",
    )


def test_dist_type_n_rejected_in_v0_10():
    invalid(
        dist({"dist_type": "n", "size": 3}, shape=(3,)),
        "rank 1, dim 0, key 'dist_type': must be one of 'b', 'c', 'u', got 'n'",
    )


def test_dist_type_n_accepted_in_v0_9():
    out = ok(dist({"dist_type": "n", "size": 3}, shape=(3,), version=V09))
    assert out.dim_data[0] == block(3, 0, 3, padding=(0, 0), periodic=False)


@pytest.mark.parametrize(
    ("make", "key"),
    [
        (lambda: block(4, 0, 4), "size"),
        (lambda: block(4, 0, 4), "proc_grid_size"),
        (lambda: block(4, 0, 4), "proc_grid_rank"),
        (lambda: block(4, 0, 4), "start"),
        (lambda: block(4, 0, 4), "stop"),
        (lambda: cyclic(4, 0), "size"),
        (lambda: cyclic(4, 0), "proc_grid_size"),
        (lambda: cyclic(4, 0), "proc_grid_rank"),
        (lambda: cyclic(4, 0), "start"),
        (lambda: unstructured(4, [0, 1, 2, 3]), "size"),
        (lambda: unstructured(4, [0, 1, 2, 3]), "proc_grid_size"),
        (lambda: unstructured(4, [0, 1, 2, 3]), "proc_grid_rank"),
        (lambda: unstructured(4, [0, 1, 2, 3]), "indices"),
    ],
)
def test_dim_dict_missing_required_key(make, key):
    d = make()
    del d[key]
    invalid(
        dist(d, shape=(4,)),
        f"rank 1, dim 0, key '{key}': dist_type '{d['dist_type']}' requires this key",
    )


@pytest.mark.parametrize(
    ("d", "unknown"),
    [
        (block(4, 0, 4, block_size=1), "block_size"),
        (block(4, 0, 4, indices=np.arange(4)), "indices"),
        (block(4, 0, 4, Start=0), "Start"),
        (cyclic(4, 0, padding=(0, 0)), "padding"),
        (cyclic(4, 0, periodic=False), "periodic"),
        (cyclic(4, 0, stop=4), "stop"),
        (unstructured(4, [0, 1, 2, 3], start=0), "start"),
        (unstructured(4, [0, 1, 2, 3], periodic=False), "periodic"),
    ],
)
def test_dim_dict_unknown_key(d, unknown):
    invalid(
        dist(d, shape=(4,)),
        f"rank 1, dim 0: unknown key(s) ['{unknown}'] for dist_type '{d['dist_type']}'",
    )


_INT_KEYS = [
    (lambda: block(4, 0, 4), "size"),
    (lambda: block(4, 0, 4), "proc_grid_size"),
    (lambda: block(4, 0, 4), "proc_grid_rank"),
    (lambda: block(4, 0, 4), "start"),
    (lambda: block(4, 0, 4), "stop"),
    (lambda: cyclic(4, 0, block_size=1), "block_size"),
    (lambda: cyclic(4, 0), "start"),
]


@pytest.mark.parametrize(("make", "key"), _INT_KEYS)
@pytest.mark.parametrize("convert", [float, str, lambda v: None, lambda v: [v]])
def test_dim_dict_value_not_an_int(make, key, convert):
    d = make()
    d[key] = value = convert(d[key])
    invalid(dist(d, shape=(4,)), f"rank 1, dim 0, key '{key}': must be an int, got {value!r}")


@pytest.mark.parametrize(("make", "key"), _INT_KEYS)
@pytest.mark.parametrize("convert", [bool, np.bool_])
def test_dim_dict_bool_is_not_an_int(make, key, convert):
    d = make()
    d[key] = value = convert(1)
    invalid(dist(d, shape=(4,)), f"rank 1, dim 0, key '{key}': must be an int, got {value!r}")


@pytest.mark.parametrize("size", [-1, -10])
def test_size_negative(size):
    invalid(
        dist(block(size, 0, 0), shape=(0,)), f"rank 1, dim 0, key 'size': must be >= 0, got {size}"
    )


@pytest.mark.parametrize("P", [0, -1])
def test_proc_grid_size_below_one(P):
    invalid(
        dist(block(4, 0, 4, P=P), shape=(4,)),
        f"rank 1, dim 0, key 'proc_grid_size': must be >= 1, got {P}",
    )


def test_proc_grid_rank_negative():
    invalid(
        dist(block(4, 0, 4, P=2, r=-1), shape=(4,)),
        "rank 1, dim 0, key 'proc_grid_rank': must be >= 0, got -1",
    )


@pytest.mark.parametrize(("P", "r"), [(1, 1), (2, 2), (2, 5)])
def test_proc_grid_rank_not_below_proc_grid_size(P, r):
    invalid(
        dist(block(4, 0, 4, P=P, r=r), shape=(4,)),
        f"rank 1, dim 0, key 'proc_grid_rank': must be < proc_grid_size ({P}), got {r}",
    )


# -- block ------------------------------------------------------------------------------------


def test_block_start_negative():
    invalid(dist(block(4, -1, 3), shape=(4,)), "rank 1, dim 0, key 'start': must be >= 0, got -1")


def test_block_stop_beyond_size():
    invalid(
        dist(block(4, 0, 5), shape=(5,)), "rank 1, dim 0, key 'stop': must be <= size (4), got 5"
    )


def test_block_stop_before_start():
    invalid(
        dist(block(4, 3, 2), shape=(1,)), "rank 1, dim 0, key 'stop': must be >= start (3), got 2"
    )


@pytest.mark.parametrize(("shape", "dim"), [((3,), 0), ((4, 3), 1), ((5,), 0)])
def test_block_extent_differs_from_buffer_length(shape, dim):
    dims = [{}] * len(shape)
    dims[dim] = block(6, 0, 4)
    invalid(
        dist(*dims, shape=shape),
        f"rank 1, dim {dim}, key 'stop': stop - start (4 - 0 = 4) must equal the buffer's "
        f"length in this dimension ({shape[dim]})",
    )


@pytest.mark.parametrize("padding", [1, (1,), (1, 2, 3), "ab", None, {0: 1, 1: 1}])
def test_block_padding_not_a_pair(padding):
    invalid(
        dist(block(4, 0, 4, padding=padding)),
        f"rank 1, dim 0, key 'padding': must be a 2-tuple of ints, got {padding!r}",
    )


@pytest.mark.parametrize(
    ("padding", "value"), [((1.0, 0), 1.0), ((0, "1"), "1"), ((True, 0), True)]
)
def test_block_padding_not_ints(padding, value):
    invalid(
        dist(block(4, 0, 4, padding=padding)),
        f"rank 1, dim 0, key 'padding': must be an int, got {value!r}",
    )


@pytest.mark.parametrize(("padding", "value"), [((-1, 0), -1), ((0, -2), -2)])
def test_block_padding_negative(padding, value):
    invalid(
        dist(block(4, 0, 4, padding=padding)),
        f"rank 1, dim 0, key 'padding': must be >= 0, got {value}",
    )


def test_block_padding_wider_than_local_extent():
    invalid(
        dist(block(2, 0, 2, padding=(2, 1))),
        "rank 1, dim 0, key 'padding': padding (2, 1) is wider than the local extent (2)",
    )


@pytest.mark.parametrize("periodic", [1, 0, "yes", None, (True,)])
def test_block_periodic_not_a_bool(periodic):
    invalid(
        dist(block(4, 0, 4, periodic=periodic)),
        f"rank 1, dim 0, key 'periodic': must be a bool, got {periodic!r}",
    )


# -- cyclic -----------------------------------------------------------------------------------


@pytest.mark.parametrize("block_size", [0, -2])
def test_cyclic_block_size_below_one(block_size):
    invalid(
        dist(cyclic(4, 0, block_size=block_size), shape=(4,)),
        f"rank 1, dim 0, key 'block_size': must be >= 1, got {block_size}",
    )


@pytest.mark.parametrize(
    ("size", "P", "r", "block_size", "start", "expected"),
    [
        (6, 2, 1, 1, 0, 1),  # cyclic: grid rank r starts at r
        (9, 2, 1, 2, 1, 2),  # block-cyclic: grid rank r starts at r * block_size
        (1, 2, 1, 1, 0, 1),  # an empty grid rank starts at size (or past it: see below)
    ],
)
def test_cyclic_start_wrong_for_grid_rank(size, P, r, block_size, start, expected):
    d = cyclic(size, start, P=P, r=r, block_size=block_size)
    invalid(
        dist(d, shape=(cyclic_count(size, P, r, block_size),)),
        f"rank 1, dim 0, key 'start': must be {expected} for grid rank {r} with "
        f"block_size {block_size} and size {size}, got {start}",
    )


@pytest.mark.parametrize(
    ("size", "P", "r", "block_size", "length"),
    [
        (6, 2, 1, 1, 2),  # holds 3
        (9, 2, 0, 2, 6),  # holds 5: its last block (index 8) is partial
        (7, 2, 1, 2, 4),  # holds 3: its last block (index 6) is partial
        (9, 2, 1, 2, 5),  # holds 4: the partial block is on grid rank 0
        (1, 2, 1, 1, 1),  # holds 0
    ],
)
def test_cyclic_buffer_length_differs_from_count(size, P, r, block_size, length):
    count = cyclic_count(size, P, r, block_size)
    assert count != length
    d = cyclic(size, min(r * block_size, size), P=P, r=r, block_size=block_size)
    invalid(
        dist(d, shape=(length,)),
        "rank 1, dim 0, key '",
        f"grid rank {r} of {P} holds {count} indices",
        f"the buffer's length is {length}",
    )


@pytest.mark.parametrize(("size", "P", "block_size"), [(9, 2, 2), (7, 2, 2), (10, 3, 3), (2, 4, 1)])
def test_cyclic_trailing_partial_block_accepted(size, P, block_size):
    for r in range(P):
        d = cyclic(size, min(r * block_size, size), P=P, r=r, block_size=block_size)
        out = ok(dist(d))
        assert out.buffer.shape == (cyclic_count(size, P, r, block_size),)


# -- unstructured -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "indices", [np.array([0.0, 1.0]), np.array([True, False]), np.array(["0", "1"])]
)
def test_unstructured_indices_not_integers(indices):
    invalid(
        dist(unstructured(4, indices), shape=(2,)),
        "rank 1, dim 0, key 'indices': must be a 1-D buffer of integers",
        f"dtype {indices.dtype}",
    )


@pytest.mark.parametrize("indices", [np.array([[0], [1]]), np.array(0), np.array([[0, 1]])])
def test_unstructured_indices_not_1d(indices):
    invalid(
        dist(unstructured(4, indices), shape=(indices.size,)),
        "rank 1, dim 0, key 'indices': must be a 1-D buffer of integers",
        f"shape {indices.shape}",
    )


@pytest.mark.parametrize("indices", ["01", None, 3])
def test_unstructured_indices_not_a_buffer(indices):
    d = unstructured(4, [0, 1])
    d["indices"] = indices
    invalid(
        dist(d, shape=(2,)),
        "rank 1, dim 0, key 'indices': must be a buffer of integers",
        type(indices).__name__,
    )


@pytest.mark.parametrize(("indices", "length"), [([0, 1, 2], 2), ([0], 2), ([], 1)])
def test_unstructured_indices_length_differs_from_buffer(indices, length):
    invalid(
        dist(unstructured(4, np.array(indices, dtype=int)), shape=(length,)),
        f"rank 1, dim 0, key 'indices': lists {len(indices)} indices but the buffer's "
        f"length is {length}",
    )


@pytest.mark.parametrize(("indices", "bad"), [([0, 4], 4), ([-5, 0], -5), ([1, 100], 100)])
def test_unstructured_index_out_of_range(indices, bad):
    invalid(
        dist(unstructured(4, indices)),
        f"rank 1, dim 0, key 'indices': index {bad} is outside a dimension of size 4",
    )


@pytest.mark.parametrize("indices", [[1, 1], [0, 2, 0]])
def test_unstructured_indices_not_locally_unique(indices):
    invalid(
        dist(unstructured(4, indices)),
        "rank 1, dim 0, key 'indices': values must be locally unique",
    )


@pytest.mark.parametrize("one_to_one", [1, "True", None])
def test_unstructured_one_to_one_not_a_bool(one_to_one):
    invalid(
        dist(unstructured(2, [0, 1], one_to_one=one_to_one)),
        f"rank 1, dim 0, key 'one_to_one': must be a bool, got {one_to_one!r}",
    )


def test_unstructured_negative_unordered_indices_accepted():
    out = ok(dist(unstructured(6, [5, -6, 3])))  # the spec allows negative, unordered indices
    assert out.dim_data[0]["indices"].tolist() == [5, -6, 3]


# -- the {} alias and the normal form ---------------------------------------------------------


def test_empty_dim_dict_alias():
    out = ok(dist({}, cyclic(5, 1, P=2, r=1), shape=(3, 2)))
    assert out.dim_data[0] == block(3, 0, 3, padding=(0, 0), periodic=False)
    assert out.dim_data[1]["dist_type"] == "c"


def test_normal_form_block_defaults():
    (d,) = ok(dist(block(6, 2, 4, P=3, r=1))).dim_data
    assert d == block(6, 2, 4, P=3, r=1, padding=(0, 0), periodic=False)
    assert type(d["padding"]) is tuple
    assert type(d["periodic"]) is bool


def test_normal_form_padding_is_a_tuple_of_ints():
    d = block(8, 3, 8, P=2, r=1, padding=np.array([1, 1]))
    (out,) = ok(dist(d)).dim_data
    assert out["padding"] == (1, 1)
    assert type(out["padding"]) is tuple
    assert all(type(w) is int for w in out["padding"])


def test_normal_form_cyclic_defaults():
    (d,) = ok(dist(cyclic(5, 1, P=2, r=1))).dim_data
    assert d == cyclic(5, 1, P=2, r=1, block_size=1)


def test_normal_form_unstructured_defaults_and_intp_indices():
    indices = np.array([3, 0], dtype=np.int32)
    (d,) = ok(dist(unstructured(4, indices))).dim_data
    assert d["one_to_one"] is False
    assert d["indices"].dtype == np.intp
    assert d["indices"].tolist() == [3, 0]
    assert set(d) == {
        "dist_type",
        "size",
        "proc_grid_size",
        "proc_grid_rank",
        "indices",
        "one_to_one",
    }


def test_normal_form_plain_python_scalars():
    i64, i32, u8 = np.int64, np.int32, np.uint8
    dims = (
        block(
            i64(8),
            i64(3),
            i32(8),
            P=i64(2),
            r=i64(1),
            padding=(u8(1), i32(0)),
            periodic=np.bool_(False),
        ),
        cyclic(i64(5), i32(2), P=i32(2), r=i64(1), block_size=u8(2)),
        unstructured(i32(3), np.array([2, 0, 1], dtype=np.uint16), one_to_one=np.bool_(True)),
    )
    out = ok(dist(*dims))
    for d in out.dim_data:
        for key, value in d.items():
            if key == "indices":
                assert value.dtype == np.intp
            elif key == "padding":
                assert all(type(w) is int for w in value)
            elif key in ("periodic", "one_to_one"):
                assert type(value) is bool, key
            elif key != "dist_type":
                assert type(value) is int, key


def test_normal_form_does_not_mutate_input():
    dims = (block(8, 3, 8, P=2, r=1, padding=[1, 0]), unstructured(3, [2, 0, 1]))
    db = dist(*dims)
    before = copy.deepcopy(db["dim_data"])
    ok(db)
    assert db["dim_data"][0] == before[0]
    assert db["dim_data"][1].keys() == before[1].keys()
    assert "one_to_one" not in db["dim_data"][1]


def test_buffer_shares_memory_with_ndarray():
    base = np.arange(24.0).reshape(4, 6)
    view = base[:, ::2]  # non-contiguous
    out = ok(dist({}, {}, buffer=view))
    assert np.shares_memory(out.buffer, base)
    assert out.buffer.shape == (4, 3)
    out.buffer[0, 1] = -1.0
    assert base[0, 2] == -1.0


@pytest.mark.parametrize(
    "make",
    [
        lambda: bytearray(b"abcd"),
        lambda: array.array("d", [0.0, 1.0, 2.0, 3.0]),
        lambda: memoryview(np.arange(4.0)),
    ],
)
def test_buffer_protocol_objects_accepted_and_shared(make):
    obj = make()
    out = ok(dist({}, buffer=obj))
    assert isinstance(out.buffer, np.ndarray)
    assert out.buffer.shape == (4,)
    assert np.shares_memory(out.buffer, np.frombuffer(obj, dtype=out.buffer.dtype))


def test_empty_local_buffers_accepted():
    out = ok(dist(block(4, 4, 4, P=2, r=1), cyclic(1, 1, P=2, r=1), unstructured(3, [])))
    assert out.buffer.shape == (0, 0, 0)
    assert out.dim_data[2]["indices"].dtype == np.intp


def test_v0_9_padded_block_start_stop_converted():
    # DAP 0.9 docs, "Block with padding": 18 elements over 2 ranks, padding (1, 1).
    # 0.9 start/stop exclude communication padding; 0.10 include it.
    (d0,) = ok(dist(block(18, 0, 9, P=2, r=0, padding=(1, 1)), shape=(10,), version=V09)).dim_data
    (d1,) = ok(dist(block(18, 9, 18, P=2, r=1, padding=(1, 1)), shape=(10,), version=V09)).dim_data
    assert (d0["start"], d0["stop"]) == (0, 10)
    assert (d1["start"], d1["stop"]) == (8, 18)
    assert d0["padding"] == d1["padding"] == (1, 1)


def test_v0_9_interior_padding_converted_on_both_sides():
    d = block(12, 4, 8, P=3, r=1, padding=(1, 2))
    (out,) = ok(dist(d, shape=(7,), version=V09)).dim_data
    assert (out["start"], out["stop"]) == (3, 10)


def test_v0_9_dist_type_n_with_boundary_padding():
    (out,) = ok(
        dist({"dist_type": "n", "size": 6, "padding": (1, 1)}, shape=(6,), version=V09)
    ).dim_data
    assert out == block(6, 0, 6, padding=(1, 1), periodic=False)


def test_v0_9_periodic_false_on_cyclic_dropped():
    (out,) = ok(dist(cyclic(4, 0, periodic=False), version=V09)).dim_data
    assert "periodic" not in out


def test_v0_9_periodic_true_on_cyclic_rejected():
    invalid(
        dist(cyclic(4, 0, periodic=True), version=V09),
        "rank 1, dim 0, key 'periodic': ",
        "cannot be represented in v0.10",
    )


# -- cross-rank rules -------------------------------------------------------------------------


def block_1d(size, bounds, padding=None, periodic=None, version=V10) -> list[dict]:
    """Distbuffers of a 1-D block dimension with v0.10 start/stop given as (start, stop) pairs."""
    P = len(bounds)
    out = []
    for r, (start, stop) in enumerate(bounds):
        kw = {}
        if padding is not None:
            kw["padding"] = padding[r]
        if periodic is not None:
            kw["periodic"] = periodic[r]
        out.append(dist(block(size, start, stop, P=P, r=r, **kw), version=version))
    return out


@pytest.mark.parametrize(
    "bad",
    [lambda: dist(block(3, 0, 3)), lambda: None, lambda: 3, lambda: iter([dist({}, shape=(3,))])],
)
def test_distbuffers_not_a_sequence(bad):
    invalid_ranks(bad(), "expected a sequence of distbuffers")


@pytest.mark.parametrize("empty", [[], ()])
def test_distbuffers_empty(empty):
    invalid_ranks(empty, "expected at least one distbuffer")


def test_single_rank_errors_name_the_rank():
    dbs = block_1d(4, [(0, 2), (2, 4)])
    dbs[1]["dim_data"][0]["start"] = -1
    invalid_ranks(dbs, "rank 1, dim 0, key 'start': must be >= 0, got -1")
    dbs[1] = None
    invalid_ranks(dbs, "rank 1: a distbuffer must be a dict")


def test_ranks_with_different_ndim():
    dbs = [dist(block(4, 0, 2, P=2, r=0)), dist(block(4, 2, 4, P=2, r=1), {}, shape=(2, 3))]
    invalid_ranks(dbs, "rank 1, key 'dim_data': has 2 dimensions but rank 0 has 1")


def test_proc_grid_size_disagrees_across_ranks():
    dbs = [dist(block(6, 0, 3, P=2, r=0)), dist(block(6, 3, 6, P=3, r=1))]
    invalid_ranks(dbs, "rank 1, dim 0, key 'proc_grid_size': is 3 but rank 0 says 2")


@pytest.mark.parametrize(
    "dbs",
    [
        [dist(block(6, 0, 2, P=3, r=0)), dist(block(6, 2, 4, P=3, r=1))],
        [
            dist(block(4, 0, 2, P=2, r=0), block(4, 0, 2, P=2, r=0)),
            dist(block(4, 0, 2, P=2, r=0), block(4, 2, 4, P=2, r=1)),
            dist(block(4, 2, 4, P=2, r=1), block(4, 0, 2, P=2, r=0)),
        ],
    ],
)
def test_grid_size_product_differs_from_number_of_ranks(dbs):
    shape = tuple(d["proc_grid_size"] for d in dbs[0]["dim_data"])
    invalid_ranks(dbs, f"the grid {shape} has {np.prod(shape)} ranks but {len(dbs)} distbuffers")


def test_grid_coordinates_not_row_major():
    coords = [(0, 0), (1, 0), (0, 1), (1, 1)]  # column-major
    dbs = [dist(cyclic(4, i, P=2, r=i), cyclic(4, j, P=2, r=j)) for i, j in coords]
    invalid_ranks(
        dbs,
        "rank 1, key 'proc_grid_rank': has grid coordinates (1, 0) but "
        "row-major order puts rank 1 at (0, 1)",
    )


def test_grid_coordinates_swapped_1d():
    dbs = [dist(cyclic(4, 1, P=2, r=1)), dist(cyclic(4, 0, P=2, r=0))]
    invalid_ranks(
        dbs,
        "rank 0, key 'proc_grid_rank': has grid coordinates (1,) but "
        "row-major order puts rank 0 at (0,)",
    )


def test_size_differs_along_grid_axis():
    # Grid (1, 2): both ranks have proc_grid_rank 0 in dim 0.
    dbs = [
        dist(block(3, 0, 3), cyclic(4, 0, P=2, r=0)),
        dist(block(4, 0, 3), cyclic(4, 1, P=2, r=1)),
    ]
    invalid_ranks(dbs, "rank 1, dim 0, key 'size': is 4 but rank 0 says 3")


def test_block_size_differs_along_grid_axis():
    # Grid (2, 1): both ranks have proc_grid_rank 0 in dim 1.
    dbs = [
        dist(block(4, 0, 2, P=2, r=0), cyclic(4, 0, block_size=1)),
        dist(block(4, 2, 4, P=2, r=1), cyclic(4, 0, block_size=2)),
    ]
    invalid_ranks(dbs, "rank 1, dim 1, key 'block_size': is 2 but rank 0 says 1")


def test_start_differs_for_same_grid_rank():
    # Grid (1, 2): dim 0 is undistributed yet the two ranks disagree on it. (Each dict must
    # be valid alone: a grid rank 0 that starts at 1 is rejected before any comparison.)
    dbs = [
        dist(block(4, 0, 3), cyclic(4, 0, P=2, r=0)),
        dist(block(4, 0, 4), cyclic(4, 1, P=2, r=1)),
    ]
    invalid_ranks(
        dbs,
        "rank 1, dim 0: differs from the dimension dictionary of rank 0, "
        "which has the same proc_grid_rank 0",
    )


def test_indices_differ_for_same_grid_rank():
    dbs = [
        dist(block(4, 0, 2, P=2, r=0), unstructured(2, [0, 1])),
        dist(block(4, 2, 4, P=2, r=1), unstructured(2, [1, 0])),
    ]
    invalid_ranks(
        dbs,
        "rank 1, dim 1: differs from the dimension dictionary of rank 0, "
        "which has the same proc_grid_rank 0",
    )


def test_dist_type_disagrees_across_ranks():
    dbs = [dist(block(4, 0, 2, P=2, r=0)), dist(cyclic(4, 1, P=2, r=1))]
    invalid_ranks(dbs, "rank 1, dim 0, key 'dist_type': is 'c' but rank 0 says 'b'")


def test_periodic_disagrees_across_ranks():
    invalid_ranks(
        block_1d(4, [(0, 2), (2, 4)], periodic=[True, False]),
        "rank 1, dim 0, key 'periodic': is False but rank 0 says True",
    )


def test_one_to_one_disagrees_across_ranks():
    dbs = [
        dist(unstructured(4, [0, 1], P=2, r=0, one_to_one=True)),
        dist(unstructured(4, [2, 3], P=2, r=1, one_to_one=False)),
    ]
    invalid_ranks(dbs, "rank 1, dim 0, key 'one_to_one': is False but rank 0 says True")


def test_block_gap():
    invalid_ranks(
        block_1d(6, [(0, 2), (3, 6)]), "dim 0, key 'start'", re.compile(r"\brank 1\b"), "gap"
    )


def test_blocks_do_not_start_at_zero():
    invalid_ranks(
        block_1d(6, [(1, 3), (3, 6)]), "dim 0, key 'start'", re.compile(r"\brank 0\b"), "gap"
    )


def test_block_overlap_without_padding():
    invalid_ranks(
        block_1d(6, [(0, 4), (3, 6)]), "dim 0, key 'start'", re.compile(r"\brank 1\b"), "overlap"
    )


def test_blocks_do_not_end_at_size():
    invalid_ranks(
        block_1d(6, [(0, 3), (3, 5)]), "dim 0, key 'stop'", "the blocks end at 5 but size is 6"
    )


def test_communication_padding_mismatch_between_neighbours():
    # Rank 0 owns 0..4 with 1 index of communication padding on its high side; rank 1 owns
    # 4..8 but claims 2 on its low side.
    dbs = block_1d(8, [(0, 5), (2, 8)], padding=[(0, 1), (2, 0)])
    invalid_ranks(
        dbs,
        "dim 0, key 'padding'",
        "grid rank 0 has 1 on its high side but grid rank 1 has 2 on its low side",
    )


def test_communication_padding_wider_than_neighbour_owns():
    # Owned blocks 0..3, 3..4, 4..7: rank 2's low communication padding of 2 reaches past
    # the single index its neighbour (rank 1) owns.
    dbs = block_1d(7, [(0, 3), (3, 6), (2, 7)], padding=[(0, 0), (0, 2), (2, 0)])
    invalid_ranks(
        dbs,
        "dim 0, key 'padding'",
        "communication padding 2 of grid rank 2 is wider than the 1 indices its "
        "neighbour (grid rank 1) owns",
    )


def test_boundary_padding_wider_than_owned():
    # Rank 0 owns the single index 0 but declares a boundary padding of 2.
    dbs = block_1d(4, [(0, 1), (1, 4)], padding=[(2, 0), (0, 0)])
    invalid_ranks(dbs, "rank 0, dim 0, key 'padding'", "wider than")


def test_unstructured_indices_do_not_cover_size():
    dbs = [dist(unstructured(4, [0, 1], P=2, r=0)), dist(unstructured(4, [2], P=2, r=1))]
    invalid_ranks(dbs, "dim 0, key 'indices'", "global indices [3] are held by no rank")


def test_one_to_one_with_duplicates():
    dbs = [
        dist(unstructured(4, [0, 1, 2], P=2, r=0, one_to_one=True)),
        dist(unstructured(4, [2, 3], P=2, r=1, one_to_one=True)),
    ]
    invalid_ranks(dbs, "dim 0, key 'one_to_one'", "global indices [2] are held by more than one")


# -- cross-rank: valid inputs -----------------------------------------------------------------


def test_valid_2d_grid_round_trips():
    # Grid (2, 2): dim 0 irregular block, dim 1 block-cyclic with a trailing partial block.
    blocks = [(0, 1), (1, 5)]
    dbs = [
        dist(block(5, *blocks[i], P=2, r=i), cyclic(7, 2 * j, P=2, r=j, block_size=2))
        for i in range(2)
        for j in range(2)
    ]
    d = Distribution.from_distbuffers(dbs)
    assert d.global_shape == (5, 7)
    assert d.grid_shape == (2, 2)
    for k, db in enumerate(dbs):
        assert d.local_shape(k) == db["buffer"].shape
        assert d.dim_data(k) == validate_distbuffer(db).dim_data


def test_one_to_one_false_with_duplicates_accepted():
    dbs = [dist(unstructured(4, [0, 1, 2], P=2, r=0)), dist(unstructured(4, [2, 3], P=2, r=1))]
    assert Distribution.from_distbuffers(dbs).global_shape == (4,)


def test_v0_9_and_v0_10_padded_blocks_describe_the_same_distribution():
    v09 = block_1d(18, [(0, 9), (9, 18)], padding=[(1, 1), (1, 1)], version=V09)
    for db in v09:
        db["buffer"] = np.zeros(10)
    v10 = block_1d(18, [(0, 10), (8, 18)], padding=[(1, 1), (1, 1)])
    expected = Distribution.create((18,), grid=(2,), padding=1)
    assert Distribution.from_distbuffers(v09) == expected
    assert Distribution.from_distbuffers(v10) == expected


def test_matching_communication_padding_accepted():
    dbs = block_1d(7, [(0, 4), (2, 7)], padding=[(1, 1), (1, 0)])
    d = Distribution.from_distbuffers(dbs)
    assert d.dim_data(1)[0]["start"] == 2
    assert d.owned_indices(1)[0].tolist() == [3, 4, 5, 6]


@pytest.mark.parametrize(("size", "P", "block_size"), [(9, 4, 5), (1, 2, 1), (10, 6, 3), (0, 3, 2)])
def test_empty_cyclic_sections_import_any_start_past_the_end_and_export_size(size, P, block_size):
    # DAP 0.10: "an empty buffer is implied by start == size"; the natural formula
    # start = grid_rank * block_size gives start > size for trailing empty ranks (size 9,
    # block_size 5, 4 ranks: ranks 2 and 3). dapx reads both and writes start == size.
    m = dapx.CyclicMap(size, P, block_size=block_size)
    empty = [r for r in range(P) if m.local_length(r) == 0]
    assert empty
    for r in empty:
        assert m.dim_dict(r)["start"] == size
        for start in {size, r * block_size, r * block_size + 7}:
            d = cyclic(size, start, P=P, r=r, block_size=block_size)
            got = validate_distbuffer(dist(d, shape=(0,)))
            assert got.dim_data[0]["start"] == size
    dicts = [
        {
            "__version__": "0.10.0",
            "buffer": np.zeros(m.local_length(r)),
            "dim_data": ({**m.dim_dict(r), "start": max(r * block_size, m.dim_dict(r)["start"])},),
        }
        for r in range(P)
    ]
    assert dapx.Distribution.from_distbuffers(dicts).maps[0] == m


@pytest.mark.parametrize("P", [2, 3])
def test_the_first_block_starts_at_zero(P):
    # Grid rank 0 owns the first block, which starts at 0 (its start is lower only by
    # communication padding): a first rank starting at 1 leaves index 0 to nobody.
    first = {
        "dist_type": "b",
        "size": 6,
        "proc_grid_size": P,
        "proc_grid_rank": 0,
        "start": 1,
        "stop": 3,
    }
    with pytest.raises(dapx.DAPError, match="key 'start': grid rank 0 owns the first block"):
        validate_distbuffer({"__version__": "0.10.0", "buffer": np.zeros(2), "dim_data": (first,)})
    # Boundary padding sits inside the domain: rank 0 still starts at 0.
    padded = {**first, "start": 0, "stop": 3, "padding": (1, 0)}
    validate_distbuffer({"__version__": "0.10.0", "buffer": np.zeros(3), "dim_data": (padded,)})


@pytest.mark.parametrize("halo", [1, 2])
def test_periodic_padding_on_one_process_round_trips(halo):
    # DAP 0.10: "Block-distributed dimensions with proc_grid_size == 1 and with the periodic
    # and padding keys present are valid ... periodic on one processor".
    backend = dapx.simulated(1)
    x = np.arange(7.0)
    a = dapx.asarray(x, halo=halo, periodic=True, backend=backend)
    exported = a.distarray(0)
    (d,) = exported["dim_data"]
    assert (d["proc_grid_size"], d["periodic"], d["padding"]) == (1, True, (halo, halo))
    assert (d["start"], d["stop"]) == (-halo, x.size + halo)
    imported = dapx.Distribution.from_distbuffers([exported])
    assert imported.global_shape == (7,) and imported.maps[0].periodic
    b = dapx.from_distarray(exported, backend=backend)
    assert b.distribution == a.distribution
    a.update_halos()
    np.testing.assert_array_equal(a.local(0), np.pad(x, halo, mode="wrap"))
    v09 = {**d, "start": 0, "stop": x.size}  # 0.9's start/stop bound the owned indices
    again = {"__version__": "0.9.0", "buffer": a.local(0), "dim_data": (v09,)}
    assert dapx.Distribution.from_distbuffers([again]) == imported
