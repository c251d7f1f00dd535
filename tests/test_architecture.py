"""The layers stay layers: import contracts, private names, and who touches local blocks.

The contracts themselves live in pyproject.toml (``[tool.importlinter]``) and
are checked by import-linter; ARCHITECTURE.md explains them.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import _processes

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "dapx"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(cwd: Path, pythonpath: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return _processes.run([str(LINT_IMPORTS), "--no-cache"], timeout=120, cwd=cwd, env=env)


def test_import_contracts_hold():
    result = _lint_imports(ROOT, ROOT / "src")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_import_contracts_fail_when_a_backend_imports_the_array(tmp_path):
    # The contracts must be able to fail: the same check on a copy where a backend imports core.
    shutil.copytree(SRC, tmp_path / "src" / "dapx", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    simulated = tmp_path / "src" / "dapx" / "backends" / "simulated.py"
    simulated.write_text(simulated.read_text() + "\nfrom ..core.array import DistributedArray\n")
    result = _lint_imports(tmp_path, tmp_path / "src")
    assert result.returncode != 0
    assert "dapx.backends is not allowed to import dapx.core" in result.stdout


def _subpackage(module: str) -> str:
    """The first-level sub-package of a dotted dapx module name ('' for dapx's own modules)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (SRC / parts[1]).is_dir()) else ""


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path):
    """(line, imported module, names) for every ``from ... import`` in `path`, resolved."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target == "dapx" or target.startswith("dapx."):
                yield node.lineno, target, [a.name for a in node.names]


def test_no_private_name_crosses_a_subpackage_boundary():
    offences = []
    for path in sorted(SRC.rglob("*.py")):
        home = _subpackage(_module_name(path))
        for line, target, names in _imports(path):
            if _subpackage(target) == home:
                continue
            for name in names:
                if name.startswith("_") and not name.startswith("__"):
                    offences.append(f"{path.relative_to(ROOT)}:{line} imports {target}.{name}")
    assert not offences, "\n".join(offences)


def test_only_core_touches_local_blocks_directly():
    pattern = re.compile(r"\._locals\b")
    outside = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted(SRC.rglob("*.py"))
        if path.relative_to(SRC).parts[0] != "core"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not outside, "use the core's block API instead of _locals:\n" + "\n".join(outside)


@pytest.mark.parametrize(
    "layer",
    ["layout", "exchange", "backends", "core", "functions", "interop", "testing", "cli"],
)
def test_every_layer_is_a_subpackage(layer):
    assert (SRC / layer / "__init__.py").is_file()
