"""A headless Chromium driven over the Chrome DevTools Protocol (CDP), for page tests.

Only the system ``chromium`` (Debian's package, installed by ``scripts/setup.sh``) and the
``websockets`` client: no browser download. Flags from STACK_NOTES (root-safe, no network
chatter). :func:`find_chromium` says whether one is installed; :class:`Browser` opens one page,
navigates, evaluates JavaScript, collects console errors, failed loads and uncaught exceptions,
and takes screenshots.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--remote-debugging-port=0",
    "--window-size=1280,900",
]


def find_chromium() -> str | None:
    """The path of a Chromium executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One headless Chromium with one page, driven over CDP (a context manager)."""

    def __init__(self, executable: str, profile: Path, *, timeout_s: float = 60.0) -> None:
        self.timeout_s = timeout_s
        self.proc = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        port = self._devtools_port()
        threading.Thread(target=self._drain, daemon=True).start()  # a full pipe would block it
        self.ws = self._page_socket(port)
        self._id = 0
        self.errors: list[str] = []
        for method in ("Runtime.enable", "Log.enable", "Page.enable"):
            self.call(method)

    def _devtools_port(self) -> int:
        assert self.proc.stderr is not None
        deadline = time.monotonic() + self.timeout_s
        lines = []
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line and self.proc.poll() is not None:
                break
            lines.append(line)
            m = re.search(r"DevTools listening on ws://[^:]+:(\d+)/", line)
            if m:
                return int(m.group(1))
        self.proc.kill()
        raise RuntimeError("chromium did not start its DevTools server:\n" + "".join(lines[-20:]))

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for _ in self.proc.stderr:
            pass

    def _page_socket(self, port: int) -> Any:
        from urllib.request import urlopen

        from websockets.sync.client import connect

        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            with urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                pages = [t for t in json.load(r) if t.get("type") == "page"]
            if pages:
                return connect(pages[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
            time.sleep(0.2)
        raise RuntimeError("chromium opened no page target")

    def _event(self, msg: dict[str, Any]) -> None:
        m, p = msg.get("method"), msg.get("params", {})
        if m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append("console: " + " ".join(str(a.get("value")) for a in p["args"]))
        elif m == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            self.errors.append("exception: " + str(d.get("exception", {}).get("description", d)))
        elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            self.errors.append(f"log: {e.get('text')} {e.get('url', '')}")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one CDP command and return its result (events seen meanwhile are recorded)."""
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=self.timeout_s))
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._event(msg)

    def wait_event(self, method: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv(timeout=self.timeout_s))
            self._event(msg)
            if msg.get("method") == method:
                return msg.get("params", {})
        raise TimeoutError(method)

    def goto(self, path: Path) -> None:
        """Load a file and wait for its ``load`` event (every image fetched)."""
        self.call("Page.navigate", url=path.resolve().as_uri())
        self.wait_event("Page.loadEventFired")

    def eval(self, expression: str) -> Any:
        """Evaluate JavaScript in the page; its value (JSON-serialisable)."""
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, out: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        out.write_bytes(base64.b64decode(data))
        return out

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.kill()
            self.proc.wait(timeout=30)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
