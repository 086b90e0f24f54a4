"""``text.language``: which language a text is written in, with candidates (langdetect)."""

from __future__ import annotations

import unicodedata
from typing import Any

from engines.base import Engine, EngineError, load_once
from engines.text._helpers import _round

LANGUAGE_NAMES = {
    "af": "Afrikaans", "ar": "Arabic", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan",
    "cs": "Czech", "cy": "Welsh", "da": "Danish", "de": "German", "el": "Greek",
    "en": "English", "es": "Spanish", "et": "Estonian", "fa": "Persian", "fi": "Finnish",
    "fr": "French", "gu": "Gujarati", "he": "Hebrew", "hi": "Hindi", "hr": "Croatian",
    "hu": "Hungarian", "id": "Indonesian", "it": "Italian", "ja": "Japanese", "kn": "Kannada",
    "ko": "Korean", "lt": "Lithuanian", "lv": "Latvian", "mk": "Macedonian", "ml": "Malayalam",
    "mr": "Marathi", "ne": "Nepali", "nl": "Dutch", "no": "Norwegian", "pa": "Punjabi",
    "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sk": "Slovak",
    "sl": "Slovenian", "so": "Somali", "sq": "Albanian", "sv": "Swedish", "sw": "Swahili",
    "ta": "Tamil", "te": "Telugu", "th": "Thai", "tl": "Tagalog", "tr": "Turkish",
    "uk": "Ukrainian", "ur": "Urdu", "vi": "Vietnamese", "zh-cn": "Chinese (Simplified)",
    "zh-tw": "Chinese (Traditional)",
}  # fmt: skip


# Below these, langdetect's answer is often wrong (it calls "ok" Slovak with certainty).
_RELIABLE_PROBABILITY = 0.9
_RELIABLE_LETTERS = 15


def _letter_weight(text: str) -> int:
    # A Chinese or Japanese character carries about as much as a short word.
    return sum(
        3 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text if c.isalpha()
    )


@load_once
def _language_detector_factory() -> Any:
    from langdetect import DetectorFactory
    from langdetect.detector_factory import init_factory

    # langdetect samples randomly: without a fixed seed one text gets different answers.
    DetectorFactory.seed = 0
    init_factory()
    from langdetect import detector_factory

    return detector_factory._factory


class LanguageEngine(Engine):
    name = "text.language"
    requires = ("langdetect",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        from langdetect.lang_detect_exception import LangDetectException

        factory = _language_detector_factory()
        detector = factory.create()
        detector.append(inputs["text"])
        try:
            found = detector.get_probabilities()
        except LangDetectException:
            raise EngineError("The text has no letters to detect a language from.") from None
        candidates = [
            {
                "language": c.lang,
                "name": LANGUAGE_NAMES.get(c.lang, c.lang),
                "probability": _round(c.prob, 4),
            }
            for c in found[: inputs["max_candidates"]]
        ]
        best = candidates[0]
        return {
            "language": best["language"],
            "name": best["name"],
            "probability": best["probability"],
            "reliable": best["probability"] >= _RELIABLE_PROBABILITY
            and _letter_weight(inputs["text"]) >= _RELIABLE_LETTERS,
            "candidates": candidates,
        }
