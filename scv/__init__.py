"""SCV: a headless agent runtime whose every tool call runs in its own supervised worker."""

__version__ = "0.1.0"
