"""The hostile corpus of the hardening tests serves the MCP server's tests too."""

from tests.hardening.conftest import hostile_corpus  # noqa: F401
