"""Group commit: concurrent writes share one storage transaction and one fsync.

Every write is a function of a write transaction.  A writer queues its
function; the first writer to find nobody leading becomes the *leader*: it
takes the database's write lock and runs queued functions in one
transaction, each inside its own savepoint, then commits once.  A function
that raises is rolled back to its savepoint alone: the others still commit,
so each statement stays atomic and an error changes nothing.  Results (or
errors) are handed back after the commit returns, so nothing is acknowledged
before it is durable.

The other writers (followers) do not queue on the write lock: each sleeps on
its own wake-up lock, which the leader releases after the commit that ran its
function (or a failed commit: then its error).  The leader commits groups of
at most ``max_group`` in queue order until its own function has run, then
hands leadership to the writer at the head of the queue (waking it to lead)
or, with the queue empty, gives it up.  So after each commit exactly the
writers whose work is done wake, and the next group's leader wakes once,
instead of every waiting writer taking the lock in turn only to find its work
already done.  A thread that already holds the write lock (DDL, a changefeed's
initial scan) runs as a leader at once, whoever else leads: the lock is
reentrant, and the designated leader waits for it anyway.  A follower
interrupted while it waits (KeyboardInterrupt in the main thread) takes its
write out of the queue (unless a leader has taken it: then it runs, unanswered)
and passes on the lead if it was just woken to take it.

Alone, a writer pays the same as a plain transaction (no savepoint: the
transaction itself is rolled back if its one function raises).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Callable, Sequence

from .sqlite import Store, Txn


class _Pending:
    """One queued write: its function, its outcome, and the lock its writer sleeps on while following."""

    __slots__ = ("fn", "done", "result", "error", "wake", "leads")

    def __init__(self, fn: Callable[[Txn], Any]) -> None:
        self.fn = fn
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None
        self.wake: threading.Lock | None = None  # held while its writer follows; released to wake it
        self.leads = False  # its writer was woken to lead (its function may have run meanwhile)


class GroupCommitter:
    """Runs write functions in shared transactions, serialized by ``lock``."""

    def __init__(self, store: Store, lock: threading.RLock, max_group: int = 64) -> None:
        self.store = store
        self.lock = lock
        self.max_group = max_group
        self._queue: deque[_Pending] = deque()
        self._queue_lock = threading.Lock()  # guards the queue, ``_leading`` and the hand-over
        self._leading = False  # a writer leads (or was woken to lead): newcomers follow
        self.on_commit: Callable[[], None] | None = None  # called after each successful commit (wakes readers)
        self.on_abort: Callable[[], None] | None = None  # called when a commit fails (state cached for it is stale)

    def run(self, fn: Callable[[Txn], Any]) -> Any:
        """Run ``fn(txn)`` atomically and durably; its result, or its exception re-raised."""
        item = _Pending(fn)
        owns_lock = self._owned()  # this thread holds the write lock already (DDL, a changefeed's scan)
        with self._queue_lock:
            self._queue.append(item)
            follow = self._leading and not owns_lock
            takes_lead = not self._leading
            if follow:
                item.wake = wake = threading.Lock()
                wake.acquire()
            else:
                self._leading = True
        if follow:
            try:
                wake.acquire()  # released by a leader: our function has run, or we lead next
            except BaseException:  # interrupted (KeyboardInterrupt in the main thread): leave the queue
                self._abandon(item)
                raise
            if not item.leads:
                return _outcome(item)
            takes_lead = True
        self._lead(item, takes_lead)
        return _outcome(item)

    def run_group(self, fns: Sequence[Callable[[Txn], Any]],
                  blocking: bool = True) -> list[tuple[bool, Any]] | None:
        """Run ``fns`` as one group for a caller that collects writes itself (the server's committer thread):
        under the write lock, in one transaction, each in its own savepoint (one alone: none), one commit.
        Returns each one's ``(True, result)`` or ``(False, exception)``, as ``run`` would return or raise it;
        the writers queued in ``run`` are not part of the group (they run before or after it).  With
        ``blocking=False`` nothing runs and None is returned when another thread holds the write lock."""
        group = [_Pending(fn) for fn in fns]
        if not self.lock.acquire(blocking):
            return None
        try:
            self._commit(group)
        finally:
            self.lock.release()
        return [(True, item.result) if item.error is None else (False, item.error) for item in group]

    def _lead(self, item: _Pending, takes_lead: bool) -> None:
        """Commit groups under the write lock until ``item`` has run; then hand the lead over (if ours)."""
        try:
            with self.lock:
                while not item.done:
                    with self._queue_lock:
                        n = min(len(self._queue), self.max_group)
                        group = [self._queue.popleft() for _ in range(n)]
                    if not group:  # cannot happen: an item leaves the queue only to run under the lock
                        raise AssertionError("group commit: a queued write vanished")
                    try:
                        self._commit(group)
                    finally:  # their outcomes are set (and durable if no error): wake their writers
                        for other in group:
                            if other.wake is not None and other is not item:
                                other.wake.release()
        finally:
            if takes_lead:
                self._hand_over()

    def _hand_over(self) -> None:
        """Wake the first queued follower to lead, or give the lead up when none is queued.

        A queued write without a wake-up lock belongs to a thread holding the
        write lock, which runs it itself: it is skipped."""
        with self._queue_lock:
            for waiting in self._queue:
                wake = waiting.wake
                if wake is not None:
                    waiting.wake = None  # woken once: a leader that runs its function later must not wake it again
                    waiting.leads = True
                    wake.release()
                    return
            self._leading = False

    def _abandon(self, item: _Pending) -> None:
        """A follower stops waiting: its write leaves the queue (or, already taken by a leader, runs
        unanswered), and if it was just woken to lead, the lead passes on so that nobody waits for ever."""
        with self._queue_lock:
            try:
                self._queue.remove(item)
            except ValueError:
                pass
            woken_to_lead = item.leads
        if woken_to_lead:
            self._hand_over()

    def _owned(self) -> bool:
        owned = getattr(self.lock, "_is_owned", None)
        return bool(owned()) if owned is not None else False

    def _commit(self, group: list[_Pending]) -> None:
        """Run ``group`` in one transaction, each function in its own savepoint, and commit once."""
        if len(group) == 1:
            self._alone(group[0])
            return
        try:
            with self.store.write():
                for item in group:
                    try:
                        with self.store.savepoint() as txn:
                            item.result = item.fn(txn)
                    except BaseException as e:  # noqa: BLE001 - rolled back alone, handed back to its writer
                        item.error = e
            if self.on_commit is not None:
                self.on_commit()
        except BaseException as e:  # the commit itself failed: nothing of the group is durable
            if self.on_abort is not None:
                self.on_abort()
            for item in group:
                if item.error is None:
                    item.error = e
        finally:
            for item in group:
                item.done = True

    def _alone(self, item: _Pending) -> None:
        """A group of one runs without a savepoint (two statements less per commit): its transaction is
        its savepoint, rolled back whole if it raises."""
        try:
            with self.store.write() as txn:
                item.result = item.fn(txn)
            if self.on_commit is not None:
                self.on_commit()
        except BaseException as e:  # noqa: BLE001 - the write or its commit failed: nothing of it is durable
            if self.on_abort is not None:
                self.on_abort()
            item.error = e
        finally:
            item.done = True


def _outcome(item: _Pending) -> Any:
    if item.error is not None:
        raise item.error
    return item.result
