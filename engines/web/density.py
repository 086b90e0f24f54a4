"""``seo.density``: keyword density of one- to n-word phrases."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from engines import _text
from engines.base import Engine

# --- keyword density ---------------------------------------------------------------------

# Phrases never span a sentence or clause boundary.
_CLAUSE_SPLIT_RE = re.compile(r"[.!?;:()\[\]{}\"“”…\n]+")


class DensityEngine(Engine):
    name = "seo.density"

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        size = inputs["ngram"]
        stops = _text.stop_words(inputs["language"]) if inputs["exclude_stop_words"] else set()
        total = 0
        counts: Counter[str] = Counter()
        for clause in _CLAUSE_SPLIT_RE.split(inputs["text"].lower()):
            clause_words = [w.replace("’", "'") for w in _text.words(clause)]
            total += len(clause_words)
            for i in range(len(clause_words) - size + 1):
                gram = clause_words[i : i + size]
                if gram[0] in stops or gram[-1] in stops:
                    continue
                if all(w[0].isdigit() for w in gram):
                    continue
                counts[" ".join(gram)] += 1
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        return {
            "total_words": total,
            "unique_phrases": len(counts),
            "phrases": [
                {
                    "phrase": phrase,
                    "count": count,
                    "density": round(count * size / total * 100, 2),
                }
                for phrase, count in ranked[: inputs["top"]]
            ],
        }
