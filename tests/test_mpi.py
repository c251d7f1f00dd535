"""Runs the MPI tests under mpiexec, each run with a timeout so a hang fails."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
MPIEXEC = str(Path(sys.executable).parent / "mpiexec")
if not Path(MPIEXEC).exists():
    MPIEXEC = shutil.which("mpiexec") or MPIEXEC

pytestmark = pytest.mark.skipif(
    os.environ.get("DAPX_MPI_RUN") == "1", reason="already inside an MPI run"
)


def _env(**extra):
    env = dict(os.environ)
    env.pop("DAPX_BACKEND", None)
    env.update({"DAPX_MPI_RUN": "1", **extra})
    return env


def _mpiexec(n, args, timeout, cwd=HERE.parent, **env):
    return subprocess.run(
        [MPIEXEC, "-n", str(n), sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(**env),
        cwd=cwd,
    )


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_spmd_suite_under_mpiexec(n):
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "tests/mpi"]
    if n == 4:  # oversubscribed on two cores: a representative subset
        args += ["-k", "redistribute or reductions or from_local or bad_dict"]
    result = _mpiexec(n, args, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "passed" in result.stdout


ARRAY_TESTS = [
    f"tests/test_{name}.py"
    for name in ("array", "creation", "reductions", "indexing", "manipulation", "random", "xarray")
]

#: What ``-n 4`` (oversubscribed on two cores) runs of ARRAY_TESTS: a few tests
#: of each file, some for one layout only, that together reach every kind of
#: operation: redistribution, elementwise and alignment, creation and the DAP,
#: reductions, statistics, NaN functions, scans, ufunc methods, basic and
#: fancy indexing and assignment, the manipulation functions, sorting, einsum,
#: random numbers, and xarray on DistributedArrays with the ``.dap`` accessor.
ARRAY_SUBSET = [
    "test_local_is_the_block_itself",
    "test_redistribute_between_every_pair_of_layouts",
    "test_operators_and_ufuncs_match_numpy[mpi-b-irregular]",
    "test_mixed_layouts_align_to_the_first_distributed_operand",
    "test_ufunc_keywords",
    "test_asarray[mpi-u]",
    "test_from_distarray_round_trip_without_copies",
    "test_fromfunction_calls_each_rank_with_its_own_indices",
    "test_reductions_match_numpy[mpi-mixed",
    "test_statistics_match_numpy[mpi-ib",
    "test_nan_functions_match_numpy[mpi-us",
    "test_scans_match_numpy[mpi-c-",
    "test_ufunc_reduce_match_numpy[mpi-bc]",
    "test_ufunc_outer",
    "test_where_and_initial[mpi-u",
    "test_reduce_scatter_moves_only_partials",
    "test_arg_ties_and_nans_pick_the_first_global_index",
    "test_basic_getitem_matches_numpy",
    "test_basic_setitem_matches_numpy",
    "test_fancy_getitem_matches_numpy",
    "test_fancy_setitem_matches_numpy",
    "test_distributed_index_arrays",
    "test_distributed_masks",
    "test_integer_index_merges_grid_axes",
    "test_transpose_family[u-",
    "test_reshape[b-irregular-",
    "test_concatenate[c2-",
    "test_pad_2d[u-",
    "test_roll[b-irregular-",
    "test_diff[c-",
    "test_where_clip_round[b-irregular-",
    "test_nonzero_family[c2-",
    "test_isclose_allclose_array_equal[u-",
    "test_sort_1d[u-",
    "test_sort_nd[b-irregular-",
    "test_searchsorted[c2-",
    "test_einsum[b-irregular-",
    "test_random_matches_the_stream_on_every_layout",
    "test_every_method_is_layout_independent",
    "test_operation_matches_numpy_backed_xarray[mpi-rolling_two]",
    "test_local_blocks_come_with_their_coordinates",
]


@pytest.mark.slow
@pytest.mark.timeout(1000)
@pytest.mark.parametrize(
    ("n", "select", "timeout"),
    [(2, [], 300), (3, [], 450), (4, ["-k", " or ".join(ARRAY_SUBSET)], 300)],
    ids=["2", "3", "4-subset"],
)
def test_array_suite_under_mpiexec(n, select, timeout):
    """The array tests with ``dapx_backend`` = ``dapx.mpi()``, one rank per process.

    Odd counts find uneven-split bugs; ``-x`` and the timeout end a run whose
    ranks fell out of step (the plugin fails a test on every rank when it
    fails on one, so they stay in step otherwise).
    """
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "-o", "timeout=120"]
    try:
        result = _mpiexec(n, [*args, *ARRAY_TESTS, *select], timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = _text(e.output) + _text(e.stderr)
        pytest.fail(f"mpiexec -n {n} timed out after {timeout} s (a hang?):\n{out[-6000:]}")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-4000:]
    passed = re.findall(r"(\d+) passed", result.stdout)  # one summary per rank, all alike
    assert len(passed) == n and len(set(passed)) == 1, result.stdout[-6000:]
    assert int(passed[0]) >= (100 if select else 900), passed


PLUGIN_USER_TESTS = """
import numpy as np
import dapx

