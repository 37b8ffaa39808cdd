"""Building many small objects at once, with the cyclic garbage collector paused meanwhile."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a bulk build; restore it as it was after.

    The collector runs a pass every few hundred new container objects, and once the young ones
    outgrow a quarter of the heap a full pass over everything (a run's records included): building
    the 100,000 nodes of a long run's flowchart paid one or two of those, 40% of its time. The
    nodes outlive the build, so the passes found nothing to free; paused, the collector takes the
    new objects in one pass afterwards. (Mercurial's ``util.nogc`` does the same for its indexes.)
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
