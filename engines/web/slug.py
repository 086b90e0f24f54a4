"""``seo.slug``: readable ASCII URL slugs."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from engines.base import Engine, EngineError

# --- URL slug ----------------------------------------------------------------------------

# Letters NFKD does not decompose into ASCII.
_TRANSLITERATIONS = str.maketrans(
    {"ß": "ss", "æ": "ae", "Æ": "AE", "ø": "o", "Ø": "O", "œ": "oe", "Œ": "OE", "đ": "d",
     "Đ": "D", "ł": "l", "Ł": "L", "þ": "th", "Þ": "TH", "ð": "d", "Ð": "D", "ı": "i"}
)  # fmt: skip
# Short function words that add length to a URL and nothing to its meaning.
_SLUG_STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "how", "in", "into",
    "is", "it", "of", "on", "or", "so", "than", "that", "the", "then", "this", "to", "was",
    "what", "when", "where", "which", "who", "why", "will", "with", "your", "you",
})  # fmt: skip


class SlugEngine(Engine):
    name = "seo.slug"

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        text = inputs["text"].translate(_TRANSLITERATIONS).replace("&", " and ")
        ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
        tokens = re.findall(r"[a-z0-9]+", ascii_text.lower().replace("'", ""))
        if not tokens:
            raise EngineError("The text has no letters or digits that can go in a URL slug.")
        removed: list[str] = []
        if inputs["remove_stop_words"]:
            kept = [t for t in tokens if t not in _SLUG_STOP_WORDS]
            if kept:
                removed = [t for t in tokens if t in _SLUG_STOP_WORDS]
                tokens = kept
        separator = inputs["separator"]
        slug = ""
        for token in tokens:
            candidate = f"{slug}{separator}{token}" if slug else token
            if len(candidate) > inputs["max_length"]:
                break
            slug = candidate
        if not slug:  # a first word longer than the limit: cut it
            slug = tokens[0][: inputs["max_length"]]
        return {"slug": slug, "length": len(slug), "removed_words": removed}
