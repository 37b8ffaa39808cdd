"""Bulk builds pause the cyclic garbage collector, or set older objects aside from it, and leave it as they found it."""

from __future__ import annotations

import gc

import pytest

from agenttui.render.bulk import collector_paused


def test_the_collector_is_paused_meanwhile_and_running_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_an_error_inside_still_restarts_it() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_someone_else_paused_stays_paused() -> None:
    gc.disable()
    try:
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_older_objects_are_set_aside_until_the_last_block_ends_and_then_given_back() -> None:
    from agenttui.render.bulk import older_objects_set_aside

    assert gc.get_freeze_count() == 0
    with older_objects_set_aside():
        kept = gc.get_freeze_count()
        assert kept > 0
        with older_objects_set_aside():  # a tail read during a load
            assert gc.get_freeze_count() == kept
        assert gc.get_freeze_count() == kept
    assert gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), older_objects_set_aside():
        raise RuntimeError("boom")
    assert gc.get_freeze_count() == 0


def test_objects_set_aside_by_a_holder_stay_aside_until_it_releases_them() -> None:
    from agenttui.render.bulk import ObjectsSetAside, older_objects_set_aside

    assert gc.get_freeze_count() == 0
    with older_objects_set_aside():  # a load under way when the holder starts
        held = ObjectsSetAside()
    assert gc.get_freeze_count() > 0  # the block ended; the holder still holds
    kept = gc.get_freeze_count()
    made: list[list[int]] = [[] for _ in range(1000)]
    held.again()
    assert gc.get_freeze_count() >= kept + len(made)
    held.release()
    assert gc.get_freeze_count() == 0
    held.release()  # once only
    with older_objects_set_aside():
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
