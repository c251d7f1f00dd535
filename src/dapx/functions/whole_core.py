"""NumPy functions of whole matrices or transform axes, on every layout: make the core whole.

`np.linalg` and `np.fft` work on core axes (the last two for a matrix, the
transformed axes for an FFT) and broadcast over the others. `on_whole_core`
redistributes an operand so that its trailing core axes are whole on every
rank while the batch axes are spread over all ranks (one exchange), calls the
NumPy function on each rank's stack of matrices, and lays each result out
with the same batch layout. A single matrix (no batch axis) lands whole on
rank 0, with a `dapx.GatherWarning` above
``dapx.config.gather_warning_threshold`` elements, and its result is spread
over the ranks again. Scalable algorithms that never make a matrix whole
replace this path function by function (tall-skinny QR, SUMMA, slab FFTs).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np

from ..config import config
from ..core.array import DistributedArray, new_array
from ..core.creation import asarray
from ..core.guard import raise_if_any_failed
from ..errors import GatherWarning
from ..layout.distribution import Distribution
from .reduction_engine import spmd_warnings
from .shaping import expand_dims, reshape

__all__ = ["as_distributed_operand", "on_rank0", "on_whole_core"]


def as_distributed_operand(x, like: DistributedArray | None = None):
    """`x` as a DistributedArray (NumPy input is distributed on `like`'s backend)."""
    if isinstance(x, DistributedArray):
        return x
    if like is None:
        raise TypeError("expected a DistributedArray operand")
    return asarray(np.asarray(x), backend=like.backend)


def _core_layout(shape: tuple[int, ...], core: int, nranks: int) -> Distribution:
    batch = len(shape) - core
    return Distribution.create(
        shape, dist=["b"] * batch + ["n"] * core, grid=[0] * batch + [1] * core, nranks=nranks
    )


def _result_layout(target: Distribution, batch: int, core_shape: tuple[int, ...]) -> Distribution:
    maps = target.maps[:batch]
    specs = [{"dist": "b", "bounds": np.asarray(m.bounds).tolist()} for m in maps]
    shape = tuple(m.size for m in maps) + tuple(core_shape)
    grid = [m.nprocs for m in maps] + [1] * len(core_shape)
    return Distribution.create(shape, dist=specs + ["n"] * len(core_shape), grid=grid)


@spmd_warnings
def on_whole_core(
    func: Callable[..., np.ndarray | tuple],
    operands: Sequence[DistributedArray],
    core: Sequence[int],
    name: str,
    error: type[Exception] = ValueError,
    skip_empty: bool = False,
) -> tuple[DistributedArray, ...]:
    """``func(*blocks)`` with each operand's trailing ``core[i]`` axes whole on every rank.

    With `skip_empty`, ranks whose stack is empty do not call `func` (for
    functions such as `numpy.apply_along_axis` that refuse empty stacks) and
    take the core shapes and dtypes of the results from the other ranks.

    The operands must have the same batch shape (the leading axes). Returns
    every output of `func` as a DistributedArray laid out like the batch.
    A failure of `func` on any rank (a singular matrix) is raised on every
    rank as `error` (e.g. `numpy.linalg.LinAlgError`).
    """
    first = operands[0]
    backend = first.backend
    batch = first.ndim - core[0]
    single = batch == 0
    if single:
        operands = [expand_dims(x, 0) for x in operands]
        batch = 1
        size = sum(x.size for x in operands)
        if size > config.gather_warning_threshold:
            warnings.warn(
                f"{name}: the {first.shape} array is made whole on one process (no other axis is "
                "left to spread over the ranks)",
                GatherWarning,
                stacklevel=4,
            )
    for x, c in zip(operands, core):
        if x.shape[: x.ndim - c] != operands[0].shape[:batch]:
            raise ValueError(
                f"{name}: the operands' batch shapes differ: "
                f"{[y.shape[: y.ndim - k] for y, k in zip(operands, core)]}"
            )
    moved = [
        x.redistribute(_core_layout(x.shape, c, backend.nranks)) for x, c in zip(operands, core)
    ]
    target = moved[0].distribution
    results, errors = {}, {}
    for r in backend.local_ranks:
        blocks = [x.locals[r] for x in moved]
        if skip_empty and not np.prod(blocks[0].shape[:batch], dtype=int):
            results[r], errors[r] = None, None
            continue
        try:
            out = func(*blocks)
            results[r] = tuple(np.asarray(v) for v in (out if isinstance(out, tuple) else (out,)))
            errors[r] = None
        except Exception as e:  # e.g. a singular matrix on one rank: raised on every rank
            errors[r] = e
    raise_if_any_failed(backend, errors, error)
    # NumPy's result dtype can depend on the data (eigvals of a real matrix are complex only
    # when some are): every rank takes the widest any rank got, and the core shapes of ranks
    # that computed something.
    described = backend.allgather(
        {
            r: None if res is None else tuple((v.shape[batch:], v.dtype.str) for v in res)
            for r, res in results.items()
        }
    )
    known = [d for d in described if d is not None]
    if not known:
        raise ValueError(f"{name}: every rank's stack is empty, so the result's shape is unknown")
    count = len(known[0])
    dtypes = [np.result_type(*(d[i][1] for d in known)) for i in range(count)]
    cores = [known[0][i][0] for i in range(count)]
    for r, res in results.items():
        if res is None:
            batch_shape = moved[0].locals[r].shape[:batch]
            results[r] = tuple(np.empty(batch_shape + cores[i], dtypes[i]) for i in range(count))
    outputs = []
    for i in range(count):
        blocks = {r: res[i].astype(dtypes[i], copy=False) for r, res in results.items()}
        sample = next(iter(blocks.values()))
        layout = _result_layout(target, batch, sample.shape[batch:])
        result = new_array(layout, blocks, backend, dtypes[i])
        if single:
            result = reshape(result, sample.shape[batch:])
            if result.ndim:
                result = result.redistribute(
                    Distribution.create(result.shape, nranks=backend.nranks)
                )
        outputs.append(result)
    return tuple(outputs)


def on_rank0(
    func: Callable[..., tuple],
    operands: Sequence[DistributedArray],
    name: str,
    error: type[Exception] = ValueError,
) -> tuple:
    """``func(*whole operands)`` on the process of rank 0, its (small) results on every process.

    For functions whose inputs have no batch axis and whose results are small
    (least squares: the solution and singular values have the size of the
    short side). The inputs are made whole on rank 0 alone (one exchange,
    with a `dapx.GatherWarning` above the gather threshold).
    """
    backend = operands[0].backend
    size = sum(x.size for x in operands)
    if size > config.gather_warning_threshold:
        warnings.warn(
            f"{name} makes its {size}-element operands whole on one process",
            GatherWarning,
            stacklevel=4,
        )
    moved = []
    for x in operands:
        specs = [
            {"dist": "b", "bounds": [0] + [n] * backend.nranks} if k == 0 else "n"
            for k, n in enumerate(x.shape)
        ]
        grid = [backend.nranks] + [1] * (x.ndim - 1)
        moved.append(x.redistribute(Distribution.create(x.shape, specs, grid)))
    result, error_message = None, None
    if 0 in backend.local_ranks:
        try:
            result = func(*(x.locals[0] for x in moved))
        except Exception as e:
            error_message = str(e)
    errors = {r: (error_message if r == 0 else None) for r in backend.local_ranks}
    raise_if_any_failed(backend, errors, error)
    return backend.bcast(result, root=0)
