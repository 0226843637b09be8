"""asyncio.run in a thread of its own, for tests that drive async code themselves.

In the whole suite the browser tests (Playwright's sync API) leave an event loop running in the
main thread, where asyncio.run refuses to start; a fresh thread has no loop."""

from __future__ import annotations

import asyncio
import threading
from typing import Any


def run_in_own_loop(coroutine) -> Any:
    """Run `coroutine` to its end in a new thread's event loop; return its value or raise its error."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # re-raised in the test's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")
