"""A readers–writer lock: many searches at once, or one writer (add, delete, merge) alone.

Phase-fair: a waiting writer holds back readers that arrive after it (so sleep cannot starve), and when a
writer lets go, the readers already waiting go in before the next writer (so several writers taking turns
cannot starve a search: a reader waits for at most the writer ahead of it and the one after).
Re-entrant for the thread that holds the write side, which may also read. Readers must not nest.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ReadWriteLock:
    def __init__(self) -> None:
        self._mutex = threading.Lock()  # not re-entrant: held only inside these methods
        self._condition = threading.Condition(self._mutex)
        """Waits and wakes on `_mutex`; the read side's usual path takes the mutex itself (a C-level context
        manager, where the condition's own `__enter__` is a Python call)."""
        self._readers = 0
        self._writer: int | None = None
        self._depth = 0
        self._waiting_writers = 0
        self._waiting_readers = 0
        self._releases = 0
        """How many times the write side was let go: a waiting reader goes in once it has moved."""
        self._owed = 0
        """Readers that were waiting when the write side was last let go and have not gone in yet: no writer
        may take it before they have."""
        self._read_side = _ReadSide(self)

    def read(self) -> _ReadSide:
        """The read side, as a context manager (a plain object: a search takes it on every call)."""
        return self._read_side

    def acquire_read(self) -> None:
        """Taken on every search: the usual case (no writer about) asks for no thread id and wakes no one."""
        with self._mutex:
            if self._writer is None and not self._waiting_writers:
                self._readers += 1
            elif self._writing_here():  # the writer may read what it is writing
                self._depth += 1
            else:
                arrived = self._releases
                self._waiting_readers += 1
                while self._writer is not None or (self._waiting_writers and self._releases == arrived):
                    self._condition.wait()
                self._waiting_readers -= 1
                self._readers += 1
                if self._owed:
                    self._owed -= 1
                    if not self._owed:
                        self._condition.notify_all()

    def release_read(self) -> None:
        with self._mutex:
            if self._writing_here():
                self._depth -= 1
            else:
                self._readers -= 1
                if self._readers == 0 and self._waiting_writers:  # only a writer waits for the readers
                    self._condition.notify_all()

    def _writing_here(self) -> bool:
        """Whether this thread holds the write side (asking for its id only when some thread does)."""
        return self._writer is not None and self._writer == threading.get_ident()

    @contextmanager
    def write(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._condition:
            if self._writer != me:
                self._waiting_writers += 1
                try:
                    while self._writer is not None or self._readers or self._owed:
                        self._condition.wait()
                finally:
                    self._waiting_writers -= 1
                self._writer = me
            self._depth += 1
        try:
            yield
        finally:
            with self._condition:
                self._depth -= 1
                if self._depth == 0:
                    self._writer = None
                    self._releases += 1
                    self._owed = self._waiting_readers
                    self._condition.notify_all()


class _ReadSide:
    """`with lock.read():` acquires and releases the read side."""

    def __init__(self, lock: ReadWriteLock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        self._lock.acquire_read()

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release_read()
