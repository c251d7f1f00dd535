"""dapx.testing (assert_eq, layout, hypothesis strategies) and the pytest plugin."""

from __future__ import annotations

import importlib.metadata
import math
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dapx
from dapx.layout.maps import BlockMap, CyclicMap, UnstructuredMap
from dapx.testing import LAYOUTS, assert_eq, distributed_arrays, distributions, layout
from tests import _processes

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


# -- assert_eq ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "x",
    [
        np.arange(12.0).reshape(3, 4),
        np.arange(12, dtype=np.float32),
        np.arange(-5, 7).reshape(2, 2, 3),
        np.arange(12) % 3 == 0,
        np.arange(6) * (1 + 2j),
        np.zeros((0, 4)),
        np.array(3.5),
    ],
)
def test_assert_eq_passes_on_equal_data(dapx_backend, x):
    assert_eq(dapx.asarray(x, backend=dapx_backend), x.copy())


def test_assert_eq_reports_shape_dtype_and_values():
    b = dapx.simulated(2)
    a = dapx.asarray(np.arange(6).reshape(2, 3), backend=b)
    shapes = r"shapes differ: distributed \(2, 3\), expected \(3, 2\)"
    with pytest.raises(AssertionError, match=shapes):
        assert_eq(a, np.arange(6).reshape(3, 2))
    with pytest.raises(AssertionError, match="dtypes differ: distributed int64, expected float64"):
        assert_eq(a, np.arange(6.0).reshape(2, 3))
    assert_eq(a, np.arange(6.0).reshape(2, 3), check_dtype=False)
    wrong = np.arange(6).reshape(2, 3)
    wrong[1, 2] = 7
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 6") as info:
        assert_eq(a, wrong, err_msg="after scaling")
    message = str(info.value)
    assert "after scaling" in message and "grid=(2, 1)" in message and "dist=('b', 'b')" in message


def test_assert_eq_tolerances_follow_the_dtype():
    b = dapx.simulated(3)
    x = np.linspace(1, 2, 9)
    a = dapx.asarray(x, backend=b)
    assert_eq(a, x * (1 + 1e-13))
    with pytest.raises(AssertionError, match="Not equal to tolerance rtol=1e-12"):
        assert_eq(a, x * (1 + 1e-10))
    assert_eq(a, x * (1 + 1e-10), rtol=1e-9)
    with pytest.raises(AssertionError, match="Not equal to tolerance rtol=0"):
        assert_eq(a, x * (1 + 1e-15) + 1e-15, rtol=0)
    a32 = dapx.asarray(x.astype(np.float32), backend=b)
    assert_eq(a32, (x * (1 + 1e-6)).astype(np.float32))
    with pytest.raises(AssertionError, match="rtol=1e-05"):
        assert_eq(a32, (x * (1 + 1e-4)).astype(np.float32))
    # Mixed precisions use the looser tolerance.
    assert_eq(a32, x * (1 + 1e-6), check_dtype=False)
    c = dapx.asarray(x * 1j, backend=b)
    assert_eq(c, x * 1j * (1 + 1e-13))
    with pytest.raises(AssertionError):
        assert_eq(c, x * 1j * (1 + 1e-10))


def test_assert_eq_integers_are_exact_unless_a_tolerance_is_given():
    b = dapx.simulated(2)
    a = dapx.asarray(np.array([100, 200, 300]), backend=b)
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 3"):
        assert_eq(a, np.array([100, 201, 300]))
    assert_eq(a, np.array([100, 201, 300]), rtol=0.01)
    assert_eq(a, np.array([100, 201, 300]), atol=1)
    flags = dapx.asarray(np.array([True, False, True]), backend=b)
    with pytest.raises(AssertionError, match="Mismatched elements"):
        assert_eq(flags, np.array([True, True, True]))


def test_assert_eq_nan_and_distributed_expected():
    b = dapx.simulated(4)
    x = np.array([1.0, np.nan, 3.0, np.inf, -np.inf])
    assert_eq(dapx.asarray(x, backend=b), x)
    with pytest.raises(AssertionError):
        assert_eq(dapx.asarray(x, backend=b), np.nan_to_num(x))
    assert_eq(dapx.asarray(x, backend=b, dist="c"), dapx.asarray(x, backend=b))


