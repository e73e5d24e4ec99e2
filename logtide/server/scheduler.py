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

The hand-over itself is kept cheap: workers sleep on a C-level
``queue.SimpleQueue`` of wake-up tokens (one per job) rather than a
``threading.Condition`` (pure Python, a new lock per wait), the owners' queues
are guarded by a plain lock, and a brief wait uses a per-job lock only when
one is made.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections import deque
from typing import Any, Callable, Generic, Hashable, TypeVar

R = TypeVar("R")
Job = tuple[Callable[[], Any], Callable[[bool, Any], None], "threading.Lock | None"]  # (fn, done, finished)
_STOP = None  # the token that tells a worker to leave


class WorkerPool:
    """``threads`` workers taking jobs round-robin between owners; results delivered on ``loop``."""

    def __init__(self, loop: asyncio.AbstractEventLoop, threads: int, name: str = "logtide-worker",
                 handoff_wait: float = 0.002) -> None:
        self.loop = loop
        self.handoff_wait = handoff_wait
        self.busy = 0
        self._lock = threading.Lock()  # guards the owners' queues, the ring and the counters
        self._tokens: queue.SimpleQueue = queue.SimpleQueue()  # one per queued job; _STOP per thread at shutdown
        self._jobs: FairQueue[Job] = FairQueue()
        self._answers = Answers(loop, "worker pool")
        self._stopping = False
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(threads)]
        for t in self._threads:
            t.start()

    def pending(self) -> int:
        return len(self._jobs)

    def post(self, owner: Hashable, fn: Callable[[], R], done: Callable[[bool, Any], None]) -> None:
        """Queue ``fn()`` for ``owner``; ``done(True, result)`` or ``done(False, exception)`` is then called
        on the loop (no future, no task: the cheapest way back).  When the job can start at once and
        ``handoff_wait`` is set, the loop thread first waits that long for it (module docstring)."""
        soon = len(self._jobs) < len(self._threads)
        finished = threading.Lock() if soon and self.handoff_wait > 0 else None
        if finished is not None:
            finished.acquire()
        self._submit(owner, fn, finished, done)
        if finished is not None:
            self._answers.wait(finished, self.handoff_wait)

    def _submit(self, owner: Hashable, fn: Callable[[], R], finished: "threading.Lock | None",
                done: Callable[[bool, Any], None]) -> None:
        with self._lock:
            if self._stopping:
                raise RuntimeError("the worker pool is shut down")
            self._jobs.append(owner, (fn, done, finished))
        self._tokens.put(True)

    def shutdown(self, timeout: float | None = None) -> None:
        """Finish the queued jobs, then stop the threads (waiting at most ``timeout`` for each)."""
        with self._lock:
            self._stopping = True
        for _ in self._threads:
            self._tokens.put(_STOP)  # after every job's token: the queued jobs run first
        for t in self._threads:
            t.join(timeout)

    # -- worker side ------------------------------------------------------------
    def _next(self) -> Job | None:
        if self._tokens.get() is _STOP:
            return None
        with self._lock:
            self.busy += 1
            return self._jobs.take(1)[0]

    def _work(self) -> None:
        while True:
            job = self._next()
            if job is None:
                return
            fn, done, finished = job
            try:
                outcome: tuple[Callable[[bool, Any], None], bool, Any] = (done, True, fn())
            except BaseException as e:  # handed to the job's callback
                outcome = (done, False, e)
            with self._lock:
                self.busy -= 1
            self._answers.add([outcome], finished)


Outcome = tuple[Callable[[bool, Any], None], bool, Any]  # (callback, ok, result or exception)
T = TypeVar("T")


class FairQueue(Generic[T]):
    """Items queued per owner (a connection), taken from the owners in turn (round-robin), each owner's in
    the order queued.  Not locked: its user guards it with its own lock."""

    def __init__(self) -> None:
        self._queues: dict[Hashable, deque[T]] = {}
        self._ring: deque[Hashable] = deque()
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def append(self, owner: Hashable, item: T) -> None:
        items = self._queues.get(owner)
        if items is None:
            items = self._queues[owner] = deque()
            self._ring.append(owner)
        items.append(item)
        self._count += 1

    def take(self, n: int) -> list[T]:
        """Up to ``n`` items, one from each owner in turn."""
        taken: list[T] = []
        ring, queues = self._ring, self._queues
        while ring and len(taken) < n:
            owner = ring.popleft()
            items = queues[owner]
            taken.append(items.popleft())
            if items:
                ring.append(owner)
            else:
                del queues[owner]
        self._count -= len(taken)
        return taken


class Answers:
    """Outcomes handed from threads to the loop, many for one wake-up.

    ``add`` queues outcomes and wakes the loop (``call_soon_threadsafe``) only
    when none were waiting already; ``wait`` lets the loop thread wait briefly
    (GIL released) for work it has just handed over, released through the
    ``finished`` lock given to ``add``, and deliver the outcomes itself
    without a wake-up.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, what: str) -> None:
        self.loop = loop
        self.what = what
        self._done: list[Outcome] = []
        self._lock = threading.Lock()
        self._loop_waiting = False

    def add(self, outcomes: list[Outcome], finished: "threading.Lock | None" = None) -> None:
        """Queue ``outcomes`` for the loop (called by a thread); release ``finished`` if given."""
        with self._lock:
            first = not self._done
            self._done.extend(outcomes)
        if finished is not None:
            finished.release()
        # the loop thread, waiting briefly for this very work, delivers it itself
        if first and not (finished is not None and self._loop_waiting):
            try:
                self.loop.call_soon_threadsafe(self.deliver)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                pass

    def wait(self, finished: threading.Lock, timeout: float) -> None:
        """Block the loop thread (GIL released) until ``finished`` is released or ``timeout`` passes."""
        self._loop_waiting = True
        try:
            finished.acquire(timeout=timeout)
        finally:
            self._loop_waiting = False
        if self._done:
            self.deliver()

    def deliver(self) -> None:
        """Call back every queued outcome (on the loop)."""
        with self._lock:
            done, self._done = self._done, []
        self.deliver_now(done)

    def deliver_now(self, done: list[Outcome]) -> None:
        """Call back ``done`` at once (on the loop, for work the loop did itself)."""
        for callback, ok, value in done:
            try:
                callback(ok, value)
            except Exception as e:  # one failing callback must not lose the others' results
                self.loop.call_exception_handler({"message": f"{self.what} callback failed", "exception": e})
