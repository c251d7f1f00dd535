"""The dask backend's TCP channels: whole messages, buffers out of band, ends seen, no deadlock."""

from __future__ import annotations

import queue
import socket
import threading

import numpy as np
import pytest

pytest.importorskip("cloudpickle")

from dapx.backends.dask_channels import Channel, Inbox, frames


def _inbox():
    arrived: queue.SimpleQueue = queue.SimpleQueue()
    inbox = Inbox(
        "127.0.0.1",
        lambda channel, message: arrived.put(("message", message)),
        lambda channel, error: arrived.put(("closed", type(error).__name__)),
    )
    return inbox, arrived


def test_messages_arrive_whole_with_arrays_equal_and_writable():
    left, right = socket.socketpair()
    a, b = Channel(left), Channel(right)
    try:
        x = np.arange(12.0).reshape(3, 4)
        strided = np.arange(20).reshape(4, 5)[:, ::2]  # not contiguous: travels in band
        a.send(("msg", (1, 2, "k"), x, strided, {"n": 3}))
        kind, key, got, got_strided, extra = b.receive()
        assert (kind, key, extra) == ("msg", (1, 2, "k"), {"n": 3})
        np.testing.assert_array_equal(got, x)
        np.testing.assert_array_equal(got_strided, strided)
        assert got.dtype == x.dtype and got.flags.writeable
        got[0, 0] = -1.0  # the received array owns memory of its own
        assert x[0, 0] == 0.0
    finally:
        a.close()
        b.close()


def test_a_message_framed_once_goes_to_several_channels():
    inbox, arrived = _inbox()
    try:
        channels = [Channel.connect(inbox.address, ("hello", r)) for r in range(3)]
        message = frames(("run", 7, np.ones(5)))
        for channel in channels:
            channel.send_frames(message)
        got = [arrived.get(timeout=10)[1] for _ in range(6)]
        hellos = sorted(m[1] for m in got if m[0] == "hello")
        runs = [m for m in got if m[0] == "run"]
        assert hellos == [0, 1, 2] and len(runs) == 3
        for _, step, ones in runs:
            assert step == 7
            np.testing.assert_array_equal(ones, np.ones(5))
        for channel in channels:
            channel.close()
    finally:
        inbox.close()


def test_a_closed_connection_is_reported_once():
    inbox, arrived = _inbox()
    try:
        channel = Channel.connect(inbox.address, ("hello", 0))
        assert arrived.get(timeout=10) == ("message", ("hello", 0))
        channel.close()
        kind, error = arrived.get(timeout=10)
        assert kind == "closed" and error == "ConnectionError"
        with pytest.raises(queue.Empty):
            arrived.get(timeout=0.2)
    finally:
        inbox.close()


def test_a_receive_from_a_closed_channel_raises():
    left, right = socket.socketpair()
    a, b = Channel(left), Channel(right)
    a.close()
    with pytest.raises(ConnectionError, match="closed"):
        b.receive()
    b.close()


def test_two_ends_sending_large_blocks_at_once_do_not_deadlock():
    """Each side's inbox drains its connections whatever its sender does, so two blocking
    sends far larger than the sockets' buffers, each to the other, both complete."""
    ends = [_inbox(), _inbox()]
    try:
        to = [Channel.connect(ends[1 - i][0].address, ("hello", i)) for i in range(2)]
        blocks = [np.full(4_000_000, float(i)) for i in range(2)]  # 32 MB each
        senders = [threading.Thread(target=to[i].send, args=(("msg", blocks[i]),)) for i in (0, 1)]
        for t in senders:
            t.start()
        for t in senders:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in senders)
        for i in range(2):
            arrived = ends[i][1]
            assert arrived.get(timeout=10)[1] == ("hello", 1 - i)
            kind, block = arrived.get(timeout=60)[1]
            assert kind == "msg"
            np.testing.assert_array_equal(block, blocks[1 - i])
        for channel in to:
            channel.close()
    finally:
        for inbox, _ in ends:
            inbox.close()


def test_an_object_that_does_not_pickle_fails_before_anything_is_sent():
    left, right = socket.socketpair()
    a, b = Channel(left), Channel(right)
    try:
        with pytest.raises(TypeError):
            a.send(("msg", threading.Lock()))
        a.send(("next",))  # the stream is intact: nothing of the failed message was written
        assert b.receive() == ("next",)
    finally:
        a.close()
        b.close()


def _refuse():
    raise ValueError("cannot be rebuilt here")


class _Unreadable:
    def __reduce__(self):
        return (_refuse, ())


def test_a_message_that_cannot_be_read_drops_its_connection_only():
    inbox, arrived = _inbox()
    try:
        bad = Channel.connect(inbox.address, ("hello", 0))
        good = Channel.connect(inbox.address, ("hello", 1))
        bad.send(("msg", _Unreadable()))
        got = [arrived.get(timeout=10) for _ in range(3)]
        assert ("closed", "ValueError") in got
        assert ("message", ("hello", 1)) in got
        good.send(("msg", 5))
        assert arrived.get(timeout=10) == ("message", ("msg", 5))
        with pytest.raises(ConnectionError):
            bad.receive()  # the inbox closed the other end
        bad.close()
        good.close()
    finally:
        inbox.close()
