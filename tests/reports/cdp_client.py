"""A small Chrome DevTools Protocol client over a standard-library websocket (RFC 6455).

Enough to load a page in headless Chromium and watch it: console errors, uncaught exceptions,
every network request, and a screenshot. Used by the browser test of the HTML reports.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)


def find_chromium() -> str | None:
    """The Chromium (or Chrome) executable on PATH, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class WebSocket:
    """A minimal client: text frames out (masked), text frames in (fragments joined)."""

    def __init__(self, url: str, timeout: float = 30.0) -> None:
        assert url.startswith("ws://")
        hostport, _, path = url[len("ws://") :].partition("/")
        host, _, port = hostport.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"websocket handshake refused: {head[:80]!r}")

    def _exact(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("websocket closed")
            out += chunk
        return bytes(out)

    def send(self, text: str) -> None:
        payload = text.encode()
        n = len(payload)
        header = bytearray([0x81])
        if n < 126:
            header.append(0x80 | n)
        elif n < 1 << 16:
            header += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            header += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(bytes(header) + mask + masked)

    def _frame(self) -> tuple[bool, int, bytes]:
        b0, b1 = self._exact(2)
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack(">H", self._exact(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", self._exact(8))[0]
        mask = self._exact(4) if b1 & 0x80 else None
        data = self._exact(n)
        if mask:
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        return bool(b0 & 0x80), b0 & 0x0F, data

    def recv(self) -> str:
        parts: list[bytes] = []
        while True:
            fin, opcode, data = self._frame()
            if opcode == 0x8:
                raise ConnectionError("websocket closed by the browser")
            if opcode == 0x9:  # ping -> pong
                self.sock.sendall(bytes([0x8A, 0x80 | len(data)]) + b"\0\0\0\0" + data)
                continue
            if opcode in (0x1, 0x0, 0x2):
                parts.append(data)
                if fin:
                    return b"".join(parts).decode()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class Page:
    """One page target: ``call`` a CDP method (events that arrive meanwhile are kept)."""

    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self._id = 0

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_for(self, method: str, timeout: float = 60.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for ev in self.events:
            if ev.get("method") == method:
                return ev
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv())
            self.events.append(msg)
            if msg.get("method") == method:
                return msg
        raise TimeoutError(f"no {method} within {timeout} s")


@contextlib.contextmanager
def chromium_page(executable: str, *, timeout: float = 60.0) -> Iterator[Page]:
    """Start headless Chromium (fresh profile, debugging on 127.0.0.1, a free port) and yield
    its first page; the browser is stopped and the profile removed afterwards."""
    profile = tempfile.mkdtemp(prefix="posgeom-chromium-")
    proc = subprocess.Popen(
        [executable, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    ws = None
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and port_file.read_text().strip()):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"chromium did not start (exit code {proc.poll()})")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as resp:
            targets = json.loads(resp.read())
        page = next(t for t in targets if t.get("type") == "page")
        ws = WebSocket(page["webSocketDebuggerUrl"], timeout=timeout)
        yield Page(ws)
    finally:
        if ws is not None:
            ws.close()
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


def load_and_watch(page: Page, url: str, *, timeout: float = 60.0) -> dict[str, Any]:
    """Navigate to ``url``, wait for the load event, and return what was seen: ``requests``
    (URLs), ``errors`` (console errors, exceptions, error log entries) and ``screenshot``
    (PNG bytes of the full page)."""
    for domain in ("Page", "Runtime", "Log", "Network"):
        page.call(f"{domain}.enable")
    page.events.clear()
    page.call("Page.navigate", url=url)
    page.wait_for("Page.loadEventFired", timeout=timeout)
    metrics = page.call("Page.getLayoutMetrics")
    size = metrics.get("cssContentSize") or metrics["contentSize"]
    shot = page.call(
        "Page.captureScreenshot",
        format="png",
        captureBeyondViewport=True,
        clip={
            "x": 0,
            "y": 0,
            "width": size["width"],
            "height": min(size["height"], 6000),
            "scale": 1,
        },
    )
    requests, errors = [], []
    for ev in page.events:
        method, params = ev.get("method"), ev.get("params", {})
        if method == "Network.requestWillBeSent":
            requests.append(params["request"]["url"])
        elif method == "Runtime.exceptionThrown":
            errors.append(str(params.get("exceptionDetails", {}).get("text")))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append(json.dumps(params.get("args"))[:300])
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            errors.append(str(params["entry"].get("text")))
        elif method == "Network.loadingFailed":
            errors.append(f"loading failed: {params.get('errorText')}")
    return {"requests": requests, "errors": errors, "screenshot": base64.b64decode(shot["data"])}
