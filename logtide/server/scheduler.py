"""The worker threads that run statements, shared fairly between connections.

A plain thread pool runs jobs first come, first served, so one client with
thousands of requests in flight would make every other client wait behind
them.  ``WorkerPool`` keeps one queue per owner (a connection) and its
threads take jobs from the owners in round-robin order.  A slow job holds up
only the thread running it.

Results go back to the event loop in batches: a finishing worker appends to a
list and wakes the loop only when the list was empty, so a busy server pays
one wake-up for many results instead of one each.

Handing a job to another thread is costly in CPython: the two threads then
fight for the GIL at every blocking call (every SQLite call releases it), which
roughly doubles the CPU cost of a short statement.  So unless the queue is
already long, ``run`` lets the loop thread wait for the job for a short while
(``handoff_wait``, a couple of milliseconds) with the GIL released, and carries
on at once when it finishes in time; a job that takes longer than that runs on
while the loop serves everybody else.  A slow statement thus delays others by
at most ``handoff_wait`` (a few times, until the queue is long enough).
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from typing import Any, Callable, Hashable, TypeVar

R = TypeVar("R")
Job = tuple[Callable[[], Any], asyncio.Future, list]


class WorkerPool:
    """``threads`` workers taking jobs round-robin between owners; results delivered on ``loop``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, threads: int, name: str = "logtide-worker",
                 handoff_wait: float = 0.002) -> None:
        self.loop = loop
        self.handoff_wait = handoff_wait
        self.busy = 0
        self._cond = threading.Condition()
        self._queues: dict[Hashable, deque[Job]] = {}
        self._ring: deque[Hashable] = deque()
        self._done: list[tuple[asyncio.Future, bool, Any]] = []
        self._done_cond = threading.Condition()
        self._loop_waiting = False
        self._queued = 0
        self._stopping = False
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(threads)]
        for t in self._threads:
            t.start()

    def pending(self) -> int:
        return self._queued

    async def run(self, owner: Hashable, fn: Callable[[], R]) -> R:
        """Run ``fn()`` on a worker when ``owner``'s turn comes; its result or exception."""
        future, finished, soon = self.submit(owner, fn)
        if soon and self.handoff_wait > 0:
            self._wait_briefly(finished)
        return await future

    def submit(self, owner: Hashable, fn: Callable[[], R]) -> tuple["asyncio.Future[R]", list, bool]:
        """Queue ``fn()`` for ``owner``: (its future on the loop, its finished flag, whether it should start soon)."""
        future: asyncio.Future = self.loop.create_future()
        finished = [False]
        with self._cond:
            if self._stopping:
                raise RuntimeError("the worker pool is shut down")
            soon = self._queued < len(self._threads)
            queue = self._queues.get(owner)
            if queue is None:
                queue = self._queues[owner] = deque()
                self._ring.append(owner)
            queue.append((fn, future, finished))
            self._queued += 1
            self._cond.notify()
        return future, finished, soon

    def _wait_briefly(self, finished: list) -> None:
        """Block the loop thread (GIL released) until the job finishes or ``handoff_wait`` passes."""
        with self._done_cond:
            self._loop_waiting = True
            self._done_cond.wait_for(lambda: finished[0], self.handoff_wait)
            self._loop_waiting = False
            pending = bool(self._done)
        if pending:
            self._deliver()

    def shutdown(self, timeout: float | None = None) -> None:
        """Finish the queued jobs, then stop the threads (waiting at most ``timeout`` for each)."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        for t in self._threads:
            t.join(timeout)

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
            self._queued -= 1
            self.busy += 1
            return job

    def _work(self) -> None:
        while True:
            job = self._next()
            if job is None:
                return
            fn, future, finished = job
            try:
                outcome: tuple[asyncio.Future, bool, Any] = (future, True, fn())
            except BaseException as e:  # handed to the awaiting coroutine
                outcome = (future, False, e)
            with self._cond:
                self.busy -= 1
            with self._done_cond:
                first = not self._done
                self._done.append(outcome)
                finished[0] = True
                wake = first and not self._loop_waiting
                self._done_cond.notify_all()
            if wake:
                try:
                    self.loop.call_soon_threadsafe(self._deliver)
                except RuntimeError:  # the loop is closed: nobody is waiting any more
                    pass

    # -- loop side ----------------------------------------------------------------
    def _deliver(self) -> None:
        with self._done_cond:
            done, self._done = self._done, []
        for future, ok, value in done:
            if future.cancelled():
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
