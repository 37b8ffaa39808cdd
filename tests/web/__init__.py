"""agenttui serve: its guards over HTTP, and the TUI in a real headless Chromium."""
