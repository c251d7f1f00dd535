"""Runs the MPI tests under mpiexec, each run with a timeout so a hang fails.

A pytest run under mpiexec passes when every rank prints its summary, all
alike, without failures or errors, and accounts for every test that a
collection of the same files and selection finds (`_check_spmd_run`).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import pytest

from tests import _processes

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
    """``mpiexec -n n python args``; on timeout every rank is killed (`_processes.run`)."""
    return _processes.run(
        [MPIEXEC, "-n", str(n), sys.executable, *args], timeout=timeout, env=_env(**env), cwd=cwd
    )


class Collected(NamedTuple):
    """What a pytest run under mpiexec should report on every rank."""

    nodeids: tuple[str, ...]  # every test collected
    runnable: int  # those without a skip mark


#: Tests that may skip themselves at run time, for some rank counts: the minimum of passed
#: tests is the runnable ones less these. Today at most 5 in one run: at -n 1 one SPMD test
#: needs two ranks, and five tests of tests/test_partitioned.py need every block in their
#: process (to_dask).
RUNTIME_SKIPS = 10

_COLLECT = """
import sys
import pytest

class Report:
    def pytest_collection_finish(self, session):
        for item in session.items:
            skip = any(m.name == "skip" or (m.name == "skipif" and any(a is True for a in m.args))
                       for m in item.iter_markers())
            print("COLLECTED", int(skip), item.nodeid)

sys.exit(pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *sys.argv[1:]],
                     plugins=[Report()]))
