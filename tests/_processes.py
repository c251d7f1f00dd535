"""Child processes of the tests: each in a session of its own, killed with all it started.

`run` is `subprocess.run` with text output captured, for the tests that start
another program (mpiexec, a fresh interpreter, a linter). The child starts a
session of its own. When its timeout passes, or the test is interrupted
(pytest-timeout, Ctrl-C), `kill_tree` kills the child, its process group and
every process it started: MPICH's mpiexec starts its proxy and each rank in a
session of its own, out of reach of a signal to the child's group, and a rank
left behind would keep a core busy for the rest of the suite. A timeout then
raises `ProcessTimeout` with the output captured until then.

A child's timeout must end before the test's pytest timeout, or pytest-timeout
ends the test first and the child's output is lost: tests/conftest.py tells
this module the test's pytest timeout (pytest-timeout's hooks), `run` refuses a
timeout that is not below it and gives a child at most what is left of it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from typing import Any

__all__ = ["ProcessTimeout", "kill_tree", "run", "set_test_timeout"]

#: Seconds of the test's pytest timeout kept for killing a child and reporting its output.
MARGIN = 10.0

_test_timeout: tuple[float, float] | None = None  # (seconds, time.monotonic() at the start)


def set_test_timeout(seconds: float | None) -> None:
    """Record the pytest timeout of the test starting now (None: the test has none, or ended)."""
    global _test_timeout
    _test_timeout = (float(seconds), time.monotonic()) if seconds else None


class ProcessTimeout(subprocess.TimeoutExpired):
    """A child ran out of time; it and every process it started were killed.

    ``pid`` is the child's process id, which was also its process group and
    session id. ``output`` and ``stderr`` hold what it wrote until then.
    """

    def __init__(self, cmd: Sequence[str], timeout: float, output: str, stderr: str, pid: int):
        super().__init__(list(cmd), timeout, output, stderr)
        self.pid = pid

    def __str__(self) -> str:
        command = " ".join(map(str, self.cmd))
        return (
            f"{command[:300]} timed out after {self.timeout:g} s (a hang?); it and every process "
            f"it started were killed\n--- stdout (end) ---\n{(self.output or '')[-6000:]}\n"
            f"--- stderr (end) ---\n{(self.stderr or '')[-4000:]}"
        )


def run(args: Sequence[str], *, timeout: float, **kwargs: Any) -> subprocess.CompletedProcess:
    """Run `args` in a new session, capturing its output as text, and wait for it.

    Parameters
    ----------
    args : sequence of str
        The command.
    timeout : float
        Seconds the child may run: below the test's pytest timeout, and cut to
        what is left of it less `MARGIN`.
    **kwargs
        Passed to `subprocess.Popen` (``env``, ``cwd``, ...).

    Returns
    -------
    subprocess.CompletedProcess
        With ``returncode``, ``stdout`` and ``stderr``; a non-zero return code is not an error.

    Raises
    ------
    ProcessTimeout
        If the child has not ended after `timeout` seconds.
    ValueError
        If `timeout` is not below the running test's pytest timeout.
    """
    if _test_timeout is not None:
        total, start = _test_timeout
        if timeout >= total:
            raise ValueError(
                f"a child's timeout ({timeout:g} s) must be below the test's pytest timeout "
                f"({total:g} s), so that the child, not the test, times out"
            )
        timeout = max(1.0, min(timeout, total - (time.monotonic() - start) - MARGIN))
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **kwargs,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        stdout, stderr = _rest(proc)
        raise ProcessTimeout(args, timeout, stdout, stderr, proc.pid) from None
    except BaseException:  # pytest-timeout's failure or Ctrl-C: leave nothing running
        kill_tree(proc.pid)
        _rest(proc)
        raise
    return subprocess.CompletedProcess(list(args), proc.returncode, stdout, stderr)


def _rest(proc: subprocess.Popen) -> tuple[str, str]:
    """The output of a killed child (`communicate` keeps what it read before its timeout)."""
    try:
        return proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:  # something that escaped the kill still holds a pipe
        proc.kill()
        return "", ""


def kill_tree(pid: int, wait: float = 5.0) -> None:
    """SIGKILL process `pid`, every process in its group and every descendant.

    The descendants are found with psutil (when installed; else only the
    group is killed), each stopped first so that none starts another
    process while the rest are found. Returns when the descendants have
    ended (their zombies may remain), or after `wait` seconds.
    """
    try:
        import psutil
    except ImportError:
        psutil = None
    found = {}
    if psutil is not None:
        with contextlib.suppress(psutil.Error):  # the child is gone: only its group is left
            root = psutil.Process(pid)
            root.suspend()
            while new := [p for p in root.children(recursive=True) if p.pid not in found]:
                for p in new:
                    with contextlib.suppress(psutil.Error):
                        p.suspend()
                    found[p.pid] = p
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    for p in found.values():
        with contextlib.suppress(psutil.Error):
            p.kill()  # psutil checks that the pid still names the same process
    deadline = time.monotonic() + wait
    for p in found.values():
        while time.monotonic() < deadline and _running(p, psutil):
            time.sleep(0.01)


def _running(process, psutil) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
