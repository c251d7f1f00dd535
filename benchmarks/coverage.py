"""How much of NumPy dispatches to dapx: implemented / total for np, np.linalg, np.fft.

Counts the functions of each namespace that dispatch through
``__array_function__`` (NumPy's ``_ArrayFunctionDispatcher``) and, of those,
the ones dapx implements (registered with `dapx.core.dispatch.implements`),
beside dask.array's count (a same-named function in ``dask.array``,
``dask.array.linalg`` or ``dask.array.fft``) when dask is installed.

Run: ``python benchmarks/coverage.py [--missing]``.
"""

from __future__ import annotations

import argparse

import numpy as np

import dapx
from dapx.core.dispatch import HANDLED_FUNCTIONS

NAMESPACES = {
    "np": (np, "dask.array"),
    "np.linalg": (np.linalg, "dask.array.linalg"),
    "np.fft": (np.fft, "dask.array.fft"),
}


def dispatched(module) -> list[str]:
    """The names in `module` that dispatch through ``__array_function__``."""
    return sorted(
        name
        for name in dir(module)
        if type(getattr(module, name)).__name__ == "_ArrayFunctionDispatcher"
    )


def dask_module(name: str):
    try:
        import importlib

        return importlib.import_module(name)
    except ImportError:
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", action="store_true", help="list what dapx lacks")
    args = parser.parse_args()
    print(f"NumPy {np.__version__}, dapx {dapx.__version__}")
    print(f"{'namespace':<11} {'dispatched':>10} {'dapx':>6} {'dask.array':>11}")
    for label, (module, dask_name) in NAMESPACES.items():
        names = dispatched(module)
        ours = [n for n in names if getattr(module, n) in HANDLED_FUNCTIONS]
        theirs = dask_module(dask_name)
        dask_count = "-" if theirs is None else str(sum(hasattr(theirs, n) for n in names))
        print(f"{label:<11} {len(names):>10} {len(ours):>6} {dask_count:>11}")
        if args.missing:
            print("  missing:", " ".join(n for n in names if n not in ours))


if __name__ == "__main__":
    main()
