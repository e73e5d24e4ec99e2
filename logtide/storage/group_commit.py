"""Group commit: concurrent writes share one storage transaction and one fsync.

Every write is a function of a write transaction.  A writer queues its
function and takes the database's write lock; whoever holds the lock (the
leader) runs every queued function in one transaction, each inside its own
savepoint, then commits once.  A function that raises is rolled back to its
savepoint alone: the others still commit, so each statement stays atomic and
an error changes nothing.  Results (or errors) are handed back after the
commit returns, so nothing is acknowledged before it is durable.  A writer
that finds its function already run by another leader just picks its result
up; alone, a writer pays the same as a plain transaction (no savepoint: the
transaction itself is rolled back if its one function raises).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Callable

from .sqlite import Store, Txn


class _Pending:
    __slots__ = ("fn", "done", "result", "error")

    def __init__(self, fn: Callable[[Txn], Any]) -> None:
        self.fn = fn
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None


class GroupCommitter:
    """Runs write functions in shared transactions, serialized by ``lock``."""

    def __init__(self, store: Store, lock: threading.RLock, max_group: int = 64) -> None:
        self.store = store
        self.lock = lock
        self.max_group = max_group
        self._queue: deque[_Pending] = deque()
        self._queue_lock = threading.Lock()
        self.on_commit: Callable[[], None] | None = None  # called after each successful commit (wakes readers)
        self.on_abort: Callable[[], None] | None = None  # called when a commit fails (state cached for it is stale)

    def run(self, fn: Callable[[Txn], Any]) -> Any:
        """Run ``fn(txn)`` atomically and durably; its result, or its exception re-raised."""
        item = _Pending(fn)
        with self._queue_lock:
            self._queue.append(item)
        with self.lock:
            if not item.done:
                self._lead()
        if item.error is not None:
            raise item.error
        return item.result

    def _lead(self) -> None:
        with self._queue_lock:
            group = [self._queue.popleft() for _ in range(min(len(self._queue), self.max_group))]
        if not group:
            return
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
