"""Exceptions and warnings raised by dapx."""

from __future__ import annotations

__all__ = ["DAPError", "GatherWarning", "RankError"]


class DAPError(ValueError):
    """A Distributed Array Protocol rule was broken.

    The message names, where they are known, the process rank, the dimension,
    the dictionary key and the rule, so that a producer can be fixed from the
    message alone.

    Examples
    --------
    >>> import dapx
    >>> issubclass(dapx.DAPError, ValueError)
    True
    """


class GatherWarning(UserWarning):
    """A whole distributed array is being copied to every process.

    Emitted by implicit conversions (``np.asarray(a)``) of arrays larger than
    ``dapx.config.gather_warning_threshold`` elements. Set the threshold to 0
    and turn the warning into an error to catch every hidden gather.
    """


class RankError(RuntimeError):
    """An operation failed on another rank; raised on every rank so none hangs."""

    def __init__(self, rank: int, original: str):
        super().__init__(f"rank {rank} failed: {original}")
        self.rank = rank
        self.original = original


def dap_error(
    rule: str,
    *,
    rank: int | None = None,
    dim: int | None = None,
    key: str | None = None,
) -> DAPError:
    """Build a `DAPError` whose message starts with where the rule was broken."""
    where = []
    if rank is not None:
        where.append(f"rank {rank}")
    if dim is not None:
        where.append(f"dim {dim}")
    if key is not None:
        where.append(f"key {key!r}")
    prefix = ", ".join(where)
    return DAPError(f"{prefix}: {rule}" if prefix else rule)
