"""Fair use of the worker threads: connections take turns.

A plain thread pool runs jobs first come, first served, so one client with
thousands of requests in flight would make every other client wait behind
them.  ``FairScheduler`` keeps one queue per owner (a connection) and hands
the pool at most ``slots`` jobs at a time, taking the next job from the
owners in round-robin order.  Runs on the event loop; the jobs run in the pool.
"""

from __future__ import annotations

import asyncio
from collections import deque
from concurrent.futures import Executor
from typing import Any, Callable, Hashable, TypeVar

R = TypeVar("R")


class FairScheduler:
    """Round-robin between owners, at most ``slots`` jobs in the executor at once."""

    def __init__(self, executor: Executor, slots: int) -> None:
        self.executor = executor
        self.slots = slots
        self.busy = 0
        self._queues: dict[Hashable, deque[tuple[Callable[[], Any], asyncio.Future]]] = {}
        self._ring: deque[Hashable] = deque()

    def pending(self) -> int:
        return sum(len(q) for q in self._queues.values())

    async def run(self, owner: Hashable, fn: Callable[[], R]) -> R:
        """Run ``fn()`` in the executor when ``owner``'s turn comes; its result or exception."""
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        queue = self._queues.get(owner)
        if queue is None:
            queue = self._queues[owner] = deque()
            self._ring.append(owner)
        queue.append((fn, future))
        self._pump()
        return await future

    def _pump(self) -> None:
        loop = asyncio.get_running_loop()
        while self.busy < self.slots and self._ring:
            owner = self._ring.popleft()
            queue = self._queues[owner]
            fn, future = queue.popleft()
            if queue:
                self._ring.append(owner)
            else:
                del self._queues[owner]
            if future.cancelled():
                continue
            self.busy += 1
            job = loop.run_in_executor(self.executor, fn)
            job.add_done_callback(lambda done, future=future: self._finished(done, future))

    def _finished(self, done: asyncio.Future, future: asyncio.Future) -> None:
        self.busy -= 1
        if not future.cancelled():
            if done.cancelled():
                future.cancel()
            elif done.exception() is not None:
                future.set_exception(done.exception())  # type: ignore[arg-type]
            else:
                future.set_result(done.result())
        self._pump()
