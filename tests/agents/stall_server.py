"""Local HTTP servers that never answer (127.0.0.1 only, bounded, stopped on exit).

For the bounded-wait tests of the ``openai`` policy and the episode loop: a server that accepts
connections, reads what it is sent, and never replies (:func:`silent_server`), and one that
sends a status line and then one header byte at a time, forever (:func:`trickle_server`) — the
case per-operation socket timeouts do not bound.
"""

from __future__ import annotations

import select
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["silent_server", "trickle_server"]

#: However a test ends, a server thread stops after this many seconds.
MAX_LIFETIME_S = 20.0


@contextmanager
def _serve(trickle_every_s: float | None) -> Iterator[str]:
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(16)
    stop = threading.Event()
    conns: dict[socket.socket, float] = {}  # connection -> when it last got a trickled byte

    def loop() -> None:
        t_end = time.monotonic() + MAX_LIFETIME_S
        while not stop.is_set() and time.monotonic() < t_end:
            ready, _, _ = select.select([lsock, *conns], [], [], 0.02)
            for s in ready:
                if s is lsock:
                    c, _ = lsock.accept()
                    conns[c] = time.monotonic()
                    if trickle_every_s is not None:
                        c.sendall(b"HTTP/1.1 200 OK\r\n")
                    continue
                try:
                    data = s.recv(65536)  # read the request, answer nothing
                except OSError:
                    data = b""
                if not data:
                    del conns[s]
                    s.close()
            if trickle_every_s is not None:
                now = time.monotonic()
                for c, t in list(conns.items()):
                    if now - t >= trickle_every_s:
                        try:
                            c.sendall(b"X")  # a header name that never ends
                        except OSError:
                            del conns[c]
                            c.close()
                            continue
                        conns[c] = now
        for c in conns:
            c.close()

    thread = threading.Thread(target=loop, name="stall-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{lsock.getsockname()[1]}/v1"
    finally:
        stop.set()
        thread.join(5.0)
        lsock.close()


@contextmanager
def silent_server() -> Iterator[str]:
    """A ``base_url`` whose server accepts and reads every request and never answers."""
    with _serve(None) as url:
        yield url


@contextmanager
def trickle_server(every_s: float = 0.05) -> Iterator[str]:
    """A ``base_url`` whose server sends ``HTTP/1.1 200 OK`` and then a header byte every
    ``every_s`` seconds, never ending the headers."""
    with _serve(every_s) as url:
        yield url
