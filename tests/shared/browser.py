"""A real headless Chromium for the report tests, driven over the DevTools protocol on a pipe
(`--remote-debugging-pipe`: commands on the browser's fd 3, answers on its fd 4, each a JSON
message ended by a NUL byte), so that no WebDriver nor websocket library is needed.

    with Browser.start(tmp_path) as browser:
        page = browser.open(path_to_html)
        page.evaluate("document.title"); page.screenshot(png_path)
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

TIMEOUT = 90.0  # seconds for Chromium to answer (over 30 beside a second test run)
# What Debian's Chromium needs here, as root, on a machine with no network but the registries.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
)


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class BrowserError(RuntimeError):
    pass


def high_fd(fd: int) -> int:
    """A copy of `fd` numbered 10 or more, so that putting the pipes on 3 and 4 clobbers none."""
    copy = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return copy


def exited(pid: int, timeout: float) -> bool:
    """Reap the browser; False if it is still running after `timeout` seconds."""
    done = threading.Event()

    def reap() -> None:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        done.set()

    threading.Thread(target=reap, daemon=True).start()
    return done.wait(timeout)


@dataclass
class Browser:
    pid: int
    commands: int  # we write here; the browser reads it as fd 3
    answers: int  # the browser writes its fd 4 here
    profile: tempfile.TemporaryDirectory
    buffer: bytes = b""
    next_id: int = 0
    events: list[dict] = field(default_factory=list)

    @classmethod
    def start(cls, log_dir: Path) -> Browser:
        executable = chromium_path()
        if executable is None:
            raise BrowserError("chromium is not installed")
        profile = tempfile.TemporaryDirectory(prefix="psc-chromium-")
        to_browser_read, to_browser_write = (high_fd(fd) for fd in os.pipe())
        from_browser_read, from_browser_write = (high_fd(fd) for fd in os.pipe())
        actions = [
            (os.POSIX_SPAWN_DUP2, to_browser_read, 3),
            (os.POSIX_SPAWN_DUP2, from_browser_write, 4),
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (
                os.POSIX_SPAWN_OPEN,
                2,
                str(log_dir / "chromium.log"),
                os.O_WRONLY | os.O_CREAT,
                0o644,
            ),
        ]
        arguments = [executable, *FLAGS, f"--user-data-dir={profile.name}", "about:blank"]
        pid = os.posix_spawn(executable, arguments, os.environ, file_actions=actions)
        os.close(to_browser_read)
        os.close(from_browser_write)
        return cls(pid, to_browser_write, from_browser_read, profile)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        answer = self.wait_for(lambda m: m.get("id") == self.next_id)
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def wait_for(self, wanted, timeout: float = TIMEOUT) -> dict:
        """The first message `wanted` accepts; events read on the way are kept in `events`."""
        for event in self.events:
            if wanted(event):
                self.events.remove(event)
                return event
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\0", 1)
                message = json.loads(raw)
                if wanted(message):
                    return message
                self.events.append(message)
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.answers], [], [], left)[0]:
                raise BrowserError("chromium did not answer in time")
            chunk = os.read(self.answers, 1 << 16)
            if not chunk:
                raise BrowserError("chromium closed its pipe")
            self.buffer += chunk

    def open(self, path: Path, width: int = 1280, height: int = 900) -> Page:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        page = Page(self, session)
        page.call("Page.enable")
        page.call("Runtime.enable")
        page.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        page.call("Page.navigate", {"url": path.resolve().as_uri()})
        self.wait_for(
            lambda m: m.get("method") == "Page.loadEventFired" and m.get("sessionId") == session
        )
        return page

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):
            self.send("Browser.close")
        for fd in (self.commands, self.answers):
            os.close(fd)
        if not exited(self.pid, timeout=10):
            os.kill(self.pid, signal.SIGKILL)
            exited(self.pid, timeout=10)
        self.profile.cleanup()


@dataclass
class Page:
    browser: Browser
    session: str

    def call(self, method: str, params: dict | None = None) -> dict:
        return self.browser.send(method, params, self.session)

    def evaluate(self, expression: str):
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """Uncaught script errors and console errors the page has reported so far."""
        found = []
        for event in self.browser.events:
            if event.get("sessionId") != self.session:
                continue
            params = event.get("params", {})
            if event.get("method") == "Runtime.exceptionThrown":
                found.append(params["exceptionDetails"].get("text", "exception"))
            elif (
                event.get("method") == "Runtime.consoleAPICalled" and params.get("type") == "error"
            ):
                found.append(str(params.get("args")))
        return found

    def screenshot(self, path: Path, full_page: bool = True) -> Path:
        # A page behind another is not painted: headless Chromium beside a second test run
        # left its capture unanswered for 90 s.
        self.call("Page.bringToFront")
        params = {"format": "png", "captureBeyondViewport": full_page}
        if full_page:
            width, height = self.evaluate(
                "[document.documentElement.scrollWidth, document.documentElement.scrollHeight]"
            )
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", params)["data"]))
        return path
