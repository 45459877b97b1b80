"""The disk layer: memory keys stored as append-only patch logs."""

from __future__ import annotations

from .errors import (
    CorruptStoreError,
    InvalidKeyError,
    StoreError,
    StoreLockedError,
    UnsupportedSchemaError,
)
from .keys import key_dirname, validate_key
from .log_lines import SCHEMA
from .reference import SelfReference, default_data_dir
from .store import KeyInfo, MemoryKey

__all__ = [
    "SCHEMA",
    "CorruptStoreError",
    "InvalidKeyError",
    "KeyInfo",
    "MemoryKey",
    "SelfReference",
    "StoreError",
    "StoreLockedError",
    "UnsupportedSchemaError",
    "default_data_dir",
    "key_dirname",
    "validate_key",
]
