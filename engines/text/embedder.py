"""Dense sentence embeddings offline: WordLlama's ``l2_supercat`` (256 dimensions), whose
weights and tokenizer ship inside the ``wordllama`` wheel.

It is loaded from the installed package alone, with downloads disabled: WordLlama looks for
its weights beside its code and for the tokenizer in ``<cache_dir>/tokenizers``, so the
package's own folder is given as the cache (its ``tokenizers`` folder holds the file). A
missing file raises rather than fetching anything. Loaded once per process (about 0.5 s).
"""

from __future__ import annotations

import threading
from functools import cache
from pathlib import Path
from typing import Any

MODEL = "l2_supercat"
DIMENSIONS = 256
NAME = f"wordllama {MODEL} {DIMENSIONS}"

_lock = threading.Lock()


class EmbedderUnavailable(RuntimeError):
    """wordllama is not installed, or its bundled files are missing."""


@cache
def _model() -> Any:
    try:
        import wordllama
        from wordllama import WordLlama
    except ImportError as error:  # pragma: no cover - a deployment without it
        raise EmbedderUnavailable("wordllama is not installed") from error
    package = Path(wordllama.__file__).resolve().parent
    try:
        return WordLlama.load(
            config=MODEL, dim=DIMENSIONS, cache_dir=package, disable_download=True
        )
    except (FileNotFoundError, OSError, ValueError) as error:
        raise EmbedderUnavailable("wordllama's bundled weights could not be loaded") from error


def load() -> Any:
    """The model, loaded on first use (thread-safe); EmbedderUnavailable if it cannot be."""
    with _lock:
        return _model()


def available() -> bool:
    try:
        load()
    except EmbedderUnavailable:
        return False
    return True


def embed(texts: list[str]) -> Any:
    """Unit-length vectors (a numpy array, one row per text)."""
    return load().embed(texts, norm=True)
