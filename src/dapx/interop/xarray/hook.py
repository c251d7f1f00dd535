"""The ``.dap`` accessor on xarray objects, registered without importing xarray.

Importing xarray takes seconds (pandas and more), which every MPI process
would pay, so ``import dapx`` does not import it: `dapx.interop.xarray.accessor`, which
registers ``DataArray.dap`` and ``Dataset.dap``, is imported at once if
xarray already is, or else the moment xarray is imported, by a finder on
``sys.meta_path`` that answers only for ``"xarray"``.
"""

from __future__ import annotations

import sys

__all__ = ["register_accessor_with_xarray"]


class _XarrayLoader:
    """xarray's own loader, which imports `dapx.interop.xarray.accessor` once xarray has run."""

    def __init__(self, loader, hook: _XarrayHook):
        self._loader = loader
        self._hook = hook

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        self._loader.exec_module(module)
        module.__loader__ = module.__spec__.loader = self._loader  # xarray sees its own again
        if self._hook in sys.meta_path:
            sys.meta_path.remove(self._hook)
        from . import accessor  # noqa: F401 (registers DataArray.dap and Dataset.dap)

    def __getattr__(self, name: str):  # get_resource_reader, is_package, ...
        return getattr(self._loader, name)


class _XarrayHook:
    """A `sys.meta_path` finder: xarray's spec from the other finders, its loader wrapped."""

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname != "xarray":
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = None if finder is self or find is None else find(fullname, path, target)
            if spec is not None:
                break
        else:
            return None  # xarray is not installed
        if hasattr(spec.loader, "exec_module"):
            spec.loader = _XarrayLoader(spec.loader, self)
        return spec


def register_accessor_with_xarray() -> None:
    """Register the accessor now if xarray is imported, else when it is (idempotent)."""
    if "xarray" in sys.modules:
        from . import accessor  # noqa: F401 (registers DataArray.dap and Dataset.dap)
    elif not any(isinstance(f, _XarrayHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _XarrayHook())
