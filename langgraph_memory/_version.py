"""The package version, in one place (the root and the entry points read it)."""

__version__ = "0.1.0"