def test_fails_on_rank_1(dapx_backend):
    assert dapx_backend.local_ranks == (0,)

def test_fails_on_rank_0_outside_any_collective(dapx_backend):
    x = np.ones(8)
    x[0] = 0.0  # only rank 0 holds it
    a = dapx.asarray(x)
    with np.errstate(divide="raise"):
        1.0 / a  # purely local: rank 1 finishes the test before it hears

def test_runs_in_step(dapx_backend):
    assert np.array_equal(dapx.arange(10.0, dist="c").gather(), np.arange(10.0))

def test_out_of_step(dapx_backend):
    assert dapx_backend.local_ranks == (0,)  # rank 1 leaves for the outcome exchange ...
    dapx_backend.allgather({0: "elsewhere"})  # ... rank 0 makes another collective call
"""


def test_plugin_fails_a_test_on_every_rank_when_it_fails_on_one(tmp_path):
    (tmp_path / "test_user.py").write_text(PLUGIN_USER_TESTS)
    args = ["-m", "pytest", "-p", "no:cacheprovider", "-o", "timeout=60", "test_user.py"]
    result = _mpiexec(2, [*args, "-k", "not out_of_step"], timeout=90, cwd=tmp_path)
    out = result.stdout
    assert out.count("2 failed, 1 passed") == 2, out + result.stderr
    assert "call failed on rank 1 (passed on rank 0)" in out
    assert "rank 0 failed: FloatingPointError: divide by zero" in out
    # Ranks that made different collective calls cannot go on: the job ends.
    aborted = _mpiexec(2, [*args, "-k", "out_of_step"], timeout=90, cwd=tmp_path)
    assert aborted.returncode != 0
    assert "ranks out of step after test_user.py::test_out_of_step[mpi]" in aborted.stderr


def _text(output) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def _results(stdout):
    # Ranks share one pipe, so their lines may run into each other.
    rows = re.findall(r"RESULT (\d+) (\S+) (.*?)(?=RESULT |\n|$)", stdout)
    return {int(rank): (kind, message.strip()) for rank, kind, message in rows}


@pytest.mark.parametrize("scenario", ["before_collective", "in_user_function"])
def test_failure_on_one_rank_raises_rank_error_everywhere(scenario):
    start = time.monotonic()
    result = _mpiexec(3, ["tests/mpi/failures.py", scenario], timeout=60)
    elapsed = time.monotonic() - start
    results = _results(result.stdout)
    assert sorted(results) == [0, 1, 2], result.stdout + result.stderr
    for kind, message in results.values():
        assert kind == "RankError"
        assert message.startswith("rank 1 failed:")
    expected = "ZeroDivisionError" if scenario == "in_user_function" else "ValueError"
    assert all(expected in message for _, message in results.values())
    assert elapsed < 10 + 5  # 10 s for the failure, the rest for starting 3 interpreters


def test_debug_mode_reports_mismatched_collectives():
    result = _mpiexec(2, ["tests/mpi/failures.py", "debug_mismatch"], timeout=60, DAPX_DEBUG="1")
    results = _results(result.stdout)
    assert sorted(results) == [0, 1], result.stdout + result.stderr
    for _, message in results.values():
        assert "ranks are calling different collectives" in message


def test_simulated_and_mpi_results_are_bitwise_identical(tmp_path):
    script = HERE / "mpi" / "same_bits.py"
    simulated = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "sim.npz"), "3"],
        capture_output=True, text=True, timeout=120, env=_env(DAPX_MPI_RUN="0"),
    )  # fmt: skip
    assert simulated.returncode == 0, simulated.stderr
    under_mpi = _mpiexec(3, [str(script), str(tmp_path / "mpi.npz"), "3"], timeout=120)
    assert under_mpi.returncode == 0, under_mpi.stderr
    import numpy as np

    a, b = np.load(tmp_path / "sim.npz"), np.load(tmp_path / "mpi.npz")
    assert sorted(a.files) == sorted(b.files) and a.files
    for key in a.files:
        assert a[key].tobytes() == b[key].tobytes(), key


def test_info_reports_ranks_under_mpiexec():
    result = _mpiexec(2, ["-m", "dapx", "info"], timeout=60)
    assert result.returncode == 0, result.stderr
    assert "MPI ranks" in result.stdout and "2 (this process is rank 1)" in result.stdout
    assert "MPI library" in result.stdout and "MPICH" in result.stdout
