"""What ``logtide serve`` refuses to start with: the error, and the ports it listens on (``docs/server.md``, "Ports").

Shared by the command (``server/cli.py``), which checks the ports before anything is created, and the running
server (``server/running.py``), which names a port taken since then the same way.
"""

from __future__ import annotations

from dataclasses import dataclass


class StartupError(Exception):
    """A configuration the server refuses to start with (the message says why)."""


@dataclass(frozen=True)
class PortSetting:
    """A port ``logtide serve`` listens on, with the option that sets it (``docs/server.md``, "Ports")."""

    flag: str
    host: str
    port: int
    can_be_off: bool

    def refused(self, e: OSError) -> str:
        """``cannot listen on HOST:PORT (reason): choose another port with FLAG[, or FLAG off]``."""
        reason = (e.strerror or str(e)).strip()
        reason = reason[:1].lower() + reason[1:]
        text = f"cannot listen on {bracket(self.host)}:{self.port} ({reason}): choose another port with {self.flag}"
        return text + (f", or {self.flag} off" if self.can_be_off else "")


def bracket(host: str) -> str:
    """A host as it is written before ``:PORT``: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host
