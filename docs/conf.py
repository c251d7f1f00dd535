"""Sphinx configuration for dapx's documentation site.

Built offline with warnings as errors (``python -m sphinx -W --keep-going docs docs/_build/html``):
no intersphinx inventories are fetched, the notebooks in ``notebooks/`` are copied in and executed.
"""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import sphinx_autosummary_accessors

import dapx

DOCS = Path(__file__).parent
ROOT = DOCS.parent

project = "dapx"
author = "the dapx developers"
copyright = "2026, the dapx developers"
release = dapx.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_nb",
    "sphinx_autosummary_accessors",
]

# The notebooks live in notebooks/ (the test suite runs them too); the site renders copies.
_notebook_copies = DOCS / "notebooks"
_notebook_copies.mkdir(exist_ok=True)
for _notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
    shutil.copyfile(_notebook, _notebook_copies / _notebook.name)

exclude_patterns = ["_build", "**.ipynb_checkpoints", "jupyter_execute"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}

nb_execution_mode = "force"
nb_execution_timeout = 300
nb_execution_raise_on_error = True
nb_execution_show_tb = True
myst_enable_extensions = ["colon_fence", "dollarmath"]

# -- The API reference (docs/api/): autosummary writes a page per object into docs/api/generated/
templates_path = ["_templates", sphinx_autosummary_accessors.templates_path]
autosummary_generate = True
autosummary_ignore_module_all = False
# Members a documented class inherits from Python's own classes (exceptions, named tuples, ABCs):
# the class template leaves them out of its tables.
autosummary_context = {
    "foreign_members": sorted(
        set(dir(Exception)) | set(dir(tuple)) | set(dir(object)) | {"_abc_impl"}
    )
}
autodoc_typehints = "none"  # the numpydoc Parameters sections give the types
autodoc_member_order = "groupwise"
# `name` in a docstring links to that object where it is documented, else reads as code.
default_role = "py:obj"
numpydoc_show_class_members = False  # the class template lists members (_templates/autosummary)
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()


def _write_generated_includes() -> None:
    """Write the parts of the reference that are read off the code at build time.

    The pytest plugin's options (from its ``pytest_addoption``), the command line's ``--help``
    texts, the array API namespace's names forwarded to NumPy and the NumPy functions dapx
    implements (its dispatch table): files ``docs/api/generated/*.inc``, which the API pages
    include.
    """
    generated = DOCS / "api" / "generated"
    generated.mkdir(parents=True, exist_ok=True)

    from dapx.testing import pytest_plugin

    class Parser:
        """Records the options a plugin's ``pytest_addoption`` adds (any other call fails)."""

        def __init__(self):
            self.options: list[tuple[tuple[str, ...], dict]] = []

        def getgroup(self, name, description=""):
            return self

        def addoption(self, *names, **kwargs):
            self.options.append((names, kwargs))

    parser = Parser()
    pytest_plugin.pytest_addoption(parser)
    lines = []
    for names, kwargs in parser.options:
        lines += [f".. option:: {', '.join(names)}", ""]
        lines += [f"   {kwargs.get('help', '').strip()}", ""]
        if "default" in kwargs and "default" not in kwargs.get("help", ""):
            lines += [f"   Default: ``{kwargs['default']}``.", ""]
    (generated / "pytest_options.inc").write_text("\n".join(lines))

    from dapx.__main__ import main

    for name, argv in [("cli_help", ["--help"]), ("cli_demo_help", ["demo", "--help"])]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main(argv)
        text = "\n".join("   " + line if line else "" for line in out.getvalue().splitlines())
        (generated / f"{name}.inc").write_text(f".. code-block:: text\n\n{text}\n")

    from dapx.interop import array_api

    def literals(names) -> str:
        return ", ".join(f"``{n}``" for n in sorted(names)) + "\n"

    public = set(array_api.__all__)
    values = {n: getattr(array_api, n) for n in public}
    own = {n for n, v in values.items() if (getattr(v, "__module__", "") or "").startswith("dapx")}
    modules = {"fft", "linalg"}
    dtypes = {n for n, v in values.items() if isinstance(v, type) and n not in own}
    constants = {n for n, v in values.items() if not callable(v) and n not in modules}
    forwarded = public - own - modules - dtypes - constants
    (generated / "array_api_forwarded.inc").write_text(
        f"{literals(forwarded)}\nData types: {literals(dtypes)}\nConstants: {literals(constants)}"
    )

    from dapx.core.dispatch import HANDLED_FUNCTIONS

    by_module: dict[str, set[str]] = {}
    for function in HANDLED_FUNCTIONS:
        by_module.setdefault(function.__module__, set()).add(function.__name__)
    lines = []
    for module in sorted(by_module, key=lambda m: (m != "numpy", m)):
        names = sorted(by_module[module])
        title = f"``{module}`` ({len(names)})"
        lines += [title, "-" * len(title), "", ", ".join(f"``{n}``" for n in names), ""]
    (generated / "numpy_functions.inc").write_text("\n".join(lines))


_write_generated_includes()

html_theme = "pydata_sphinx_theme"
html_title = "dapx"
html_static_path = ["_static"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
