"""Tests in this folder run under mpiexec only (collected by tests/test_mpi.py)."""

from __future__ import annotations

import os

import pytest

import dapx

if os.environ.get("DAPX_MPI_RUN") != "1":
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def backend():
    return dapx.mpi()
