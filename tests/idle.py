"""Pilot's wait for an idle app, noticed sooner: Textual's own evidence, looked at every 5 ms.

After every key it presses and in every ``pause``, Textual's Pilot waits for the app to go idle
(``textual._wait.wait_for_idle``): it sleeps 20 ms at a time until one such sleep used under 1 ms
of CPU. That is 20 ms at least, and usually 40, for every key; over the thousands of keys and
pauses of the suite, most of a TUI test's time is spent asleep in it.

The wait installed here returns

* as Textual's does, once the last 20 ms (a sliding window, looked at every 5 ms) used under
  1 ms of CPU: the very evidence Textual waits for, noticed up to 15 ms sooner; or
* sooner still, once the last 5 ms used under 1/20 of them too, and nothing is left for those
  20 ms to bring: no callback ready on the event loop, no timer due within 20 ms (Textual's
  screen refresh, its resize debounce, an animation's next frame, the app's own timers), no
  message queued for the app or any widget of its screens, no layout, repaint or after-refresh
  callback pending on the screen shown, and no worker running but the endless live tail's.

Both wait at least as long as the caller asks (``min_sleep``) and at most a second, as Textual's
does. The event loop's and the screen's private state is read as Textual 8.2.8 (pinned in
pyproject.toml) and CPython's asyncio keep it; a loop without it gets the first rule only.
"""

from __future__ import annotations

import asyncio
from collections import deque
from time import monotonic, process_time
from typing import Any

import textual.app
import textual.pilot
from textual._context import active_app
from textual._wait import SLEEP_GRANULARITY, SLEEP_IDLE
from textual.app import ScreenStackError, UnknownModeError

#: How often the evidence is looked at.
LOOK_EVERY = 0.005
#: The CPU a look's 5 ms may use and still count as idle: Textual's share (1 ms in 20).
IDLE_PER_LOOK = LOOK_EVERY * SLEEP_IDLE / SLEEP_GRANULARITY
#: The workers Pilot never waits for: the live tail watches the store for as long as the app runs.
ENDLESS_WORKER_GROUPS = frozenset({"tail"})


def _loop_has_work_within(seconds: float) -> bool:
    """True when a callback is ready to run, or a timer is due within ``seconds``; True too
    when the loop does not say (not CPython's own loop), so that only the 20 ms rule applies."""
    loop = asyncio.get_running_loop()
    ready: deque[asyncio.Handle] | None = getattr(loop, "_ready", None)
    scheduled: list[asyncio.TimerHandle] | None = getattr(loop, "_scheduled", None)
    if ready is None or scheduled is None:
        return True
    if ready:
        return True
    horizon = loop.time() + seconds
    return any(not timer.cancelled() and timer.when() <= horizon for timer in scheduled)


def _app_has_work(app: textual.app.App[Any]) -> bool:
    """True while the app has something queued, pending or running that Pilot would wait for."""
    if app._batch_count:
        return True
    try:
        shown = app.screen
    except (ScreenStackError, UnknownModeError):
        return False  # no screen yet, or none any more: nothing to draw
    if (
        shown._layout_required
        or shown._scroll_required
        or shown._repaint_required
        or shown._recompose_required
        or shown._dirty_widgets
        or shown._callbacks
    ):
        return True
    if any(not worker.is_finished and worker.group not in ENDLESS_WORKER_GROUPS for worker in app.workers):
        return True
    if app.message_queue_size:
        return True
    return any(node.message_queue_size for screen in app.screen_stack for node in screen.walk_children(with_self=True))


def _nothing_left_to_come() -> bool:
    if _loop_has_work_within(SLEEP_GRANULARITY):
        return False
    app = active_app.get(None)
    return app is None or not app.is_running or not _app_has_work(app)


async def wait_for_idle(min_sleep: float = SLEEP_GRANULARITY, max_sleep: float = 1) -> None:
    """``textual._wait.wait_for_idle``, with the same arguments, returning as the module says."""
    start = monotonic()
    # Each look's (when its sleep began, the CPU used while it slept), oldest first: enough of
    # them to span the last 20 ms. Only the sleeps count: the looking itself is not the app's work.
    looks: deque[tuple[float, float]] = deque()
    while True:
        slept_from, cpu_before = monotonic(), process_time()
        await asyncio.sleep(LOOK_EVERY)
        now, used = monotonic(), process_time() - cpu_before
        looks.append((slept_from, used))
        waited = now - start
        if waited >= max_sleep:
            return
        if waited <= min_sleep:
            continue
        if used < IDLE_PER_LOOK and _nothing_left_to_come():
            return
        while len(looks) > 1 and now - looks[1][0] >= SLEEP_GRANULARITY:
            looks.popleft()
        if now - looks[0][0] >= SLEEP_GRANULARITY and sum(cpu for _, cpu in looks) < SLEEP_IDLE:
            return


def install() -> None:
    """Have Pilot (its keys, pauses and waits for animations) use this wait, in this process."""
    # Both modules import Textual's function by name (not re-exported, hence the ignores).
    textual.pilot.wait_for_idle = wait_for_idle  # type: ignore[attr-defined]
    textual.app.wait_for_idle = wait_for_idle  # type: ignore[attr-defined]
