"""One error hierarchy: the core raises these, the front ends show them; and the warnings the core
gives of what stops nothing but a person should know (each front end shows them its own way)."""

from __future__ import annotations


class AgentTuiError(Exception):
    """Base of every error agenttui means to show a user.

    `message` is one clear line; `title` names the kind of failure for a dialog or a CLI prefix.
    """

    title = "Error"

    def __init__(self, message: str, *, title: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if title is not None:
            self.title = title

    def __str__(self) -> str:
        return self.message


class ConfigError(AgentTuiError):
    """The caller asked for something the configuration cannot do (e.g. listing a store without Lister)."""

    title = "Configuration error"


class StoreURLError(AgentTuiError):
    """A store URL that names no store agenttui can open."""

    title = "Bad store URL"


class StoreError(AgentTuiError):
    """A store failed to do what its contract promises (I/O, driver or database error)."""

    title = "Store error"


class StoreLockedError(StoreError):
    """Another process holds a lock on the store for longer than a reader waits (SQLite's busy)."""

    title = "Store locked"


class StoreConnectionError(StoreError):
    """The store could not be reached or opened (missing file, refused login, server down)."""

    title = "Connection error"


class StoreMissingError(StoreConnectionError):
    """The store is not there (no such SQLite file) and was not to be created."""

    title = "No such store"


class ReadOnlyStoreError(StoreError):
    """A write was attempted on a store opened read-only."""

    title = "Read-only store"


class WritesRefusedError(AgentTuiError):
    """A write asked of a TUI that refuses every write (``open --no-writes``; ``serve`` without
    ``--allow-writes``)."""

    title = "Writes refused"


class SchemaVersionError(StoreError):
    """The store's schema is newer than this agenttui understands, or is not a journal at all."""

    title = "Unsupported schema"


class CorruptRecordError(AgentTuiError):
    """Stored bytes that do not decode as a journal record (bad JSON, wrong name, bad shape)."""

    title = "Unreadable record"


class JournalVersionError(AgentTuiError):
    """A run whose journal is not in a supported format.

    `found` is the format its header names, or "" for a headerless (pre-v0.9) journal.
    """

    title = "Unsupported journal"

    def __init__(self, run_id: str, found: str) -> None:
        what = f"format {found!r}" if found else "no @journal header (a pre-v0.9 journal)"
        super().__init__(f"run {run_id!r} has {what}; agenttui writes bide.journal.v1-dev")
        self.run_id = run_id
        self.found = found


class RunNotFoundError(AgentTuiError):
    """No run with that id exists in the store."""

    title = "Run not found"

    def __init__(self, run_id: str) -> None:
        super().__init__(f"no run {run_id!r} in this store")
        self.run_id = run_id


class AgentTuiWarning(UserWarning):
    """Base of every warning agenttui means to show a user: one clear line, as an error's.

    The core gives it with ``warnings.warn`` and goes on; the CLI's entry point prints it on stderr
    (``agenttui: warning: ...``), the TUI shows it as a notification.
    """


class StoreDamageWarning(AgentTuiWarning):
    """The store is damaged, and is being read around the damage (a damaged index: without it)."""