def test_assert_eq_checks_local_blocks():
    b = dapx.simulated(3)
    a = dapx.arange(7.0, backend=b)
    bad_dtype = dapx.DistributedArray(
        a.distribution, {**a.locals, 1: a.local(1).astype(np.float32)}, b
    )
    with pytest.raises(AssertionError, match="rank 1's local block has dtype float32"):
        assert_eq(bad_dtype, np.arange(7.0))
    bad_shape = dapx.DistributedArray(a.distribution, {**a.locals, 2: np.zeros(5)}, b)
    with pytest.raises(
        AssertionError,
        match=r"rank 2's local block has shape \(5,\) but the "
        r"distribution gives it \(2,\)",
    ):
        assert_eq(bad_shape, np.arange(7.0))


def test_assert_eq_needs_a_distributed_array():
    with pytest.raises(TypeError, match="got ndarray"):
        assert_eq(np.zeros(3), np.zeros(3))


# -- layout ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize("nranks", [1, 2, 3, 4, 6])
def test_layouts_build_valid_distributions(kind, nranks):
    for shape in [(0,), (1,), (13,), (5, 7), (0, 3), (3, 4, 5)]:
        kw = layout(kind, shape, nranks, seed=nranks)
        d = dapx.Distribution.create(shape, nranks=nranks, **kw)
        assert d.global_shape == shape and d.nranks == nranks
        assert d.grid_shape == dapx.dims_create(nranks, len(shape))
        owned = sum(math.prod(len(i) for i in d.owned_indices(r)) for r in range(nranks))
        assert owned == math.prod(shape)
        for m, n, p in zip(d.maps, shape, d.grid_shape):
            if kind in ("b", "b-irregular"):
                assert isinstance(m, BlockMap)
            elif kind == "u":
                assert isinstance(m, UnstructuredMap)
            else:
                assert isinstance(m, CyclicMap)
                size = {"c": 1, "c2": 2, "c-ceil": max(1, math.ceil(n / p))}[kind]
                assert m.block_size == size


def test_layout_details():
    assert layout("b", (), 4) == {}
    irregular = layout("b-irregular", (10, 3), 6, seed=1)
    assert irregular["grid"] == (3, 2)
    for spec, n in zip(irregular["dist"], (10, 3)):
        bounds = spec["bounds"]
        assert bounds[0] == 0 and bounds[-1] == n and np.all(np.diff(bounds) >= 0)
    assert layout("b-irregular", 10, 3, seed=1) == layout("b-irregular", (10,), 3, seed=1)
    perm = layout("u", (9,), 3, seed=2)["dist"][0]["indices"]
    assert sorted(i for part in perm for i in part) == list(range(9))
    with pytest.raises(ValueError, match="unknown layout 'zigzag'"):
        layout("zigzag", (3,), 2)


# -- strategies -----------------------------------------------------------------------------------


@SETTINGS
@given(distributions())
def test_distributions_are_valid(d):
    assert 1 <= d.nranks <= 6
    assert 1 <= d.ndim <= 3 and all(0 <= n <= 10 for n in d.global_shape)
    dim_data = [d.dim_data(r) for r in range(d.nranks)]
    assert dapx.Distribution.from_dim_data(dim_data) == d
    owned = sum(math.prod(len(i) for i in d.owned_indices(r)) for r in range(d.nranks))
    assert owned == math.prod(d.global_shape)


@SETTINGS
@given(distributions(shape=(6, 4), nranks=st.sampled_from([2, 6]), dist_types=("c", "n")))
def test_distributions_respect_the_arguments(d):
    assert d.global_shape == (6, 4) and d.nranks in (2, 6)
    for m in d.maps:
        assert isinstance(m, CyclicMap) or m.nprocs == 1


