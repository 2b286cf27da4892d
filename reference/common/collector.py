"""Python's cyclic garbage collector paused while the engine builds many long-lived objects at once (a large write,
an open that loads every cell): its full passes over every object of the process would be a large share of that
time, while what is built is kept and the temporaries are freed by their reference counts. Cycles made meanwhile,
if any, are collected once it resumes."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _CollectorPause:
    """The cyclic collector paused while any pause runs: the first to start pauses it if it was running, the last
    to end resumes it then, so pauses that overlap (several memories, several threads) neither resume it early nor
    leave it paused, and a host that had turned it off finds it off."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pauses = 0
        self._resume = False

    @contextmanager
    def paused(self) -> Iterator[None]:
        with self._lock:
            if self._pauses == 0:
                self._resume = gc.isenabled()
                gc.disable()
            self._pauses += 1
        try:
            yield
        finally:
            with self._lock:
                self._pauses -= 1
                if self._pauses == 0 and self._resume:
                    gc.enable()


paused = _CollectorPause().paused
"""`with paused():` the collector paused for the process (resumed after the last overlapping pause, even one that
fails, if it was running)."""