"""


@lru_cache
def _collect(*args: str) -> Collected:
    """The tests ``pytest args`` collects under MPI (``DAPX_BACKEND=mpi``: same ids and skips)."""
    result = _processes.run(
        [sys.executable, "-c", _COLLECT, *args],
        timeout=120,
        env=_env(DAPX_BACKEND="mpi"),
        cwd=HERE.parent,
    )
    rows = re.findall(r"^COLLECTED ([01]) (.+)$", result.stdout, flags=re.M)
    assert result.returncode == 0 and rows, result.stdout[-3000:] + result.stderr[-3000:]
    return Collected(tuple(nodeid for _, nodeid in rows), sum(skip == "0" for skip, _ in rows))


#: A rank's summary line, e.g. "1361 passed, 156 skipped in 20.15s".
_SUMMARY = re.compile(
    r"((?:\d+ (?:passed|failed|skipped|deselected|xfailed|xpassed|warnings?|errors?), )*"
    r"\d+ (?:passed|failed|skipped|deselected|xfailed|xpassed|warnings?|errors?)) in \d"
)


def _summaries(stdout: str) -> list[dict[str, int]]:
    """The counts of every summary line in `stdout` (one per rank), as {"passed": 3, ...}."""
    singular = {"warnings": "warning", "errors": "error"}
    return [
        {singular.get(word, word): int(number) for number, word in re.findall(r"(\d+) (\w+)", line)}
        for line in _SUMMARY.findall(stdout)
    ]


def _check_spmd_run(result, n: int, collected: Collected) -> dict[str, int]:
    """Fail unless the run ended well and each of its `n` ranks reported every collected test.

    Every rank prints one summary; all must be alike, without failures or
    errors, account for every collected test, and run (pass, or xfail as
    marked) at least the runnable tests less `RUNTIME_SKIPS`. Returns the
    counts of one rank.
    """
    report = result.stdout[-6000:] + result.stderr[-4000:]
    assert result.returncode == 0, report
    summaries = _summaries(result.stdout)
    assert len(summaries) == n, f"{len(summaries)} summaries from {n} ranks:\n{report}"
    assert all(s == summaries[0] for s in summaries), f"the ranks differ: {summaries}"
    counts = summaries[0]
    assert counts.get("failed", 0) == counts.get("error", 0) == 0, report
    reported = sum(counts.get(k, 0) for k in ("passed", "skipped", "xfailed", "xpassed"))
    assert reported == len(collected.nodeids), (
        f"{reported} tests reported, {len(collected.nodeids)} collected: {counts}\n{report}"
    )
    ran = sum(counts.get(k, 0) for k in ("passed", "xfailed", "xpassed"))  # marked xfails run
    minimum = collected.runnable - RUNTIME_SKIPS
    assert ran >= minimum, f"fewer than {minimum} tests ran: {counts}\n{report}"
    return counts


def test_spmd_run_check_rejects_runs_that_merely_say_passed():
    collected = Collected(tuple(f"t{i}" for i in range(30)), runnable=28)

    def run(stdout, returncode=0):
        return subprocess.CompletedProcess([], returncode, stdout, "")

    ok = "..\n28 passed, 2 skipped, 1 warning in 1.52s\n"
    assert _check_spmd_run(run(ok * 2), 2, collected) == {"passed": 28, "skipped": 2, "warning": 1}
    for stdout, returncode in [
        (ok * 2, 1),  # a rank failed
        (ok, 0),  # a rank printed no summary
        (ok + "28 passed, 1 skipped in 1.5s\n", 0),  # the ranks differ
        ("27 passed, 1 failed, 2 skipped in 1.5s\n" * 2, 0),
        ("28 passed, 1 error in 1.5s\n" * 2, 0),
        ("27 passed, 2 skipped in 1.5s\n" * 2, 0),  # a test went missing
        ("15 passed, 15 skipped in 1.5s\n" * 2, 0),  # fewer than 28 - RUNTIME_SKIPS ran
        ("no tests ran in 0.01s\n" * 2, 0),
    ]:
        with pytest.raises(AssertionError):
            _check_spmd_run(run(stdout, returncode), 2, collected)


def test_a_sample_keeps_every_function_and_the_samples_cover_every_case():
    from types import SimpleNamespace

    from tests.conftest import sampled

    def items(name, count):
        return [
            SimpleNamespace(path="t.py", originalname=name, name=f"{name}[{i}]")
            for i in range(count)
        ]

    everything = items("f", 13) + items("g", 2) + items("h", 1)
    samples = [sampled(everything, f"{r}/6") for r in range(6)]
    for sample in samples:  # f's 13 cases go 3, 2, 2, 2, 2, 2; g's and h's at least one each
        kept = [i.originalname for i in sample]
        assert kept.count("g") == kept.count("h") == 1 and kept.count("f") in (2, 3)
        assert sample == [i for i in everything if i in sample]  # in collection order
    f_cases = [sorted(i.name for i in sample if i.originalname == "f") for sample in samples]
    assert sorted(map(len, f_cases)) == [2, 2, 2, 2, 2, 3]
    assert sorted(n for case in f_cases for n in case) == sorted(
        i.name for i in everything if i.originalname == "f"
    )
    assert f_cases[0] != [f"f[{i}]" for i in range(0, 13, 6)]  # not every 6th in order
    for bad in ("6/6", "-1/3", "1", "a/b"):
        with pytest.raises(pytest.UsageError, match="--test-sample"):
            sampled(everything, bad)


SPMD_ARGS = ("-q", "-p", "no:cacheprovider", "-x", "tests/mpi")


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_spmd_suite_under_mpiexec(n):
    """tests/mpi, whole at every count: -n 4 runs the halo exchange on a 2 x 2 grid."""
    collected = _collect(*SPMD_ARGS)
    cartesian = "tests/mpi/test_spmd.py::test_halo_exchange_runs_on_a_cartesian_communicator"
    assert any(nodeid.startswith(cartesian) for nodeid in collected.nodeids)
    result = _mpiexec(n, ["-m", "pytest", *SPMD_ARGS], timeout=240)
    _check_spmd_run(result, n, collected)


ARRAY_TESTS = [
    f"tests/test_{name}.py"
    for name in (
        "array",
        "creation",
        "reductions",
        "indexing",
        "manipulation",
        "windows",
        "broadcasting",
        "random",
        "xarray",
        "linalg",
        "halo",
        "partitioned",
        "xarray_duck_array",
    )
]
#: Files of NumPy's library functions, algorithms and I/O; with ARRAY_TESTS, what the runs of
#: `test_array_suite_under_mpiexec` draw from.
NEW_FUNCTION_TESTS = [
    f"tests/test_{name}.py"
    for name in (
        "io",
        "stacking",
        "numpy_linalg",
        "fourier",
        "fft_distributed",
        "numpy_library",
        "arranging",
        "statistics_sets",
        "array_api",
        "tall_skinny",
        "summa",
        "factorizations",
        "function_dtypes_errors",
        "sorting_at_scale",
        "statistics_chunked",
        "overlap_in_place",
    )
]

#: What ``-n 4`` (oversubscribed on two cores) runs of ARRAY_TESTS: a few tests
#: of each file, some for one layout only, that together reach every kind of
#: operation: redistribution, elementwise and alignment, creation and the DAP,
#: reductions, statistics, NaN functions, scans, ufunc methods, basic and
#: fancy indexing and assignment, the manipulation functions, sorting, einsum,
#: random numbers, xarray on DistributedArrays with the ``.dap`` accessor,
#: matrix products, halo updates and the heat demo on a 2 x 2 grid (corners),
#: map_overlap, the ``__partitioned__`` export and import, and xarray's own
#: duck-array tests.
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
    "test_matmul_of_two_distributed_matrices[mpi-7-5-6-",
    "test_matmul_with_vectors_and_numpy_operands",
    "test_tensordot[mpi-sa0-",
    "test_inner_outer_vdot_dot[mpi-complex128-",
    "test_ring_result_is_the_same_bits_on_every_run",
    "test_update_halos_per_axis",
    "test_dtypes",
    "test_demo_equals_the_numpy_solver",
    "test_map_overlap_matches_the_numpy_stencil",
    "test_map_overlap_options",
    "test_export_import_round_trip",
    "test_export_follows_every_rule_of_the_spec[mpi-float64]",
    "test_spmd_producer_with_numpy_data",
    "test_round_trip_shares_memory_and_agrees_with_the_dap",
    "test_export_of_padded_array_holds_the_interior",
    "test_weighted[mpi-dapx]",
    "test_coarsen_reduce[mpi-dapx]",
    "test_zarr_round_trip[mpi-",
    "test_hdf5_round_trip[mpi-",
    "test_dataset_netcdf_round_trip_matches_xarray_file[mpi-c]",
    "test_dataset_zarr_round_trip[mpi-b]",
    "test_a_failed_write_does_not_look_complete",
    "test_chunk_manager_opens_files_distributed",
    "test_stacks[u-mpi-",
    "test_flips[c2-mpi-",
    "test_mathematical[b-irregular-mpi-",
    "test_square_matrix_functions[c2-mpi-",
    "test_singular_matrix_raises_linalg_error_on_every_rank",
    "test_lstsq_and_tensor_solvers[u-mpi",
    "test_many_axes_transforms[b-irregular-mpi-",
    "test_shifts[c-mpi-",
    "test_put_place_putmask_copyto[u-mpi-",
    "test_partition_and_argpartition[c2-mpi-",
    "test_memory_types_paths_and_printing[b-irregular-mpi",
    "test_insert_and_delete[c2-mpi-",
    "test_spaced_values[u-mpi",
    "test_apply_along_axis[b-mpi-",
    "test_unique[u-mpi-",
    "test_set_operations[c-mpi-",
    "test_histogram[b-irregular-mpi-",
    "test_cov_and_corrcoef[c2-mpi-",
    "test_binary[u-mpi-",
    "test_searching_sorting_sets[c2-mpi",
    "test_creation[mpi",
]


@pytest.mark.slow
@pytest.mark.timeout(1000)
@pytest.mark.parametrize(
    ("n", "select", "timeout"),
    [
        (2, ["--test-sample", "0/6"], 300),
        (3, ["--test-sample", "3/6"], 400),
        (4, ["-k", " or ".join(ARRAY_SUBSET), "--test-sample", "0/2"], 300),
    ],
    ids=["2", "3", "4-subset"],
)
def test_array_suite_under_mpiexec(n, select, timeout):
    """The array tests with ``dapx_backend`` = ``dapx.mpi()``, one rank per process.

    Every test function of ARRAY_TESTS and NEW_FUNCTION_TESTS runs at -n 2 and
    at -n 3, each time on a different sixth of its parametrizations (layouts,
    shapes, dtypes; ``--test-sample``, tests/conftest.py): the same tests run
    whole in-process on 1-6 simulated ranks, and what only real processes
    show (a rank-dependent path that skips a collective, per-process state)
    shows in any of a function's cases. All of them under mpiexec took half
    the suite's time. Odd counts find uneven-split bugs; -n 4 (a 2 x 2 grid,
    oversubscribed) runs half of ARRAY_SUBSET's cases. ``-x`` and the
    timeout end a run whose ranks fell out of step (the plugin fails a test
    on every rank when it fails on one, so they stay in step otherwise).
    """
    files = [*ARRAY_TESTS, *NEW_FUNCTION_TESTS]
    args = ("-q", "-p", "no:cacheprovider", "-x", "-o", "timeout=120", *files, *select)
    collected = _collect(*args)
    if "-k" in select:  # a renamed test would silently drop out of the subset
        missing = [k for k in ARRAY_SUBSET if not any(k in i for i in collected.nodeids)]
        assert not missing, f"ARRAY_SUBSET entries that select no test: {missing}"
    result = _mpiexec(n, ["-m", "pytest", *args], timeout=timeout)
    _check_spmd_run(result, n, collected)


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


@pytest.mark.parametrize("debug", ["0", "1"])
def test_a_rank_failing_alone_says_why_before_the_job_aborts(debug):
    # Rank 1 fails before any exchange; ranks 0 and 2 need none, finish and leave it alone in
    # failure recovery. The job aborts, and rank 1's own error reaches stderr first.
    start = time.monotonic()
    result = _mpiexec(
        3,
        ["tests/mpi/failures.py", "outside_collective"],
        timeout=60,
        DAPX_FAILURE_TIMEOUT="3",
        DAPX_DEBUG=debug,
    )
    elapsed = time.monotonic() - start
    assert result.returncode != 0
    assert _results(result.stdout) == {0: ("none", "-"), 2: ("none", "-")}, result.stdout
    lines = result.stderr.splitlines()
    cause = [line for line in lines if line.startswith("dapx: rank 1 failed: ValueError: shape")]
    assert len(cause) == 1, result.stderr
    aborting = next(i for i, line in enumerate(lines) if "did not join failure recovery" in line)
    assert lines.index(cause[0]) < aborting
    assert ("Traceback (most recent call last)" in result.stderr) == (debug == "1")
    assert elapsed < 3 + 15  # the recovery deadline, then starting and ending 3 interpreters


def test_a_rank_killed_in_a_collective_ends_the_job():
    # SIGKILL on rank 1 while the others wait in a reduction: mpiexec (hydra) tears the job
    # down; the survivors must not keep polling forever.
    start = time.monotonic()
    result = _mpiexec(3, ["tests/mpi/failures.py", "killed_in_collective"], timeout=60)
    elapsed = time.monotonic() - start
    assert result.returncode != 0
    assert "RESULT 0 none" not in result.stdout and "RESULT 2 none" not in result.stdout
    assert elapsed < 20, elapsed


def test_debug_mode_reports_mismatched_collectives():
    result = _mpiexec(2, ["tests/mpi/failures.py", "debug_mismatch"], timeout=60, DAPX_DEBUG="1")
    results = _results(result.stdout)
    assert sorted(results) == [0, 1], result.stdout + result.stderr
    for _, message in results.values():
        assert "ranks are calling different collectives" in message


def test_simulated_and_mpi_results_are_bitwise_identical(tmp_path):
    script = HERE / "mpi" / "same_bits.py"
    simulated = _processes.run(
        [sys.executable, str(script), str(tmp_path / "sim.npz"), "3"],
        timeout=120,
        env=_env(DAPX_MPI_RUN="0"),
    )
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


#: Leaves a file named by its process id in the folder ``sys.argv[1]``, then sleeps.
_SLEEPER = (
    "import os, pathlib, sys, time; "
    "pathlib.Path(sys.argv[1], str(os.getpid())).touch(); time.sleep(600)"
)
#: A child that starts a grandchild in a session of its own, as mpiexec starts its ranks.
_PARENT = (
    "import subprocess, sys; "
    f"subprocess.Popen([sys.executable, '-c', {_SLEEPER!r}, sys.argv[1]], start_new_session=True); "
    f"exec({_SLEEPER!r})"
)


@pytest.mark.parametrize("launch", ["mpiexec", "grandchild"])
def test_a_child_out_of_time_is_killed_with_every_process_it_started(launch, tmp_path):
    """No rank outlives its run's timeout, though MPICH starts each in a session of its own."""
    psutil = pytest.importorskip("psutil")
    start = time.monotonic()
    with pytest.raises(_processes.ProcessTimeout) as info:
        if launch == "mpiexec":
            _mpiexec(2, ["-c", _SLEEPER, str(tmp_path)], timeout=4)
        else:
            _processes.run([sys.executable, "-c", _PARENT, str(tmp_path)], timeout=4)
    assert time.monotonic() - start < 4 + 10
    pids = [int(f.name) for f in tmp_path.iterdir()]
    assert len(pids) == 2, str(info.value)  # both ranks, or the child and its grandchild
    with pytest.raises(ProcessLookupError):
        os.killpg(info.value.pid, 0)  # nothing left in the child's group ...
    for pid in pids:  # ... nor outside it
        with contextlib.suppress(psutil.NoSuchProcess):
            assert psutil.Process(pid).status() == psutil.STATUS_ZOMBIE, f"{pid} is alive"


@pytest.mark.timeout(12)
def test_a_child_must_time_out_before_its_test():
    """pytest-timeout would end the test first, the output lost and the ranks left running."""
    with pytest.raises(ValueError, match="below the test's pytest timeout"):
        _processes.run([sys.executable, "-c", "pass"], timeout=12)
    # A child gets what is left of the test's 12 s less the margin for reporting it.
    with pytest.raises(_processes.ProcessTimeout) as info:
        _processes.run([sys.executable, "-c", "import time; time.sleep(600)"], timeout=11)
    assert info.value.timeout <= 12 - _processes.MARGIN
