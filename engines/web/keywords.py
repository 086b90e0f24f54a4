"""``seo.keywords``: keyword extraction with YAKE."""

from __future__ import annotations

from typing import Any

from engines.base import Engine

# --- keyword extraction ------------------------------------------------------------------


class KeywordsEngine(Engine):
    name = "seo.keywords"
    requires = ("yake",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        import yake

        # An extractor keeps per-document caches, so one per call (construction is ~1 ms).
        extractor = yake.KeywordExtractor(
            lan=inputs["language"],
            n=inputs["max_ngram"],
            top=inputs["max_keywords"],
            dedup_lim=0.9,
        )
        found = extractor.extract_keywords(inputs["text"])
        return {
            "keywords": [
                {"keyword": keyword, "score": round(float(score), 6)} for keyword, score in found
            ]
        }
