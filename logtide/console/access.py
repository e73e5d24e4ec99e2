"""Who is looking: console logins with a CQL role's password, and what that role may see.

With ``--auth`` the console asks for a role and its password, checked by
the server's ``LoginGuard`` (the CQL port's: one thread, the same bound and
the same growing waits after failures, per client address and role).  A
login gets a random session token in a cookie (``HttpOnly``,
``SameSite=Strict``, ``Path=/``), valid ``idle_seconds`` after its last use
and at most ``max_age_seconds``; at most ``MAX_SESSIONS`` live at once (the
oldest goes first).  A role sees a table, its CDC log and its changefeeds
when it may SELECT the table (``auth.has_permission``, the check CQL's
``SELECT`` and the Kafka endpoint's READ/DESCRIBE make); a superuser sees
everything.  Without ``--auth`` no login is asked and everything is shown.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from logtide.auth import DataResource

COOKIE = "logtide_console"
MAX_SESSIONS = 1000


@dataclass(frozen=True)
class Viewer:
    """The role a request is made as (None: no --auth, everything visible)."""

    role: str | None
    auth: Any = None

    def may_select(self, keyspace: str, table: str) -> bool:
        """SELECT on the table or a parent (keyspace, all keyspaces), as CQL checks it."""
        if self.auth is None or self.role is None:
            return True
        return self.auth.has_permission(self.role, "SELECT", DataResource(keyspace, table))


@dataclass
class _Session:
    role: str
    created: float
    last_used: float


class Sessions:
    """Console login sessions by token."""

    def __init__(self, idle_seconds: float = 1800.0, max_age_seconds: float = 8 * 3600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.idle_seconds = idle_seconds
        self.max_age_seconds = max_age_seconds
        self.clock = clock
        self._by_token: dict[str, _Session] = {}
        self._lock = threading.Lock()

    def start(self, role: str) -> str:
        """A new session for ``role``; its token."""
        token = secrets.token_urlsafe(32)
        now = self.clock()
        with self._lock:
            self._expire(now)
            while len(self._by_token) >= MAX_SESSIONS:
                oldest = min(self._by_token, key=lambda t: self._by_token[t].last_used)
                del self._by_token[oldest]
            self._by_token[token] = _Session(role, now, now)
        return token

    def role(self, token: str | None) -> str | None:
        """The role of a live session (None: no such session, or it expired)."""
        if not token:
            return None
        now = self.clock()
        with self._lock:
            s = self._by_token.get(token)
            if s is None:
                return None
            if now - s.last_used > self.idle_seconds or now - s.created > self.max_age_seconds:
                del self._by_token[token]
                return None
            s.last_used = now
            return s.role

    def end(self, token: str | None) -> None:
        with self._lock:
            self._by_token.pop(token or "", None)

    def _expire(self, now: float) -> None:
        for token in [t for t, s in self._by_token.items()
                      if now - s.last_used > self.idle_seconds or now - s.created > self.max_age_seconds]:
            del self._by_token[token]

    def __len__(self) -> int:
        return len(self._by_token)


def session_cookie(token: str, max_age: int) -> str:
    """The Set-Cookie value for a session (``max_age`` 0: delete it)."""
    return f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age}"
