"""Reaching PostgreSQL: what a store URL names, and the driver's errors as agenttui's own.

A password never leaves this module in a message: ``Target.clean`` masks it wherever it appears.
"""

from __future__ import annotations

import contextlib
import getpass
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

import asyncpg

from agenttui.errors import (
    AgentTuiError,
    ReadOnlyStoreError,
    StoreConnectionError,
    StoreError,
    StoreURLError,
)

#: Seconds to wait for a connection to the server before reporting it unreachable.
CONNECT_TIMEOUT = 10.0
#: Seconds ``close`` waits for in-flight queries before cutting the connections.
CLOSE_TIMEOUT = 10.0

#: Errors that mean the server is down, going down, or unreachable, rather than a bad statement.
_UNREACHABLE = (
    OSError,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.AdminShutdownError,
    asyncpg.CrashShutdownError,
    asyncpg.CannotConnectNowError,
    asyncpg.TooManyConnectionsError,
)


@dataclass(frozen=True, slots=True)
class Target:
    """What a DSN names, for messages and ``display_url``; asyncpg resolves the real connection."""

    user: str
    password: str | None
    host: str
    port: int
    database: str
    query: tuple[tuple[str, str], ...]
    """Query parameters other than ``password`` and ``schema``, passed on unchanged."""

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def clean(self, text: str) -> str:
        """``text`` on one line, with the password masked wherever it appears (raw or URL-encoded)."""
        if self.password:
            for form in {self.password, quote(self.password, safe="")}:
                text = text.replace(form, "***")
        return " ".join(text.split())


#: Query parameters of a store URL that are agenttui's, never sent to the server.
_OWN_PARAMETERS = ("schema", "notify", "replica")


class ParsedDSN(NamedTuple):
    driver_dsn: str
    """The URL asyncpg gets: agenttui's own parameters removed."""
    target: Target
    schema: str | None
    """``?schema=``."""
    notify: bool | None
    """``?notify=on|off``, or None when the URL does not say."""
    replica: tuple[str, str, Target] | None = None
    """``?replica=HOST[:PORT]``: a read replica's driver URL (the same user, password and
    database), its address as written, and its target for messages."""


def parse_dsn(dsn: str) -> ParsedDSN:
    """Split a ``postgresql://`` URL into what asyncpg gets, what messages show, and our options.

    Defaults follow libpq's environment variables so messages name the server asyncpg will reach.
    """
    try:
        parts = urlsplit(dsn)
        port = parts.port
    except ValueError as exc:
        raise StoreURLError(f"not a PostgreSQL URL: {exc}") from None
    if parts.scheme not in ("postgres", "postgresql"):
        raise StoreURLError(f"not a PostgreSQL URL (expected postgresql://...): scheme {parts.scheme!r}")
    params = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((value for key, value in params if key == "schema"), None)
    notify = next((value for key, value in params if key == "notify"), None)
    if notify is not None and notify.lower() not in ("on", "off"):
        raise StoreURLError(f"?notify= takes on or off, not {notify!r}")
    password = unquote(parts.password) if parts.password is not None else None
    password = next((value for key, value in params if key == "password"), password)
    query = tuple((key, value) for key, value in params if key not in (*_OWN_PARAMETERS, "password"))
    query_host = next((value for key, value in query if key == "host"), None)
    user = unquote(parts.username or "") or os.environ.get("PGUSER") or getpass.getuser()
    target = Target(
        user=user,
        password=password,
        host=parts.hostname or query_host or os.environ.get("PGHOST") or "localhost",
        port=port or _env_port(),
        database=unquote(parts.path.lstrip("/")) or os.environ.get("PGDATABASE") or user,
        query=query,
    )
    # asyncpg would send unknown parameters to the server as settings; drop ours.
    driver_dsn = urlunsplit(parts._replace(query=urlencode([(k, v) for k, v in params if k not in _OWN_PARAMETERS])))
    replica = next((value for key, value in params if key == "replica"), None)
    return ParsedDSN(
        driver_dsn,
        target,
        schema,
        None if notify is None else notify.lower() == "on",
        None if replica is None else _replica(driver_dsn, target, replica),
    )


def _replica(driver_dsn: str, target: Target, address: str) -> tuple[str, str, Target]:
    """The driver URL, address and target of the read replica at ``address`` (``HOST[:PORT]``,
    ``[IPv6]:PORT``): the primary's URL with its host and port replaced."""
    try:
        parts = urlsplit(f"//{address}")
        host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise StoreURLError(f"?replica= takes HOST[:PORT], not {address!r}: {exc}") from None
    if not host or parts.path or parts.query or parts.username is not None:
        raise StoreURLError(f"?replica= takes HOST[:PORT], not {address!r}")
    port = port or target.port
    driver = urlsplit(driver_dsn)
    userinfo = driver.netloc.rpartition("@")[0]
    shown_host = f"[{host}]" if ":" in host else host
    netloc = f"{userinfo}@{shown_host}:{port}" if userinfo else f"{shown_host}:{port}"
    replaced = Target(target.user, target.password, host, port, target.database, target.query)
    return urlunsplit(driver._replace(netloc=netloc)), f"{shown_host}:{port}", replaced


def _env_port() -> int:
    """libpq's default port: ``PGPORT`` when it is a number, else 5432."""
    port = os.environ.get("PGPORT", "")
    return int(port) if port.isdigit() else 5432


@contextlib.contextmanager
def translated(target: Target) -> Iterator[None]:
    """Turn driver exceptions into ``agenttui.errors``, with the password scrubbed from the text."""
    try:
        yield
    except AgentTuiError:
        raise
    except asyncpg.InvalidPasswordError:
        raise StoreConnectionError(
            f"password authentication failed for user {target.user} at {target.address}"
        ) from None
    except asyncpg.InvalidAuthorizationSpecificationError as exc:
        raise StoreConnectionError(
            f"PostgreSQL at {target.address} refused user {target.user}: {target.clean(str(exc))}"
        ) from None
    except asyncpg.InvalidCatalogNameError:
        raise StoreConnectionError(f"database {target.database} does not exist at {target.address}") from None
    except asyncpg.ReadOnlySQLTransactionError as exc:
        raise ReadOnlyStoreError(f"PostgreSQL at {target.address} is read-only: {target.clean(str(exc))}") from None
    except _UNREACHABLE as exc:
        reason = target.clean(str(exc)) or type(exc).__name__
        raise StoreConnectionError(f"cannot reach PostgreSQL at {target.address}: {reason}") from None
    except asyncpg.PostgresError as exc:
        raise StoreError(f"PostgreSQL error {exc.sqlstate}: {target.clean(str(exc))}") from None
    except asyncpg.ClientConfigurationError as exc:
        raise StoreURLError(f"bad PostgreSQL connection setting: {target.clean(str(exc))}") from None
    except (asyncpg.InterfaceError, asyncpg.InternalClientError) as exc:
        raise StoreError(f"PostgreSQL driver error: {target.clean(str(exc))}") from None
    except UnicodeEncodeError as exc:
        raise StoreError(f"text PostgreSQL cannot hold (not valid Unicode): {exc.reason}") from None
