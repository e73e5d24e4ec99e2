"""The worker threads that run statements, shared fairly between connections.

A plain thread pool runs jobs first come, first served, so one client with
thousands of requests in flight would make every other client wait behind
them.  ``WorkerPool`` keeps one queue per owner (a connection) and its
threads take jobs from the owners in round-robin order.  A slow job holds up
only the thread running it.

Results go back to the event loop in batches: a finishing worker appends to a
list and wakes the loop only when the list was empty, so a busy server pays
one wake-up for many results instead of one each.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import Any, Callable, Hashable, TypeVar

R = TypeVar("R")
Job = tuple[Callable[[], Any], asyncio.Future]


class WorkerPool:
    """``threads`` workers taking jobs round-robin between owners; results delivered on ``loop``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, threads: int, name: str = "logtide-worker") -> None:
        self.loop = loop
        self.busy = 0
        self._cond = threading.Condition()
        self._queues: dict[Hashable, deque[Job]] = {}
        self._ring: deque[Hashable] = deque()
        self._done: list[tuple[asyncio.Future, bool, Any]] = []
        self._done_lock = threading.Lock()
        self._stopping = False
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(threads)]
        for t in self._threads:
            t.start()

    def pending(self) -> int:
        with self._cond:
            return sum(len(q) for q in self._queues.values())

    def submit(self, owner: Hashable, fn: Callable[[], R]) -> "asyncio.Future[R]":
        """Queue ``fn()`` for ``owner``; the future (on the loop) gets its result or exception."""
        future: asyncio.Future = self.loop.create_future()
        with self._cond:
            if self._stopping:
                raise RuntimeError("the worker pool is shut down")
            queue = self._queues.get(owner)
            if queue is None:
                queue = self._queues[owner] = deque()
                self._ring.append(owner)
            queue.append((fn, future))
            self._cond.notify()
        return future

    def shutdown(self) -> None:
        """Finish the queued jobs, then stop the threads."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        for t in self._threads:
            t.join()

    # -- worker side ------------------------------------------------------------
    def _next(self) -> Job | None:
        with self._cond:
            while not self._ring:
                if self._stopping:
                    return None
                self._cond.wait()
            owner = self._ring.popleft()
            queue = self._queues[owner]
            job = queue.popleft()
            if queue:
                self._ring.append(owner)
            else:
                del self._queues[owner]
            self.busy += 1
            return job

    def _work(self) -> None:
        while True:
            job = self._next()
            if job is None:
                return
            fn, future = job
            try:
                outcome: tuple[asyncio.Future, bool, Any] = (future, True, fn())
            except BaseException as e:  # handed to the awaiting coroutine
                outcome = (future, False, e)
            with self._cond:
                self.busy -= 1
            with self._done_lock:
                first = not self._done
                self._done.append(outcome)
            if first:
                try:
                    self.loop.call_soon_threadsafe(self._deliver)
                except RuntimeError:  # the loop is closed: nobody is waiting any more
                    pass

    # -- loop side ----------------------------------------------------------------
    def _deliver(self) -> None:
        with self._done_lock:
            done, self._done = self._done, []
        for future, ok, value in done:
            if future.cancelled():
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
