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


def _mpiexec(n, args, timeout, **env):
    return subprocess.run(
        [MPIEXEC, "-n", str(n), sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_env(**env),
        cwd=HERE.parent,
    )


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_spmd_suite_under_mpiexec(n):
    args = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "tests/mpi"]
    if n == 4:  # oversubscribed on two cores: a representative subset
        args += ["-k", "redistribute or reductions or from_local or bad_dict"]
    result = _mpiexec(n, args, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "passed" in result.stdout


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
