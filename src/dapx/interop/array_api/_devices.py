"""Devices are backends: resolving ``device=`` arguments."""

from __future__ import annotations

from ...backends import Backend, get_backend

__all__ = ["resolve_device"]


def resolve_device(device) -> Backend:
    """The backend a ``device=`` argument names (None: the current backend)."""
    if device is None:
        return get_backend()
    if isinstance(device, Backend):
        return device
    raise ValueError(f"unknown device {device!r}: dapx's devices are its backends")
