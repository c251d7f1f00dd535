"""Text and HTML pictures of a DistributedArray, computed without communication."""

from __future__ import annotations

import html

import numpy as np

__all__ = ["array_repr", "html_repr", "inline_repr"]


def _describe_dims(a) -> str:
    from ..layout.distribution import describe_map
    from ..layout.maps import CyclicMap

    def short(m) -> str:  # block-cyclic as "c2", everything else as the Distribution repr
        if isinstance(m, CyclicMap) and m.block_size > 1:
            return f"c{m.block_size}"
        return describe_map(m)

    return "(" + ", ".join(short(m) for m in a.distribution.maps) + ")"


def _preview(a) -> str:
    """The first local block's leading values (this process's data only)."""
    rank = a.backend.local_ranks[0]
    block = a._locals[rank]
    flat = block.reshape(-1)[:6]
    text = np.array2string(flat, separator=", ", threshold=6)
    more = ", ..." if block.size > 6 else ""
    return f"rank {rank}: {text[:-1]}{more}]" if block.size else f"rank {rank}: []"


def array_repr(a) -> str:
    if a.ndim == 0:
        return f"DistributedArray({a._locals[a.backend.local_ranks[0]][()]!r}, dtype={a.dtype})"
    return (
        f"DistributedArray<shape={a.shape}, dtype={a.dtype}, dist={_describe_dims(a)}, "
        f"grid={a.distribution.grid_shape}, backend={a.backend!r}>\n  {_preview(a)}"
    )


def inline_repr(a, max_width: int) -> str:
    text = f"dapx {a.dtype} dist={_describe_dims(a)} grid={a.distribution.grid_shape}"
    return text if len(text) <= max_width else text[: max(0, max_width - 3)] + "..."


def html_repr(a, dim_names=None) -> str:
    """An SVG of the decomposition: each block coloured by its owning rank."""
    colours = [
        "#4e79a7",
        "#f28e2b",
        "#e15759",
        "#76b7b2",
        "#59a14f",
        "#edc948",
        "#b07aa1",
        "#ff9da7",
        "#9c755f",
        "#bab0ac",
    ]
    dist = a.distribution
    title = html.escape(array_repr(a).splitlines()[0])
    if a.ndim == 0:
        return f"<pre>{title}</pre>"
    rows_dim, cols_dim = (0, 1) if a.ndim >= 2 else (None, 0)
    width, height = 320, 160 if rows_dim is None else 320
    nrows = 1 if rows_dim is None else max(a.shape[rows_dim], 1)
    ncols = max(a.shape[cols_dim], 1)
    cell_w, cell_h = width / ncols, height / nrows
    rects = []
    for rank in range(dist.nranks):
        idx = dist.owned_indices(rank)
        colour = colours[rank % len(colours)]
        cols = idx[cols_dim]
        rws = [0] if rows_dim is None else idx[rows_dim]
        for rsel in _runs(np.sort(np.asarray(rws))):
            for csel in _runs(np.sort(cols)):
                rects.append(
                    f'<rect x="{csel[0] * cell_w:.2f}" y="{rsel[0] * cell_h:.2f}" '
                    f'width="{(csel[1] - csel[0]) * cell_w:.2f}" '
                    f'height="{(rsel[1] - rsel[0]) * cell_h:.2f}" fill="{colour}" '
                    f'stroke="white" stroke-width="0.5"><title>rank {rank}</title></rect>'
                )
    names = dim_names or [f"dim {k}" for k in range(a.ndim)]
    label = names[cols_dim] if rows_dim is None else f"{names[rows_dim]} by {names[cols_dim]}"
    legend = " ".join(
        f'<span style="color:{colours[r % len(colours)]}">&#9632; rank {r}</span>'
        for r in range(min(dist.nranks, 16))
    )
    return (
        f"<div><pre>{title}</pre><svg width='{width}' height='{height}' "
        f"xmlns='http://www.w3.org/2000/svg'>{''.join(rects[:4000])}</svg>"
        f"<div>{html.escape(label)}</div><div>{legend}</div></div>"
    )


def _runs(sorted_idx: np.ndarray):
    """Maximal runs of consecutive integers as (start, stop) pairs."""
    if sorted_idx.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(sorted_idx) != 1) + 1
    starts = np.concatenate(([0], breaks))
    stops = np.concatenate((breaks, [sorted_idx.size]))
    return [(int(sorted_idx[s]), int(sorted_idx[e - 1]) + 1) for s, e in zip(starts, stops)]
