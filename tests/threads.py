"""Run test workloads on threads and collect what they raise (a thread's exception is otherwise lost)."""

from __future__ import annotations

import threading
from collections.abc import Callable


def run_concurrently(*workloads: Callable[[], None], timeout: float = 300.0) -> list[BaseException]:
    """Start every workload on its own thread, wait for all, return the exceptions they raised."""
    errors: list[BaseException] = []

    def guarded(workload: Callable[[], None]) -> None:
        try:
            workload()
        except BaseException as error:  # handed back to the test, which asserts there are none
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(w,)) for w in workloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    stuck = [t for t in threads if t.is_alive()]
    if stuck:
        errors.append(TimeoutError(f"{len(stuck)} workload(s) still running after {timeout:.0f} s"))
    return errors