def test_distributions_zero_d_and_bad_arguments():
    @settings(max_examples=5, database=None)
    @given(distributions(shape=(), nranks=3))
    def zero_d(d):
        assert d.ndim == 0 and d.global_shape == ()

    zero_d()
    with pytest.raises(ValueError, match="dist_types must be a non-empty subset"):
        distributions(dist_types=("x",))
    with pytest.raises(ValueError, match="cannot spread an array over nranks=4"):
        distributions(nranks=4, dist_types=("n",))


@SETTINGS
@given(data=st.data())
def test_distributed_arrays_pairs(dapx_backend, data):
    dtype = data.draw(st.sampled_from([np.float64, np.float32, np.int64, np.bool_, np.complex128]))
    a, x = data.draw(distributed_arrays(dapx_backend, dtype=dtype))
    assert a.backend == dapx_backend and a.dtype == x.dtype == np.dtype(dtype)
    assert isinstance(x, np.ndarray) and np.isfinite(x).all()
    assert_eq(a, x)


@SETTINGS
@given(data=st.data())
def test_distributed_arrays_with_fixed_shape_and_elements(dapx_backend, data):
    a, x = data.draw(
        distributed_arrays(
            dapx_backend,
            dtype=st.just(np.int64),
            shape=(3, 5),
            dist_types=("u",),
            elements=st.integers(7, 9),
        )
    )
    assert a.shape == (3, 5) and x.min() >= 7 and x.max() <= 9
    assert set(a.distribution.dist_types) == {"u"}
    assert_eq(a, x)


def test_import_dapx_does_not_need_hypothesis():
    code = (
        "import sys; sys.modules['hypothesis'] = None; import dapx, dapx.testing; "
        "import numpy as np; a = dapx.arange(3, backend=dapx.simulated(2)); "
        "dapx.testing.assert_eq(a, np.arange(3)); print('ok')"
    )
    out = _processes.run([sys.executable, "-c", code], timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


# -- the pytest plugin ----------------------------------------------------------------------------

USER_TESTS = """
import numpy as np
import dapx

def test_double(dapx_backend):
    assert dapx.get_backend() is dapx_backend
    a = dapx.arange(10)
    assert a.backend == dapx_backend
    assert np.array_equal((2 * a).gather(), 2 * np.arange(10))

def test_without_the_fixture():
    pass
"""


def test_plugin_is_registered_by_entry_point(request):
    points = importlib.metadata.entry_points(group="pytest11")
    assert any(p.name == "dapx" and p.value == "dapx.testing.pytest_plugin" for p in points)
    assert request.config.pluginmanager.has_plugin("dapx")


def test_plugin_runs_each_test_once_per_rank_count(pytester):
    pytester.makepyfile(test_user=USER_TESTS.replace("def test_without", "def _not_a_test"))
    previous = dapx.simulated(5)
    with dapx.use_backend(previous):
        result = pytester.runpytest("--dapx-ranks=1,3", "-v", "-p", "no:cacheprovider")
        assert dapx.get_backend() is previous
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["*test_double?ranks=1? PASSED*", "*test_double?ranks=3? PASSED*"], consecutive=False
    )


def test_plugin_default_ranks_and_plain_tests(pytester):
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest("-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "*test_double?ranks=1?*",
            "*test_double?ranks=2?*",
            "*test_double?ranks=4?*",
            "*test_without_the_fixture PASSED*",
        ]
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0,2", "takes positive integers separated by commas, got '0,2' (bad entry '0')"),
        ("two", "takes positive integers"),
        ("1;2", "bad entry '1;2'"),
        (",", "needs at least one rank count"),
    ],
)
def test_plugin_rejects_bad_rank_lists(pytester, value, message):
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest(f"--dapx-ranks={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: --dapx-ranks *{message}*"])


def test_parse_ranks():
    from dapx.testing.pytest_plugin import parse_ranks

    assert parse_ranks("1,2,4") == [1, 2, 4]
    assert parse_ranks(" 3 , 1,3 ") == [3, 1]
    with pytest.raises(ValueError, match="bad entry '-1'"):
        parse_ranks("2,-1")
    with pytest.raises(ValueError, match="at least one rank count"):
        parse_ranks(" , ")
