"""Journal stores: the contract, the in-memory, SQLite and PostgreSQL stores, and ``open_store``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from agenttui.errors import StoreMissingError, StoreURLError
from agenttui.lazy import lazy_names
from agenttui.stores.base import Entry, Inserted, LeaseInfo, Store

if TYPE_CHECKING:
    from agenttui.config import NamedStore
    from agenttui.stores.memory import MemStore

__all__ = [
    "Entry",
    "Inserted",
    "LeaseInfo",
    "MemStore",
    "Store",
    "describe_url",
    "named_store",
    "open_store",
    "sqlite_path",
]

LAZY = {"memory": ("MemStore",)}
"""Each store's module is imported when it is opened, or its class first asked for: a viewer of
one SQLite file imports no other store (benchmarks/startup.py)."""

__getattr__ = lazy_names(__name__, LAZY)

_PASSWORD_PARAMETER = re.compile(r"((?:^|&)password=)[^&]*", re.IGNORECASE)

_URL_FORMS = "a SQLite file path, sqlite:///abs/path.db, postgresql://user@host/db[?schema=s] or memory:"


async def open_store(url: str, *, read_only: bool = False, create: bool = True) -> Store:
    """Open the store a URL names.

    ``path/to/file.db`` and ``sqlite:///abs/path.db`` open SQLite; ``postgresql://`` (or
    ``postgres://``) opens PostgreSQL, with ``?schema=`` to pin a schema and ``?notify=off`` for
    a writer no live viewer follows (see ``PostgresStore.open``); ``memory:`` a fresh
    MemStore. ``read_only=True`` is for viewers: nothing is ever written. ``create=False`` is for
    writes to a journal that must exist already (no SQLite file, PostgreSQL schema or table
    is created). Raises
    ``StoreURLError`` for a URL of no known form, ``StoreConnectionError`` when the store
    cannot be opened.
    """
    url = url.strip()
    if not url:
        raise StoreURLError(f"no store given: expected {_URL_FORMS}")
    if (named := named_store(url)) is not None:
        store = await _open_url(named.url, read_only, create, password=named.password())
        store.name = named.name
        return store
    try:
        return await _open_url(url, read_only, create)
    except StoreMissingError as missing:
        raise StoreMissingError(missing.message + names_hint(url)) from None


def names_hint(argument: str) -> str:
    """For a missing file whose name could be a store's: the names the config file does give
    ("" when it could not be one, or the file names none), to follow the error's text."""
    from agenttui.config import STORE_NAME, user_config

    if not STORE_NAME.fullmatch(argument) or not (names := sorted(user_config().stores)):
        return ""
    return f", nor a store the config file names (it names {', '.join(names)})"


def named_store(argument: str) -> NamedStore | None:
    """The store the user's config file names ``argument``, if it names one: only an argument
    that is a name (letters, digits, ``-``, ``_``: no path or URL is one) is looked up, and one
    that is also a file here is refused as ambiguous."""
    from agenttui.config import STORE_NAME, user_config

    if not STORE_NAME.fullmatch(argument):
        return None
    config = user_config()
    named = config.stores.get(argument)
    if named is not None and Path(argument).exists():
        raise StoreURLError(
            f"{argument!r} is both a file here and a store {config.path} names: write ./{argument} for the file"
        )
    return named


async def _open_url(url: str, read_only: bool, create: bool, *, password: str | None = None) -> Store:
    if url == "memory:":
        from agenttui.stores.memory import MemStore

        return MemStore(read_only=read_only)
    scheme = _scheme(url)
    if scheme in ("postgresql", "postgres"):
        from agenttui.stores.postgres import PostgresStore

        return await PostgresStore.open(url, read_only=read_only, create=create, password=password)
    path = sqlite_path(url)
    if path is None:
        raise StoreURLError(f"unknown store scheme {scheme!r}: expected {_URL_FORMS}")
    return await _open_sqlite(path, read_only, create)


def _scheme(url: str) -> str:
    """The URL's scheme, read without parsing the rest (a malformed host must not raise here:
    the store's own parser says what is wrong with it)."""
    return url.partition("://")[0].lower() if "://" in url else ""


def sqlite_path(url: str) -> Path | None:
    """The file a SQLite store URL (a path or ``sqlite:///abs/path.db``) names; None for a URL of
    another scheme. Raises ``StoreURLError`` for a ``sqlite://`` URL without an absolute path."""
    url = url.strip()
    scheme = _scheme(url)
    if scheme == "sqlite":
        path = url[len("sqlite://") :]
        if not path.startswith("/"):
            raise StoreURLError(f"{url!r}: a sqlite:// URL needs an absolute path (sqlite:///abs/path.db)")
        return Path(path)
    return None if scheme or url == "memory:" else Path(url).expanduser()


async def _open_sqlite(path: Path, read_only: bool, create: bool) -> Store:
    from agenttui.stores.sqlite import SQLiteStore

    return await SQLiteStore.open(path, read_only=read_only, create=create)


_USERINFO = re.compile(r"://[^/]*@")


def describe_url(url: str) -> str:
    """A store URL safe to show: any password (``user:pw@`` or ``?password=``) replaced by ``***``."""
    if "://" not in url:
        return url
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (a malformed URL raises here or above)
    except ValueError:
        return _USERINFO.sub("://***@", url)  # too broken to parse: mask all that could be a password
    if parts.password is not None:
        parts = parts._replace(netloc=parts.netloc.replace(f":{parts.password}@", ":***@", 1))
    return parts._replace(query=_PASSWORD_PARAMETER.sub(r"\1***", parts.query)).geturl()
