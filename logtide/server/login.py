"""Password checks for the server: off the event loop, bounded, and slowed down after failures.

A password check (scrypt) costs tens of milliseconds of CPU.  Run where
statements run, a flood of wrong passwords would starve every logged-in
client.  ``LoginGuard`` runs checks on a pool of their own (``threads``
threads) and refuses at once, with ``Bad credentials``, an attempt that finds
``backlog`` checks already queued or running.  After a failed attempt, further
attempts from the same client address and for the same role wait: the n-th
failure in a row spaces the next attempts ``failure_delay * 2**(n-1)`` seconds
apart (at most ``max_failure_delay``); a success, or ``forget_after`` seconds
without a failure, forgets the failures.  The waiting happens on the event
loop (a sleep) and costs nothing.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterable, TypeVar

from logtide.errors import AuthenticationError

R = TypeVar("R")
MAX_TRACKED = 10_000  # addresses and role names remembered at once


@dataclass(frozen=True)
class LoginLimits:
    """How password checks are bounded and slowed down."""

    threads: int = 1
    backlog: int = 32
    failure_delay: float = 0.1
    max_failure_delay: float = 5.0
    forget_after: float = 60.0


@dataclass
class _Failures:
    count: int = 0
    last: float = 0.0
    next_allowed: float = 0.0


class Throttle:
    """Failure counts per key (a client address, a role name) and when the next attempt may run."""

    def __init__(self, limits: LoginLimits) -> None:
        self.limits = limits
        self._state: dict[Hashable, _Failures] = {}

    def _get(self, key: Hashable, now: float) -> _Failures | None:
        state = self._state.get(key)
        if state is not None and now - state.last > self.limits.forget_after:
            del self._state[key]
            return None
        return state

    def _delay(self, count: int) -> float:
        return min(self.limits.failure_delay * 2 ** min(count - 1, 30), self.limits.max_failure_delay)

    def wait_time(self, keys: Iterable[Hashable], now: float) -> float:
        """Seconds to wait before an attempt for ``keys`` may run (0: now)."""
        wait = 0.0
        for key in keys:
            state = self._get(key, now)
            if state is not None:
                wait = max(wait, state.next_allowed - now)
        return wait

    def admit(self, keys: Iterable[Hashable], now: float) -> None:
        """An attempt starts now: the next one for a failing key waits another delay."""
        for key in keys:
            state = self._get(key, now)
            if state is not None:
                state.next_allowed = now + self._delay(state.count)

    def failed(self, keys: Iterable[Hashable], now: float) -> None:
        if len(self._state) > MAX_TRACKED:
            self._prune(now)
        for key in keys:
            state = self._get(key, now) or self._state.setdefault(key, _Failures())
            state.count += 1
            state.last = now
            state.next_allowed = now + self._delay(state.count)

    def succeeded(self, keys: Iterable[Hashable]) -> None:
        for key in keys:
            self._state.pop(key, None)

    def _prune(self, now: float) -> None:
        for key in [k for k, s in self._state.items() if now - s.last > self.limits.forget_after]:
            del self._state[key]
        if len(self._state) > MAX_TRACKED:  # still full: forget the oldest half
            oldest = sorted(self._state, key=lambda k: self._state[k].last)
            for key in oldest[: len(oldest) // 2]:
                del self._state[key]

    def __len__(self) -> int:
        return len(self._state)


class LoginGuard:
    """Checks logins with ``auth.authenticate`` on its own bounded pool, throttling repeated failures."""

    def __init__(self, auth: Any, limits: LoginLimits | None = None) -> None:
        self.auth = auth
        self.limits = limits or LoginLimits()
        self.throttle = Throttle(self.limits)
        self._pool = ThreadPoolExecutor(max(1, self.limits.threads), thread_name_prefix="logtide-login")
        self._in_flight = 0

    async def login(self, address: str, user: str, password: str) -> str:
        """The role name for a valid login; AuthenticationError otherwise (possibly after a wait)."""
        return await self.check(address, user, self.auth.authenticate, user, password)

    async def check(self, address: str, user: str, fn: Callable[..., R], *args: Any) -> R:
        """Run the credential check ``fn(*args)`` (it raises AuthenticationError on failure) on the guard's
        pool with the same bound and waits as ``login``: the Kafka endpoint's SASL/PLAIN and SCRAM steps."""
        loop = asyncio.get_running_loop()
        keys = (("address", address), ("role", user))
        while True:
            wait = self.throttle.wait_time(keys, loop.time())
            if wait <= 0:
                break
            await asyncio.sleep(wait)
        if self._in_flight >= self.limits.backlog:
            raise AuthenticationError("Too many login attempts in progress; try again later")
        self.throttle.admit(keys, loop.time())
        self._in_flight += 1
        try:
            result = await loop.run_in_executor(self._pool, fn, *args)
        except AuthenticationError:
            self.throttle.failed(keys, loop.time())
            raise
        finally:
            self._in_flight -= 1
        self.throttle.succeeded(keys)
        return result

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
