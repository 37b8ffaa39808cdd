"""Bulk builds pause the cyclic garbage collector and leave it as they found it."""

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
