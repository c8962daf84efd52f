"""One module per top-level command; each exposes `command`."""
