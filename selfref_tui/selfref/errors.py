"""Store errors, each carrying a one-line message a person can act on.

They share one base class so a front end can catch every store problem with
one ``except`` and show ``str(exc)`` as it is.
"""

from __future__ import annotations


class StoreError(Exception):
    """Something about the memory-key store on disk needs the person's attention."""


class InvalidKeyError(StoreError, ValueError):
    """A memory key name that cannot be mapped safely to a directory."""


class StoreLockedError(StoreError):
    """Another process (or another open in this one) is writing the key."""


class CorruptStoreError(StoreError):
    """A stored file does not parse; only this key is affected."""


class UnsupportedSchemaError(StoreError):
    """The key was written by a newer selfref-tui; refusing to touch it."""
