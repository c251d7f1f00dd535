"""Direct TCP channels between the dask backend's client and its ranks, and between ranks.

dask starts the rank processes and places each rank (an actor) on its
worker, but a step does not travel as an actor call: a call goes through the
client's event loop, the worker's event loop and an executor hand-off each
way, about 2 ms per rank on an idle 2-core machine, paid twice by every
operation that needs a collective. Instead, once the ranks are placed, the
client and every rank hold plain TCP connections: the client sends each
step to every rank down its `Channel`, a rank sends its outcome back on the
same connection and its messages to other ranks on connections of its own,
and a thread per rank (its `Inbox`) reads whatever arrives on any of them.
A message is one pickled object (protocol 5): NumPy buffers travel out of
band, written straight from the array and read straight into the new one.

Because the inbox drains every connection as data arrives, whatever the
rank's step is doing, a blocking send never waits for a reader that waits
for it: two ranks may send each other large blocks at once.

Examples
--------
>>> import socket
>>> import numpy as np
>>> from dapx.backends.dask_channels import Channel
>>> left, right = socket.socketpair()
>>> a, b = Channel(left), Channel(right)
>>> a.send(("msg", np.arange(3.0)))
>>> kind, array = b.receive()
>>> kind, array.tolist()
('msg', [0.0, 1.0, 2.0])
>>> a.close(); b.close()
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["Channel", "Inbox", "frames"]

_COUNT = struct.Struct("<Q")

#: Messages up to this size are joined into one buffer before sending; larger ones are
#: sent frame by frame, each buffer straight from its array.
_JOIN_BELOW = 1 << 16


def frames(obj) -> list:
    """`obj` as the frames of one message: a header, the pickle, then each out-of-band buffer.

    Framing once lets one message go to several channels (a step to every rank).

    Examples
    --------
    >>> from dapx.backends.dask_channels import frames
    >>> header, pickled, data = frames(np.zeros(4))
    >>> data.nbytes
    32
    """
    import cloudpickle

    buffers: list = []
    pickled = cloudpickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    sizes = [len(pickled), *(r.nbytes for r in raws)]
    header = _COUNT.pack(len(raws)) + struct.pack(f"<{len(sizes)}Q", *sizes)
    return [header, pickled, *raws]


class Channel:
    """One TCP connection that carries whole messages (pickled objects), both ways.

    Sends may come from several threads (a lock keeps messages whole);
    receives come from one reader (an `Inbox`, or the client awaiting
    outcomes).
    """

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self._sending = threading.Lock()

    @classmethod
    def connect(cls, address: tuple[str, int], hello) -> Channel:
        """A channel to the `Inbox` at `address`, introduced by the message `hello`."""
        sock = socket.create_connection(address)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        channel = cls(sock)
        channel.send(hello)
        return channel

    def send(self, obj) -> None:
        """Send `obj` as one message (pickled before anything is written)."""
        self.send_frames(frames(obj))

    def send_frames(self, message: list) -> None:
        """Send a message already made into `frames`."""
        small = sum(memoryview(f).nbytes for f in message) <= _JOIN_BELOW
        with self._sending:
            if small:  # one system call, one packet (TCP_NODELAY sends each call at once)
                self.sock.sendall(b"".join(message))
                return
            for frame in message:
                self.sock.sendall(frame)

    def receive(self) -> Any:
        """The next message; ConnectionError when the other end has closed."""
        (count,) = _COUNT.unpack(self._exactly(_COUNT.size))
        sizes = struct.unpack(f"<{count + 1}Q", self._exactly(8 * (count + 1)))
        pickled = self._exactly(sizes[0])
        buffers = [self._exactly(n) for n in sizes[1:]]
        import pickle

        return pickle.loads(pickled, buffers=buffers)

    def _exactly(self, nbytes: int) -> np.ndarray:
        # np.empty, not bytearray: a large received block is not zero-filled first.
        data = np.empty(nbytes, np.uint8)
        view = memoryview(data)
        got = 0
        while got < nbytes:
            n = self.sock.recv_into(view[got:])
            if n == 0:
                raise ConnectionError("the other end of the channel closed it")
            got += n
        return data

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


class Inbox:
    """A listening socket and the thread that reads every message arriving on its connections.

    ``on_message(channel, message)`` is called on that thread for each
    message, ``on_closed(channel, error)`` once when a connection ends (its
    peer closed it or its process died). The thread ends with `close`.
    """

    def __init__(
        self,
        host: str,
        on_message: Callable[[Channel, Any], None],
        on_closed: Callable[[Channel, BaseException], None],
    ):
        self._listener = socket.create_server((host, 0))
        self.address: tuple[str, int] = (host, self._listener.getsockname()[1])
        self._on_message = on_message
        self._on_closed = on_closed
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ, "accept")
        self._selector.register(self._wake_reader, selectors.EVENT_READ, "stop")
        self._thread = threading.Thread(target=self._serve, name="dapx-inbox", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        channels: list[Channel] = []
        try:
            while True:
                for key, _ in self._selector.select():
                    if key.data == "stop":
                        return
                    if key.data == "accept":
                        sock, _ = self._listener.accept()
                        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                        channel = Channel(sock)
                        channels.append(channel)
                        self._selector.register(sock, selectors.EVENT_READ, channel)
                        continue
                    channel = key.data
                    try:
                        self._on_message(channel, channel.receive())
                    except Exception as e:  # closed, or a message that cannot be read
                        # Dropping the connection tells both ends: nobody waits for it.
                        self._selector.unregister(channel.sock)
                        channels.remove(channel)
                        channel.close()
                        self._on_closed(channel, e)
        finally:
            for channel in channels:
                channel.close()
            self._selector.close()
            self._listener.close()
            self._wake_reader.close()

    def close(self) -> None:
        """Stop reading and close every connection (from any thread but the inbox's own)."""
        with contextlib.suppress(OSError):
            self._wake_writer.send(b"x")
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)
        self._wake_writer.close()
