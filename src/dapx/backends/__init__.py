"""Backends: where the local blocks of a distributed array live.

Each backend registers here under its name with a probe that tells whether
its runtime requirements are installed. The array logic itself lives above
this package and is written once.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

__all__ = ["available_backends", "register_backend"]

_REGISTRY: dict[str, Callable[[], bool]] = {}


def register_backend(name: str, probe: Callable[[], bool]) -> None:
    """Register backend `name`; `probe()` says whether it can run here."""
    _REGISTRY[name] = probe


def available_backends() -> dict[str, bool]:
    """Every registered backend and whether it can run in this environment."""
    return {name: bool(probe()) for name, probe in _REGISTRY.items()}


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None
