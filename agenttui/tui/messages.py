"""App-wide messages, named for what happened. A screen's or a widget's own messages nest in its class."""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.message import Message


@dataclass
class StoreOpened(Message, bubble=False):
    """The store is open (read-only) and the screens may read it. The app hears it first, then
    hands it to every screen on the stack (it does not bubble back up from them)."""

    url: str


@dataclass
class StoreReopened(Message, bubble=False):
    """The store was opened afresh (its file was replaced, or another store was switched to):
    every view must read it again. The app hears it first, then hands it to the runs screen."""

    def __init__(
        self, said: str = "the store's file was replaced: reloaded from the new file", *, warning: bool = True
    ) -> None:
        super().__init__()
        self.said = said
        """What the app tells the person of it (a warning, unless ``warning`` is False)."""
        self.warning = warning


#: The connection state while another process holds a lock on the store; views try again every
#: ``LOCK_RETRY_SECONDS`` (a reader's own wait is short, so quitting never waits behind it).
WAITING_FOR_LOCK = "waiting for a lock held by another process"
LOCK_RETRY_SECONDS = 1.0


@dataclass
class ConnectionChanged(Message):
    """The store connection went up, down, or is being re-established."""

    state: str
    """"connected", "reconnecting", "failed", or ``WAITING_FOR_LOCK``."""
    detail: str = ""


@dataclass
class StoreChanged(Message, bubble=False):
    """Records were committed by someone. ``run_ids`` when the feed knows which runs, else None.

    Coalesces: a burst of commits arrives as one message carrying every run it touched.
    """

    run_ids: set[str] | None = field(default=None)

    def can_replace(self, message: Message) -> bool:
        # Called on the older message with the newer pending one, which then supersedes it:
        # so the newer one inherits every run the older one named.
        if not isinstance(message, StoreChanged):
            return False
        if self.run_ids is not None and message.run_ids is not None:
            message.run_ids |= self.run_ids
        else:
            message.run_ids = None
        return True


@dataclass
class TailStateChanged(Message):
    """How live changes reach the app: "watching", "listening", "polling" or "off"."""

    state: str
