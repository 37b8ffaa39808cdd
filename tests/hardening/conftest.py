"""The demo store fixtures of the TUI tests serve the hardening tests too; the hostile corpus is
built once a session and copied by each test that writes."""

import asyncio

import pytest

from tests.hardening.hostile_corpus import CorpusStore, build_corpus
from tests.tui.conftest import demo_db, demo_db_template  # noqa: F401


@pytest.fixture(scope="session")
def hostile_corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CorpusStore]:
    """Every store of the hostile corpus, by name (``hostile_corpus.py``). Read-only: copy one to write."""
    return asyncio.run(build_corpus(tmp_path_factory.mktemp("hostile-corpus")))
