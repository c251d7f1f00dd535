"""What each rank receives in the collectives: the measured side of the memory-bound tests.

`ReceivedSizes` wraps the backend class's ``alltoallv``, ``allgather`` and ``bcast`` (through
pytest's ``monkeypatch``, undone after the test) and records, for every call and
every local rank, how much that rank received, so that a test can assert an
algorithm's stated bound (a panel, one block pair, a share of the array) on a
measured quantity instead of trusting the algorithm's docstring.
"""

from __future__ import annotations

import numpy as np


class ReceivedSizes:
    """Records what every local rank receives in each ``alltoallv``, ``allgather`` and ``bcast``.

    Attributes
    ----------
    largest : int
        The most elements a local rank received in one call of any of them.
    largest_bcast : int
        The most elements of one broadcast array.
    exchanges : list of int
        Bytes each local rank received, one entry per rank per ``alltoallv`` call.
    sparse_calls : int
        ``alltoallv`` calls with ``sparse=`` set (neighbour-style exchanges).
    sparse_step : int
        The most elements a local rank received in one sparse ``alltoallv``.
    """

    def __init__(self, backend, monkeypatch):
        self.largest, self.sparse_calls, self.sparse_step, self.largest_bcast = 0, 0, 0, 0
        self.exchanges: list[int] = []
        cls, recorder = type(backend), self
        alltoallv, allgather, bcast = cls.alltoallv, cls.allgather, cls.bcast

        def recording_alltoallv(self, sends, recvcounts, sparse=False):
            received = alltoallv(self, sends, recvcounts, sparse=sparse)
            recorder.sparse_calls += bool(sparse)
            for pieces in received.values():
                size = sum(p.size for p in pieces.values())
                recorder.largest = max(recorder.largest, size)
                recorder.exchanges.append(sum(p.nbytes for p in pieces.values()))
                if sparse:
                    recorder.sparse_step = max(recorder.sparse_step, size)
            return received

        def recording_allgather(self, values):
            gathered = allgather(self, values)
            size = sum(np.size(v) for v in gathered if isinstance(v, np.ndarray))
            recorder.largest = max(recorder.largest, size)
            return gathered

        def recording_bcast(self, value, root):
            value = bcast(self, value, root)
            if isinstance(value, np.ndarray):
                recorder.largest = max(recorder.largest, value.size)
                recorder.largest_bcast = max(recorder.largest_bcast, value.size)
            return value

        monkeypatch.setattr(cls, "alltoallv", recording_alltoallv)
        monkeypatch.setattr(cls, "bcast", recording_bcast)
        monkeypatch.setattr(cls, "allgather", recording_allgather)
