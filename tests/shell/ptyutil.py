"""Driving a program on a pseudo-terminal with the standard library (pty, os, select)."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import time

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]")


class PtyProcess:
    """A child process whose stdin/stdout/stderr are a terminal we type into."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        self.pid, self.fd = pid, fd
        self.buffer = ""
        self.transcript = ""
        self.status: int | None = None

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 4096)
        except OSError:  # EIO: the child closed the terminal
            return False
        if not data:
            return False
        text = _ANSI.sub("", data.decode("utf-8", "replace")).replace("\r\n", "\n")
        self.buffer += text
        self.transcript += text
        return True

    def expect(self, text: str, timeout: float = 20.0) -> str:
        """Waits for ``text``; returns the output up to and including it."""
        deadline = time.monotonic() + timeout
        while text not in self.buffer:
            if time.monotonic() > deadline or not self._read(min(0.2, max(0.0, deadline - time.monotonic()))):
                if text in self.buffer:
                    break
                raise AssertionError("expected %r; transcript:\n%s" % (text, self.transcript))
        end = self.buffer.index(text) + len(text)
        seen, self.buffer = self.buffer[:end], self.buffer[end:]
        return seen

    def send(self, text: str) -> None:
        os.write(self.fd, text.encode("utf-8"))

    def interrupt(self, prompt: str, tries: int = 4) -> str:
        """Ctrl-C until ``prompt`` comes back: a Ctrl-C typed while readline sets the terminal up for the line
        is flushed with the pending input, unseen (a loaded machine widens that moment), so it is typed again;
        any prompt a late first one printed is read and dropped.  Returns the output up to the prompt."""
        for attempt in range(tries):
            self.send("\x03")
            try:
                seen = self.expect(prompt, timeout=5.0 if attempt < tries - 1 else 20.0)
                break
            except AssertionError:
                if attempt == tries - 1:
                    raise
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            self._read(0.1)
        self.buffer = ""
        return seen

    def wait(self, timeout: float = 20.0) -> int:
        """Waits for the child to exit (reading its output meanwhile); returns its exit status."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                self._drain()
                os.close(self.fd)
                return self.status
            self._read(0.1)
        self.kill()
        raise AssertionError("child did not exit; transcript:\n%s" % self.transcript)

    def _drain(self) -> None:
        while self._read(0.05) and select.select([self.fd], [], [], 0)[0]:
            pass

    def kill(self) -> None:
        """Ends the child (this process's own child, by pid)."""
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self.status = -9
