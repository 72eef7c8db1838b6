"""A local OpenAI-compatible endpoint with a fixed agent: for benchmarks, tests and offline runs.

:class:`StubServer` answers ``POST /v1/chat/completions`` on ``127.0.0.1`` (an ephemeral
port) after an injected latency, like a model server would, with a *valid* episode of the
grounding protocol that depends only on the request: the episode's ``seed`` (sent by
:class:`~urbex.agents.openai_api.OpenAIPolicy`) and its turn (the assistant messages so far).
Turns before the last are ``zoom_in`` tool calls on the global view; the last turn answers
(in ``zoom_1`` after a zoom, else in ``global``). Boxes are drawn from the seed, so episodes
differ but replay exactly. It measures what a client does to a server: requests served,
the most in flight at once, and each request's seed, turn and status.

Bounded: stdlib ``ThreadingHTTPServer`` (one thread per connection, HTTP/1.1 keep-alive), at
most ``max_in_flight`` requests handled at once (others get 503 + ``Retry-After``), and it shuts
itself down after ``max_lifetime_s`` whatever its caller does. It binds 127.0.0.1 only.

Rate limiting is injected with ``throttle(seed, turn, attempt) -> seconds | None``: a number
answers that attempt ``429`` with that ``Retry-After`` (``attempt`` counts from 0 per
``(seed, turn)``).

>>> import httpx
>>> with StubServer(latency_s=0.0, turns=2) as s:
...     r = httpx.post(s.base_url + "/chat/completions", json={"seed": 1, "messages": []})
>>> r.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"]
'zoom_in'
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["StubRequest", "StubServer", "stub_reply"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StubRequest:
    """One request the stub served: its episode seed, turn, attempt, status and times
    (:func:`time.monotonic`, seconds)."""

    seed: int
    turn: int
    attempt: int
    status: int
    t_start: float
    t_end: float


def _box(rng: random.Random) -> list[int]:
    x1, y1 = rng.randrange(0, 700), rng.randrange(0, 700)
    return [x1, y1, x1 + rng.randrange(50, 300), y1 + rng.randrange(50, 300)]


def stub_reply(seed: int, turn: int, turns: int) -> dict[str, Any]:
    """The assistant message of turn ``turn`` (0-based) of a ``turns``-turn stub episode.

    >>> stub_reply(3, 1, 2)["tool_calls"][0]["function"]["name"]
    'answer'
    >>> stub_reply(3, 0, 1)["tool_calls"][0]["function"]["arguments"][:19]
    '{"view_id": "global'
    """
    rng = random.Random(seed * 1009 + min(turn, turns - 1))
    if turn < turns - 1:
        name, args = "zoom_in", {"view_id": "global", "bbox_2d": _box(rng)}
    else:
        view = "zoom_1" if turns > 1 else "global"
        name, args = "answer", {"view_id": view, "bbox_2d": _box(rng)}
    call = {
        "id": f"call_{seed}_{turn}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


class StubServer:
    """The stub endpoint (see the module docstring); a context manager.

    Parameters
    ----------
    latency_s
        Seconds each request waits before its reply (the model's time).
    turns
        Assistant turns of each episode (``turns - 1`` zooms, then the answer), >= 1.
    max_in_flight
        Requests handled at once; more get ``503`` with ``Retry-After: 0.05``.
    max_lifetime_s
        The server stops by itself this long after :meth:`start`.
    throttle
        ``(seed, turn, attempt) -> Retry-After seconds | None``: answer ``429`` when a number.

    Attributes
    ----------
    base_url : str
        ``http://127.0.0.1:<port>/v1`` once started.
    requests : list[StubRequest]
        Every request served, in completion order.
    peak_in_flight : int
        The most requests handled at once.
    """

    def __init__(
        self,
        *,
        latency_s: float = 0.2,
        turns: int = 2,
        max_in_flight: int = 256,
        max_lifetime_s: float = 600.0,
        throttle: Callable[[int, int, int], float | None] | None = None,
    ) -> None:
        if turns < 1 or latency_s < 0 or max_in_flight < 1 or max_lifetime_s <= 0:
            raise ValueError(
                "turns >= 1, latency_s >= 0, max_in_flight >= 1 and max_lifetime_s > 0 expected, "
                f"got {turns}, {latency_s}, {max_in_flight}, {max_lifetime_s}"
            )
        self.latency_s = float(latency_s)
        self.turns = int(turns)
        self.max_in_flight = int(max_in_flight)
        self.max_lifetime_s = float(max_lifetime_s)
        self.throttle = throttle
        self.base_url = ""
        self.requests: list[StubRequest] = []
        self.peak_in_flight = 0
        self._in_flight = 0
        self._attempts: dict[tuple[int, int], int] = {}
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._stopped = threading.Event()

    # -- the request -----------------------------------------------------------------------

    def _answer(
        self, body: dict[str, Any]
    ) -> tuple[int, dict[str, Any], float | None, tuple[int, int, int]]:
        """``(status, payload, Retry-After or None, (seed, turn, attempt))`` of one request."""
        seed = int(body.get("seed") or 0)
        msgs = body.get("messages") or []
        turn = sum(1 for m in msgs if isinstance(m, dict) and m.get("role") == "assistant")
        with self._lock:
            attempt = self._attempts.get((seed, turn), 0)
            self._attempts[(seed, turn)] = attempt + 1
        retry_after = self.throttle(seed, turn, attempt) if self.throttle is not None else None
        who = (seed, turn, attempt)
        if retry_after is not None:
            return 429, {"error": {"message": "rate limited (stub)"}}, retry_after, who
        time.sleep(self.latency_s)
        reply = {
            "id": f"stub-{seed}-{turn}",
            "object": "chat.completion",
            "model": str(body.get("model", "stub")),
            "choices": [
                {
                    "index": 0,
                    "message": stub_reply(seed, turn, self.turns),
                    "finish_reason": "tool_calls",
                }
            ],
        }
        return 200, reply, None, who

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: one connection per client thread
            disable_nagle_algorithm = True  # headers and body as they are written (no 40 ms stalls)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(
                self, status: int, payload: dict[str, Any], retry_after: float | None
            ) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    if retry_after is not None:
                        self.send_header("Retry-After", f"{retry_after:g}")
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (a timeout): nothing to answer
                    pass

            def do_POST(self) -> None:
                t0 = time.monotonic()
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n)
                with stub._lock:
                    busy = stub._in_flight >= stub.max_in_flight
                    if not busy:
                        stub._in_flight += 1
                        stub.peak_in_flight = max(stub.peak_in_flight, stub._in_flight)
                if busy:
                    self._send(503, {"error": {"message": "stub busy"}}, 0.05)
                    return
                seed = turn = attempt = -1
                try:
                    if not self.path.rstrip("/").endswith("/chat/completions"):
                        status, payload, ra = 404, {"error": {"message": self.path}}, None
                    else:
                        status, payload, ra, who = stub._answer(json.loads(raw or b"{}"))
                        seed, turn, attempt = who
                except (ValueError, TypeError) as exc:
                    status, payload, ra = 400, {"error": {"message": str(exc)}}, None
                finally:
                    with stub._lock:
                        stub._in_flight -= 1
                self._send(status, payload, ra)
                with stub._lock:
                    stub.requests.append(
                        StubRequest(
                            seed=seed,
                            turn=turn,
                            attempt=attempt,
                            status=status,
                            t_start=t0,
                            t_end=time.monotonic(),
                        )
                    )

        return Handler

    # -- life cycle ------------------------------------------------------------------------

    def start(self) -> StubServer:
        """Bind 127.0.0.1:0 and serve in a daemon thread; stop after ``max_lifetime_s``."""
        if self._httpd is not None:
            raise RuntimeError("StubServer: already started")
        ThreadingHTTPServer.request_queue_size = 512  # a burst of connects is not refused
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        httpd.daemon_threads = True
        self._httpd = httpd
        self.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        serve = threading.Thread(target=httpd.serve_forever, name="urbex-stub", daemon=True)
        serve.start()

        def watchdog() -> None:
            if not self._stopped.wait(self.max_lifetime_s):
                self.stop()

        guard = threading.Thread(target=watchdog, name="urbex-stub-lifetime", daemon=True)
        guard.start()
        self._threads = [serve, guard]
        return self

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        httpd, self._httpd = self._httpd, None
        self._stopped.set()
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """``python -m urbex.agents.openai_stub``: serve until stdin closes (or the lifetime ends).

    Prints ``base_url <url>`` once listening, and ``served <n> peak_in_flight <k>`` at the end
    (a separate process, so a benchmark's client and the server do not share one interpreter).
    """
    import argparse
    import sys

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--latency-s", type=float, default=0.2)
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--max-in-flight", type=int, default=256)
    ap.add_argument("--max-lifetime-s", type=float, default=600.0)
    args = ap.parse_args(argv)
    stub = StubServer(
        latency_s=args.latency_s,
        turns=args.turns,
        max_in_flight=args.max_in_flight,
        max_lifetime_s=args.max_lifetime_s,
    )
    with stub:
        print(f"base_url {stub.base_url}", flush=True)
        done = threading.Event()

        def wait_stdin() -> None:
            sys.stdin.read()  # EOF: the parent is done (or gone)
            done.set()

        threading.Thread(target=wait_stdin, daemon=True).start()
        done.wait(args.max_lifetime_s)
    print(f"served {len(stub.requests)} peak_in_flight {stub.peak_in_flight}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
