"""PostgreSQL: the shared journal store, for many processes and machines.

``store`` holds ``PostgresStore``; ``schema`` its tables, DDL and statements; ``notifications``
the live tail; ``connection`` what a URL names and how driver errors read.
"""

from agenttui.stores.postgres.notifications import NOTIFY_PAYLOAD_LIMIT, Notifications
from agenttui.stores.postgres.schema import SCHEMA_VERSION, Layout
from agenttui.stores.postgres.store import POOL_SIZE, PostgresStore

__all__ = ["NOTIFY_PAYLOAD_LIMIT", "POOL_SIZE", "SCHEMA_VERSION", "Layout", "Notifications", "PostgresStore"]
