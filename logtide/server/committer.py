"""The server's write path: one committer thread commits every queued write and answers them with one wake-up.

With many writes in flight, a thread per write (the worker pool running
``Session.execute``, each writer sleeping in the engine's group commit until
a leader wakes it) costs a thread wake-up per write, and each woken thread
then fights the leader for the GIL.  So the server runs writes differently:

* the event loop decodes a write request (INSERT, UPDATE, DELETE, BATCH),
  binds its values and checks it as ``Session.execute`` would
  (``StatementRunner.write``); a request that fails there is answered at
  once, with the error it has always got;
* the checked write (a ``WriteJob``: a function of the write transaction)
  goes into the queue of its connection, and the committer thread is woken
  only if it sleeps;
* the committer thread takes queued writes from the connections in turn
  (round-robin, at most ``max_group``), runs them in one transaction
  (``GroupCommitter.run_group``: each in its own savepoint, so a write that
  fails is rolled back alone; a lone write needs none), commits once (the
  fsync, GIL released), makes each write's answer, and hands all of them to
  the loop with one ``call_soon_threadsafe`` (none when a hand-over is
  already pending).  Nothing is answered before its commit returned.

With ``handoff_wait`` (the server's, for ``--synchronous NORMAL`` or ``OFF``,
see ``scheduler``) a write that wakes an idle committer makes the loop wait
that long for its group (GIL released) and answer it without a wake-up.

A lone write (nothing else in flight on the server, the thread asleep, the
write lock free) is committed by the loop itself (``commit_now``): one request
at a time then costs no hand-over, whose two wake-ups (the thread's, then the
loop's self-pipe) were a fifth of the server's CPU per write.

A connection's writes run in the order they arrived.  Reads, PREPARE, DDL and
every other statement keep the worker pool; they meet the committer only at
the engine's write lock.  ``shutdown`` commits and answers what is queued,
then stops the thread.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from typing import Any, Callable, Hashable, Sequence

from .scheduler import Answers, FairQueue, Outcome
from .statements import WriteRequest

Done = Callable[[bool, Any], None]
Queued = tuple[WriteRequest, Done]


class Committer:
    """One thread committing queued writes in groups; answers delivered on ``loop`` (module docstring)."""

    def __init__(self, loop: asyncio.AbstractEventLoop,
                 run_group: Callable[..., list[tuple[bool, Any]] | None],
                 max_group: int = 64, handoff_wait: float = 0.0, name: str = "logtide-committer") -> None:
        self.loop = loop
        self.run_group = run_group
        self.max_group = max_group
        self.handoff_wait = handoff_wait
        self.committing = 0  # writes in the group being committed
        self._lock = threading.Lock()  # guards the queues, the ring, the counters and the flags
        self._writes: FairQueue[Queued] = FairQueue()
        self._idle = False  # the thread sleeps on _wake: the next post wakes it
        self._stopping = False
        self._wake: queue.SimpleQueue = queue.SimpleQueue()
        self._finished: threading.Lock | None = None  # released when the group of the waking write is answered
        self._answers = Answers(loop, "committer")
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def pending(self) -> int:
        return len(self._writes)

    def post(self, owner: Hashable, request: WriteRequest, done: Done) -> None:
        """Queue ``request`` for ``owner`` (a connection); ``done(True, outcome)`` or ``done(False, exception)``
        is called on the loop once its group has committed (or failed)."""
        with self._lock:
            if self._stopping:
                raise RuntimeError("the committer is shut down")
            self._writes.append(owner, (request, done))
            wake, self._idle = self._idle, False
            finished = None
            if wake and self.handoff_wait > 0:
                finished = self._finished = threading.Lock()
                finished.acquire()
        if wake:
            self._wake.put(True)
        if finished is not None:
            self._answers.wait(finished, self.handoff_wait)

    def commit_now(self, request: WriteRequest, done: Done) -> bool:
        """Commit ``request`` on the calling thread (the loop) and answer it, when the committer thread sleeps
        with nothing queued and the write lock is free; False (nothing done) otherwise.  For a lone write:
        it saves the two thread wake-ups of a hand-over, at the price of holding the loop for the commit."""
        with self._lock:
            if not self._idle or self._stopping or len(self._writes):
                return False
            self._idle = False  # the thread stays asleep; nothing else posts while the loop is here
        try:
            try:
                outcomes = self.run_group([request.job.work], blocking=False)
            except BaseException as e:  # noqa: BLE001 - as in _commit
                outcomes = [(False, e)]
        finally:
            with self._lock:
                self._idle = True
        if outcomes is None:  # another thread writes (DDL, a changefeed's scan): the committer waits for it
            return False
        self._answers.deliver_now(self._answers_of([(request, done)], outcomes))
        return True

    def shutdown(self, timeout: float | None = None) -> None:
        """Commit and answer the queued writes, then stop the thread (waiting at most ``timeout``)."""
        with self._lock:
            self._stopping = True
            wake, self._idle = self._idle, False
        if wake:
            self._wake.put(True)
        self._thread.join(timeout)

    # -- the committer thread ----------------------------------------------------
    def _work(self) -> None:
        while True:
            with self._lock:
                group = self._writes.take(self.max_group)  # from each connection in turn
                finished, self._finished = self._finished, None
                if not group:
                    if self._stopping:
                        return
                    self._idle = True
            if not group:
                self._wake.get()
                continue
            self.committing = len(group)
            self._answers.add(self._commit(group), finished)
            self.committing = 0

    def _commit(self, group: list[Queued]) -> list[Outcome]:
        """Run ``group`` in one transaction and make each write's answer (or error)."""
        try:
            outcomes = self.run_group([request.job.work for request, _ in group])
        except BaseException as e:  # noqa: BLE001 - cannot happen (run_group catches); never leave a write unanswered
            outcomes = [(False, e)] * len(group)
        return self._answers_of(group, outcomes)

    @staticmethod
    def _answers_of(group: list[Queued], outcomes: list[tuple[bool, Any]]) -> list[Outcome]:
        """Each write's answer (or the error it raised), made from its outcome in the transaction."""
        answers: list[Outcome] = []
        for (request, done), (ok, value) in zip(group, outcomes):
            try:
                answers.append((done, True, request.answer(ok, value)))
            except BaseException as e:  # noqa: BLE001 - the write's error, answered on its stream
                answers.append((done, False, e))
        return answers
