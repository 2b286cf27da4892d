"""A readers–writer lock: many searches at once, or one writer (add, delete, merge) alone.

Writer-preferring (a waiting writer holds back new readers, so sleep cannot starve), and
re-entrant for the thread that holds the write side. Readers must not nest.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ReadWriteLock:
    def __init__(self) -> None:
        self._condition = threading.Condition(threading.Lock())  # not re-entrant: held only inside these methods
        self._readers = 0
        self._writer: int | None = None
        self._depth = 0
        self._waiting_writers = 0
        self._read_side = _ReadSide(self)

    def read(self) -> _ReadSide:
        """The read side, as a context manager (a plain object: a search takes it on every call)."""
        return self._read_side

    def acquire_read(self) -> None:
        """Taken on every search: the usual case (no writer) asks for no thread id and wakes no one
        (1.3 µs against 1.9 µs here)."""
        with self._condition:
            if self._writing_here():  # the writer may read what it is writing
                self._depth += 1
            else:
                while self._writer is not None or self._waiting_writers:
                    self._condition.wait()
                self._readers += 1

    def release_read(self) -> None:
        with self._condition:
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
                while self._writer is not None or self._readers:
                    self._condition.wait()
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
                    self._condition.notify_all()


class _ReadSide:
    """`with lock.read():` acquires and releases the read side."""

    def __init__(self, lock: ReadWriteLock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        self._lock.acquire_read()

    def __exit__(self, *exc_info: object) -> None:
        self._lock.release_read()
