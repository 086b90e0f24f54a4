"""Hybrid retrieval over the assistant's documents (services/assistant/documents.py).

Two rankings of every document, fused by reciprocal rank (RRF: a document scores
``1/(RRF_K + rank)`` in each ranking it is in): BM25 over stemmed words (``bm25s`` with
PyStemmer's English stemmer) and the cosine of WordLlama embeddings (engines/text/embedder.py,
weights from the wheel). A question naming a tool or workflow exactly (its slug or its name,
or a slug written inside the question) puts that document first.

Words of the question the documents never use are first replaced by the closest word they
do use (difflib, for typos: "seperate" → "separate"); the evidence of an answer
(``Result.evidence``) is what the threshold of services/assistant/answers.py compares.

The index is built once per process per set of documents (``index_for``): about 0.3 s for
some 600 documents; ``release_id`` is a hash of the documents.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import re
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engines.text import embedder
from services.assistant.documents import Document

# numpy (and bm25s) are imported where they are used: at module level numpy added a quarter
# of a second to every process's start, before anyone asked anything.
if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

RRF_K = 60
# Each ranking's weight in the fusion (tuned on tests/services/assistant_golden.yaml).
BM25_WEIGHT = 1.0
DENSE_WEIGHT = 1.0
# A question is read up to this many characters (longer ones are refused before this).
MAX_QUERY_CHARS = 1000
_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


@dataclass(frozen=True)
class Hit:
    document: Document
    score: float  # fused (RRF); an exact match scores above every other
    bm25: float
    cosine: float
    exact: bool = False


@dataclass(frozen=True)
class Result:
    hits: list[Hit]
    # How strongly the best documents match: the best BM25 score, the best cosine, and
    # whether a document was named exactly.
    best_bm25: float = 0.0
    best_cosine: float = 0.0
    exact: bool = False
    corrected: str = ""  # the question as searched (typos replaced)

    @property
    def documents(self) -> list[Document]:
        return [hit.document for hit in self.hits]


@dataclass
class Index:
    documents: list[Document]
    release_id: str
    embedder_name: str | None  # None: the embedder could not be loaded (BM25 alone)
    _bm25: object = field(repr=False)
    _stemmer: object = field(repr=False)
    _vectors: np.ndarray | None = field(repr=False)
    _vocabulary: list[str] = field(repr=False)
    _known: frozenset[str] = field(repr=False)
    _keys: dict[str, int] = field(repr=False)

    def __len__(self) -> int:
        return len(self.documents)

    def search(
        self,
        query: str,
        *,
        limit: int = 8,
        keep: Callable[[Document], bool] | None = None,
    ) -> Result:
        """The best ``limit`` documents for ``query`` among those ``keep`` accepts."""
        import numpy as np

        query = query[:MAX_QUERY_CHARS]
        words = _words(query)
        corrected = [self._correct(word) for word in words]
        searched = " ".join(corrected)
        bm25 = self._bm25_scores(corrected)
        cosine = self._cosines(searched) if searched else np.zeros(len(self.documents))
        exact = self._exact(query, words)
        allowed = np.ones(len(self.documents), dtype=bool)
        if keep is not None:
            allowed = np.array([keep(document) for document in self.documents], dtype=bool)
        fused = np.zeros(len(self.documents))
        for scores, floor, weight in ((bm25, 0.0, BM25_WEIGHT), (cosine, -1.0, DENSE_WEIGHT)):
            order = [i for i in np.argsort(-scores, kind="stable") if allowed[i]]
            for rank, i in enumerate(order, start=1):
                if scores[i] > floor:
                    fused[i] += weight / (RRF_K + rank)
        for i in exact:
            fused[i] += 10.0  # above any fused score
        candidates = [i for i in np.argsort(-fused, kind="stable") if allowed[i] and fused[i] > 0]
        hits = [
            Hit(
                self.documents[i],
                float(fused[i]),
                float(bm25[i]),
                float(cosine[i]),
                exact=i in exact,
            )
            for i in candidates[:limit]
        ]
        kept = [i for i in range(len(self.documents)) if allowed[i]]
        return Result(
            hits,
            best_bm25=float(max((bm25[i] for i in kept), default=0.0)),
            best_cosine=float(max((cosine[i] for i in kept), default=0.0)),
            exact=any(allowed[i] for i in exact),
            corrected=searched,
        )

    # --- the parts ------------------------------------------------------------------------

    def _correct(self, word: str) -> str:
        if word in self._known or len(word) < 4 or any(ch.isdigit() for ch in word):
            return word
        close = difflib.get_close_matches(word, self._vocabulary, n=1, cutoff=0.8)
        return close[0] if close else word

    def _bm25_scores(self, words: Sequence[str]) -> np.ndarray:
        import numpy as np

        tokens = _tokenize([" ".join(words)], self._stemmer)[0]
        known = [token for token in tokens if token in self._bm25.vocab_dict]
        if not known:
            return np.zeros(len(self.documents))
        return np.asarray(self._bm25.get_scores(known), dtype=float)

    def _cosines(self, text: str) -> np.ndarray:
        import numpy as np

        if self._vectors is None:
            return np.zeros(len(self.documents))
        vector = embedder.embed([text])[0]
        return self._vectors @ vector

    def _exact(self, query: str, words: list[str]) -> list[int]:
        """Documents the question names: the whole question is a slug or a name, or a
        hyphenated slug stands in it."""
        whole = " ".join(_words(query.replace("-", " ")))
        found = []
        for candidate in (whole, "-".join(whole.split())):
            if candidate in self._keys:
                found.append(self._keys[candidate])
        for word in words:
            if "-" in word and word in self._keys and self._keys[word] not in found:
                found.append(self._keys[word])
        return found


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _tokenize(texts: list[str], stemmer) -> list[list[str]]:
    import bm25s

    return bm25s.tokenize(
        texts, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
    )


def release_id(documents: Iterable[Document]) -> str:
    digest = hashlib.sha256()
    for document in documents:
        for part in (document.id, document.title, document.url, document.line, document.text):
            digest.update(part.encode())
            digest.update(b"\0")
    return digest.hexdigest()[:16]


def build_index(documents: list[Document]) -> Index:
    """BM25 and the embeddings of ``documents``; without the embedder, BM25 alone."""
    import bm25s
    import numpy as np
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    texts = [document.text for document in documents]
    bm25 = bm25s.BM25()
    bm25.index(_tokenize(texts, stemmer), show_progress=False)
    vectors, name = None, None
    try:
        vectors = np.asarray(embedder.embed(texts), dtype=float)
        name = embedder.NAME
    except embedder.EmbedderUnavailable:
        log.warning("The assistant's embedder is unavailable: searching with BM25 alone")
    vocabulary = sorted({word for text in texts for word in _words(text.replace("-", " "))})
    keys: dict[str, int] = {}
    for i, document in enumerate(documents):
        for key in document.keys:
            keys.setdefault(" ".join(_words(key.replace("-", " "))), i)
            keys.setdefault(key, i)
    return Index(
        documents=documents,
        release_id=release_id(documents),
        embedder_name=name,
        _bm25=bm25,
        _stemmer=stemmer,
        _vectors=vectors,
        _vocabulary=vocabulary,
        _known=frozenset(vocabulary),
        _keys=keys,
    )


_indexes: dict[str, Index] = {}
_lock = threading.Lock()


def index_for(documents: Callable[[], list[Document]], key: str) -> Index:
    """The index for ``key`` (the identity of the documents' sources), built on first use
    from ``documents()`` and kept for the process."""
    found = _indexes.get(key)
    if found is not None:
        return found
    with _lock:
        found = _indexes.get(key)
        if found is None:
            found = _indexes[key] = build_index(documents())
    return found


def forget() -> None:
    """Build the indexes again on next use (tests)."""
    with _lock:
        _indexes.clear()
