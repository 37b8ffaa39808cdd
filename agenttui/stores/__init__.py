"""Journal stores: the contract, the in-memory, SQLite and PostgreSQL stores, and ``open_store``."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from agenttui.errors import StoreURLError
from agenttui.stores.base import Entry, Inserted, LeaseInfo, Store
from agenttui.stores.memory import MemStore

__all__ = ["Entry", "Inserted", "LeaseInfo", "MemStore", "Store", "open_store", "describe_url"]

_URL_FORMS = "a SQLite file path, sqlite:///abs/path.db, postgresql://user@host/db[?schema=s] or memory:"


async def open_store(url: str, *, read_only: bool = False, create: bool = True) -> Store:
    """Open the store a URL names.

    ``path/to/file.db`` and ``sqlite:///abs/path.db`` open SQLite; ``postgresql://`` (or
    ``postgres://``) opens PostgreSQL, with ``?schema=`` to pin a schema; ``memory:`` a fresh
    MemStore. ``read_only=True`` is for viewers: nothing is ever written. ``create=False`` is for
    writes to a journal that must exist already (no SQLite file, PostgreSQL schema or table
    is created). Raises
    ``StoreURLError`` for a URL of no known form, ``StoreConnectionError`` when the store
    cannot be opened.
    """
    url = url.strip()
    if not url:
        raise StoreURLError(f"no store given: expected {_URL_FORMS}")
    if url == "memory:":
        return MemStore(read_only=read_only)
    scheme = urlsplit(url).scheme.lower() if "://" in url else ""
    if scheme in ("postgresql", "postgres"):
        from agenttui.stores.postgres import PostgresStore

        dsn, schema = _split_schema(url)
        return await PostgresStore.open(dsn, schema=schema, read_only=read_only, create=create)
    if scheme == "sqlite":
        path = url[len("sqlite://") :]
        if not path.startswith("/"):
            raise StoreURLError(f"{url!r}: a sqlite:// URL needs an absolute path (sqlite:///abs/path.db)")
        return await _open_sqlite(Path(path), read_only, create)
    if scheme:
        raise StoreURLError(f"unknown store scheme {scheme!r}: expected {_URL_FORMS}")
    return await _open_sqlite(Path(url).expanduser(), read_only, create)


async def _open_sqlite(path: Path, read_only: bool, create: bool) -> Store:
    from agenttui.stores.sqlite import SQLiteStore

    return await SQLiteStore.open(path, read_only=read_only, create=create)


def _split_schema(url: str) -> tuple[str, str | None]:
    """The DSN without agenttui's own ``schema`` query parameter, and that schema."""
    parts = urlsplit(url)
    query = parse_qs(parts.query, keep_blank_values=True)
    schemas = query.pop("schema", [None])
    rest = "&".join(f"{k}={v}" for k, values in query.items() for v in values)
    return parts._replace(query=rest).geturl(), schemas[-1] or None


def describe_url(url: str) -> str:
    """A store URL safe to show: any password replaced by ``***``."""
    parts = urlsplit(url) if "://" in url else None
    if parts is None or parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()
