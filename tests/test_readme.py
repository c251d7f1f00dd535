"""The README's set-up commands, CI and the README's own examples stay in step."""

from __future__ import annotations

import doctest
import re
import sys
from pathlib import Path

from tests import _processes

ROOT = Path(__file__).resolve().parent.parent


def _bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)\n```", text, flags=re.S)


def test_ci_runs_the_readme_test_command():
    blocks = _bash_blocks((ROOT / "README.md").read_text())
    test_command = next(b for b in blocks if "pytest" in b)
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci_lines


def test_readme_setup_is_two_commands():
    blocks = _bash_blocks((ROOT / "README.md").read_text())
    setup = [b for b in blocks if b.startswith("python3 -m venv")]
    assert len(setup) == 2
    assert all("\n" not in b for b in setup)


def test_readme_examples_run():
    parser = doctest.DocTestParser()
    # Fence lines would otherwise read as expected output of the last example.
    text = re.sub(r"^```.*$", "", (ROOT / "README.md").read_text(), flags=re.M)
    test = parser.get_doctest(text, {}, "README.md", str(ROOT / "README.md"), 0)
    assert test.examples, "the README should show runnable examples"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0


def test_info_reports_versions_and_backends():
    result = _processes.run([sys.executable, "-m", "dapx", "info"], timeout=120)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for name in ("dapx", "numpy", "xarray", "dask", "mpi4py", "MPI library", "backends"):
        assert name in out


def test_ruff_is_clean():
    result = _processes.run(
        [sys.executable, "-m", "ruff", "check", "src", "tests", "benchmarks"], timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_applied():
    # One formatter for the whole tree (ruff is pinned in the test extra, so a new release
    # cannot change the verdict); `# fmt: off` only where a table is transcribed from a spec.
    result = _processes.run(
        [sys.executable, "-m", "ruff", "format", "--check", "src", "tests", "benchmarks"],
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
