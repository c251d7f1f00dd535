"""Child runs of a benchmark: the script itself in a fresh process, or under mpiexec.

The benchmarks that compare dapx under ``mpiexec`` with one-process NumPy run
each side as a child of the script (so each gets its own thread settings and a
fresh heap), and read the child's result from the last line it prints, as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

__all__ = ["run_child", "thread_env"]


def thread_env(threads: int) -> dict[str, str]:
    """BLAS/OpenMP thread counts for a child: the same for every library NumPy may use."""
    return {f"{v}_NUM_THREADS": str(threads) for v in ("OMP", "OPENBLAS", "MKL")}


def run_child(script: str, args: list[str], *, ranks: int = 0, env: dict | None = None) -> dict:
    """Run `script` with `args` (under ``mpiexec -n ranks`` when `ranks`); its last line's JSON.

    ``DAPX_BACKEND`` is removed from the environment (the child picks its backend the
    way a user's script would), and `env` is added to it. A failed child raises
    RuntimeError with its output.
    """
    environ = {k: v for k, v in os.environ.items() if k != "DAPX_BACKEND"}
    environ.update(env or {})
    cmd = [sys.executable, script, *args]
    if ranks:
        mpiexec = Path(sys.executable).parent / "mpiexec"
        cmd = [str(mpiexec if mpiexec.exists() else "mpiexec"), "-n", str(ranks), *cmd]
    out = subprocess.run(cmd, capture_output=True, text=True, env=environ)
    if out.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stdout}\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])
