"""An optional progress bar (tqdm) for long reads and writes, shown on one process."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["progress_bar"]


def progress_bar(items: Iterable, shown: bool, description: str, total: int | None = None):
    """`items`, wrapped in a tqdm bar when `shown` (tqdm is needed only then)."""
    if not shown:
        return items
    try:
        from tqdm.auto import tqdm
    except ImportError as e:
        raise ImportError("progress=True needs tqdm: pip install tqdm") from e
    return tqdm(items, desc=f"dapx: {description}", total=total, unit="block")
