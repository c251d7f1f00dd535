"""A pytest plugin that runs tests on several simulated rank counts.

Installed with dapx (entry point ``pytest11``), it adds the option
``--dapx-ranks=1,2,4`` and the fixture ``dapx_backend``: a test that asks for
it runs once per rank count (ids ``ranks=1``, ``ranks=2``, ...) with
``dapx.simulated(n)`` as the current backend, so creation functions called
without ``backend=`` use it too.

Examples
--------
A test file using it::

    import numpy as np
    import dapx

    def test_double(dapx_backend):
        a = dapx.arange(10)  # on dapx_backend
        assert np.array_equal((2 * a).gather(), 2 * np.arange(10))

run with ``pytest --dapx-ranks=1,3`` gives ``test_double[ranks=1]`` and
``test_double[ranks=3]``.

>>> parse_ranks("1, 3,6")
[1, 3, 6]
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

__all__ = ["dapx_backend", "parse_ranks"]

DEFAULT_RANKS = "1,2,4"


def parse_ranks(text: str) -> list[int]:
    """The rank counts of a ``--dapx-ranks`` value such as ``"1,2,4"``.

    Raises
    ------
    ValueError
        If an entry is not a positive integer, or there is none.
    """
    entries = [t.strip() for t in str(text).split(",") if t.strip()]
    ranks = []
    for t in entries:
        if not t.isdigit() or int(t) < 1:
            raise ValueError(
                f"--dapx-ranks takes positive integers separated by commas, got {text!r} "
                f"(bad entry {t!r})"
            )
        if int(t) not in ranks:
            ranks.append(int(t))
    if not ranks:
        raise ValueError(f"--dapx-ranks needs at least one rank count, got {text!r}")
    return ranks


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dapx")
    group.addoption(
        "--dapx-ranks",
        default=DEFAULT_RANKS,
        help="comma-separated rank counts the dapx_backend fixture runs each test on "
        f"(default {DEFAULT_RANKS})",
    )


def pytest_configure(config: pytest.Config) -> None:
    try:
        parse_ranks(config.getoption("dapx_ranks"))
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "dapx_backend" in metafunc.fixturenames:
        ranks = parse_ranks(metafunc.config.getoption("dapx_ranks"))
        metafunc.parametrize(
            "dapx_backend", ranks, indirect=True, ids=[f"ranks={n}" for n in ranks]
        )


@pytest.fixture
def dapx_backend(request: pytest.FixtureRequest) -> Iterator:
    """``dapx.simulated(n)`` for each ``--dapx-ranks`` count, current for the test."""
    import dapx

    backend = dapx.simulated(request.param)
    with dapx.use_backend(backend):
        yield backend
