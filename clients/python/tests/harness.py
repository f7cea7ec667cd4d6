"""Starts a real toold on a temp unix socket (and optionally TCP) for the tests."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from typing import List, Optional

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def toold_binary() -> str:
    path = os.environ.get("TOOLD_BIN") or os.path.join(REPO, "bin", "toold")
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"no toold binary at {path}: run `make build` (or set TOOLD_BIN)")
    return path


class Toold:
    """A toold process with its own temp dir, workspace and socket.

    ``tcp=True`` also listens on 127.0.0.1 (a free port chosen by the
    kernel, read from toold's log). ``stop()`` ends it and removes the
    temp dir; it is safe to call twice.
    """

    def __init__(
        self,
        *,
        mode: str = "auto",
        tcp: bool = False,
        token: str = "",
        policy: Optional[str] = None,
        extra: Optional[List[str]] = None,
    ) -> None:
        self.dir = tempfile.mkdtemp(prefix="toold-py-")
        self.workspace = os.path.join(self.dir, "ws")
        os.mkdir(self.workspace)
        self.socket = os.path.join(self.dir, "toold.sock")
        self.log_path = os.path.join(self.dir, "toold.log")
        # Its own state directory: never the user's, and one toold per
        # state directory (toold refuses a second).
        args = [toold_binary(), "--socket", self.socket, "--workspace", self.workspace, "--approval-mode", mode,
                "--state-dir", os.path.join(self.dir, "state")]
        if tcp:
            args += ["--listen", "127.0.0.1:0"]
        if policy is not None:
            p = os.path.join(self.dir, "policy.yaml")
            with open(p, "w") as f:
                f.write(policy)
            args += ["--policy", p]
        args += extra or []
        env = {k: v for k, v in os.environ.items() if k not in ("TOOLD_TOKEN", "TOOLD_SOCKET")}
        if token:
            env["TOOLD_TOKEN"] = token
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT, env=env)
        self.address = ""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"toold exited ({self.proc.returncode}):\n{self.log()}")
            log = self.log()
            if "toold serving" in log and os.path.exists(self.socket):
                m = re.search(r"toold serving.*? tcp=(\S+)", log)
                self.address = m.group(1) if m else ""
                if tcp and not self.address:
                    raise RuntimeError("toold did not report its TCP address:\n" + self.log())
                return
            time.sleep(0.02)  # polling for the daemon to come up, with a deadline
        log = self.log()
        self.stop()
        raise RuntimeError("toold did not start in 20s:\n" + log)

    def log(self) -> str:
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def kill(self) -> None:
        """SIGKILL: the daemon goes away without a word."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_for(cond, timeout: float = 10.0, what: str = "condition") -> None:
    """Polls cond() until it is true or the deadline passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.01)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def read_text(path: str) -> str:
    """The file's text, or "" when it does not exist yet."""
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return ""


_sleep_seq = 0


def sleep_arg() -> str:
    """A unique argument for `sleep` (60 s and a bit), to find the command's
    process from outside: inside toold's sandbox `$$` is the sandbox's pid."""
    global _sleep_seq
    _sleep_seq += 1
    return f"60.{os.getpid()}{_sleep_seq:04d}"


def host_pid(arg: str, timeout: float = 10.0) -> int:
    """The pid (in this pid namespace) of the `sleep ARG` process."""
    want = b"sleep\x00" + arg.encode() + b"\x00"
    deadline = time.monotonic() + timeout
    while True:
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/cmdline", "rb") as f:
                        if f.read().endswith(want):
                            return int(name)
                except OSError:
                    pass
        if time.monotonic() > deadline:
            raise AssertionError(f"no process runs sleep {arg}")
        time.sleep(0.05)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is gone for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def kill_if_alive(pid: int) -> None:
    """Kills pid if it is still there; a process that ended meanwhile is not an error."""
    try:
        os.kill(pid, 9)
    except ProcessLookupError:
        pass


async def async_wait_for(cond, timeout: float = 10.0, what: str = "condition") -> None:
    """Like wait_for, without blocking the event loop."""
    import asyncio

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


import asyncio as _asyncio  # noqa: E402
import atexit as _atexit  # noqa: E402
import unittest as _unittest  # noqa: E402

_runner = None


class AsyncTestCase(_unittest.IsolatedAsyncioTestCase):
    """IsolatedAsyncioTestCase on one event loop for the whole run.

    grpc.aio's completion-queue poller stays attached to the loop it first
    ran on; with a new loop per test (the default) it later fires into a
    closed loop and logs "Event loop is closed". Agents run one loop, so the
    tests do too.
    """

    def _setupAsyncioRunner(self):
        global _runner
        if _runner is None:
            _runner = _asyncio.Runner(debug=True)
            _atexit.register(_runner.close)
        self._asyncioRunner = _runner

    def _tearDownAsyncioRunner(self):
        pass  # closed at exit
