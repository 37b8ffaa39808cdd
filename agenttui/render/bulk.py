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


class _SetAside:
    blocks = 0
    """How many ``older_objects_set_aside`` blocks (and ``ObjectsSetAside`` holds) are open: the
    first freezes, the last thaws."""


@contextmanager
def older_objects_set_aside() -> Iterator[None]:
    """Leave the objects alive now out of the collector's passes while a long build runs, and
    give them back to it after (``gc.freeze``, then ``gc.unfreeze``: nothing is kept from it for good).

    Reading a long run makes many objects that live on, and so a few full passes, each over every
    object in the process: with the runs list's 100,000 rows behind it, 1.1 s of the 7.4 s it took
    to load the production-shaped store's 50,000-record run. Blocks may nest or overlap (a tail
    read during a load); the objects are given back when the last one ends.
    """
    if _SetAside.blocks == 0:
        gc.freeze()
    _SetAside.blocks += 1
    try:
        yield
    finally:
        _SetAside.blocks -= 1
        if _SetAside.blocks == 0:
            gc.unfreeze()


class ObjectsSetAside:
    """The objects alive now set aside from the collector's passes, as ``older_objects_set_aside``
    does, for as long as their holder likes: ``again()`` sets aside those alive then too, and
    ``release()`` gives them all back (at once, or when the last block open then ends).

    A long run's screen holds its run's objects (a flowchart node a record, 50,000 of them) as
    long as it shows it; left to the collector, each full pass walked them all, 0.1 s a pass,
    two of them as the panes were shown after the load. Objects set aside are still freed as
    soon as nothing refers to them; only cycles among them wait for the release to be collected.
    """

    def __init__(self) -> None:
        gc.freeze()
        _SetAside.blocks += 1
        self._held = True

    def again(self) -> None:
        """Set aside the objects alive now too (a batch of the run's, just made)."""
        if self._held:
            gc.freeze()

    def release(self) -> None:
        """Give the objects back to the collector (once; again is harmless)."""
        if not self._held:
            return
        self._held = False
        _SetAside.blocks -= 1
        if _SetAside.blocks == 0:
            gc.unfreeze()


def give_back_free_memory() -> None:
    """Hand the memory freed since to the system, where the C library keeps it (glibc's
    ``malloc_trim``; elsewhere nothing happens).

    After a pass that made and dropped much (every status of a large store read, a long run
    loaded), glibc keeps the freed blocks of its heaps, the database thread's included, for
    later: on the production-shaped store, 11 MB of the runs list's 113 MB, which a run opened
    next then adds to its peak.
    """
    import ctypes  # where it is first needed: not on the way to the first rows
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return
    trim(0)
