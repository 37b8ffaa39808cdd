"""Copying to the terminal's clipboard with OSC 52 (it works over SSH), and saying what was copied."""

from __future__ import annotations

from textual.dom import DOMNode

from agenttui.journal.describe import printable

#: Characters ``y`` copies at most: terminals drop an OSC 52 sequence much longer than about
#: 100,000 bytes (xterm's default is 100,000 after base64), silently.
COPY_LIMIT = 60_000


def copy_text(node: DOMNode, text: str, what: str, *, one_line: bool = False) -> bool:
    """Copy ``text`` (``what`` names it in the notice, e.g. "the run id"); whether it was copied.

    Text holding a control, bidi or invisible character is not copied: pasted into a shell or an
    editor it would not be what the screen shows (the screen shows those characters made visible).
    With ``one_line`` (a shell command) a line break counts as such a character too: pasted, it
    would run the command before the person has read it.
    Text past ``COPY_LIMIT`` is not copied either: the terminal would drop it without a word.
    """
    app = node.app
    if not text:
        app.notify(f"nothing to copy: {what} is empty", severity="warning")
        return False
    if printable(text, multiline=not one_line) != text:
        app.notify(f"not copied: {what} holds characters a terminal cannot show (they are shown escaped)",
                   severity="warning", markup=False)  # fmt: skip
        return False
    if len(text) > COPY_LIMIT:
        app.notify(f"not copied: {what} is {len(text):,} characters, more than a terminal takes at once "
                   "(agenttui show --json prints it)", severity="warning", markup=False)  # fmt: skip
        return False
    app.copy_to_clipboard(text)
    shown = text if len(text) <= 40 and "\n" not in text else f"{len(text):,} characters"
    app.notify(f"copied {what}: {shown} (OSC 52)", timeout=3, markup=False)
    return True
