"""xarray's own duck-array tests, run with dapx as the array namespace.

xarray ships the tests (``xarray/tests/test_duck_array_wrapping.py``): each
DataArray method and top-level function must keep the duck array, its result's
``.data`` still the namespace's array type. The module registers namespaces in
its dict ``NAMESPACE_ARRAYS`` (name -> the names of the array type and the
constructor in that module, and known failures) and parametrizes its classes
``TestTopLevelMethods`` and ``TestDataArrayMethods`` by ``namespace``; their
set-up imports the module of that name. Here ``"dapx"`` is registered, with
`dapx.DistributedArray` and `dapx.asarray`, and each class is copied with
``namespace`` = ``"dapx"`` only. Each test runs on every ``dapx_backend``
(rank counts, and MPI under mpiexec).

What dapx cannot do yet is a strict xfail (`XFAILS`), so a fix shows up as a
failure to remove it from the list; xarray's own xfails (functions that
xarray computes with NumPy, SciPy, bottleneck or numbagg) are kept as they are.
"""

from __future__ import annotations

import types

import pytest

xr = pytest.importorskip("xarray")
_unclosed = xr.get_options()["warn_for_unclosed_files"]
wrapping = pytest.importorskip("xarray.tests.test_duck_array_wrapping")

# xarray's test data holds NaN, and its astype(int) test casts it: later xarray releases mark
# that test to ignore NumPy's cast warning, older ones (Python 3.10 gets xarray 2025.6) do not.
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in cast")
xr.set_options(warn_for_unclosed_files=_unclosed)  # xarray.tests sets it for its own suite

_IDX = (
    "xarray indexes the NumPy coordinate with argmax's DistributedArray of positions (its "
    "to_like_array converts the coordinate only for arrays with __array_namespace__, which "
    "DistributedArray lacks): an implicit gather (GatherWarning), and a NumPy result"
)
#: Tests dapx fails, by test name, with the reason.
XFAILS = {
    "test_isin": "np.isin gathers a distributed test set to every rank (a GatherWarning, an "
    "error in this suite)",
    "test_idxmax": _IDX,
    "test_idxmin": _IDX,
}

wrapping.NAMESPACE_ARRAYS["dapx"] = {
    "attrs": {"array": "DistributedArray", "constructor": "asarray"},
    "xfails": {},  # XFAILS instead: strict, so that they are noticed when they pass
}


@pytest.fixture(autouse=True)
def _on_dapx_backend(dapx_backend):
    """Every test on each `dapx_backend`, current while the class's set-up builds its arrays."""
    return dapx_backend


def _copy(function: types.FunctionType) -> types.FunctionType:
    """A copy of `function`, so that marks added to it leave xarray's own untouched."""
    copy = types.FunctionType(
        function.__code__,
        function.__globals__,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    copy.__dict__.update(function.__dict__)
    copy.__kwdefaults__ = function.__kwdefaults__
    copy.__qualname__ = function.__qualname__
    return copy


def _for_dapx(cls: type) -> type:
    """`cls` parametrized by ``namespace="dapx"`` alone, with dapx's xfails marked."""
    namespace = {
        k: v for k, v in vars(cls).items() if k not in ("pytestmark", "__dict__", "__weakref__")
    }
    for name, reason in XFAILS.items():
        if name in namespace:
            namespace[name] = pytest.mark.xfail(reason=reason, strict=True)(_copy(namespace[name]))
    namespace["__module__"] = __name__
    namespace["__qualname__"] = cls.__name__
    copy = type(cls.__name__, cls.__bases__, namespace)
    return pytest.mark.parametrize("namespace", ["dapx"])(copy)


TestTopLevelMethods = _for_dapx(wrapping.TestTopLevelMethods)
TestDataArrayMethods = _for_dapx(wrapping.TestDataArrayMethods)


def test_every_class_of_xarrays_module_runs_here():
    """A class added to xarray's module would otherwise be skipped without notice."""
    theirs = {name for name in vars(wrapping) if name.startswith("Test")}
    assert theirs == {"TestTopLevelMethods", "TestDataArrayMethods"}
