"""``text.language``: which language a text is written in, with candidates (langdetect).

langdetect weighs character n-grams only, so a short text can land on a language that does
not even write its letters (Chinese called Korean, Ukrainian called Bulgarian). The letters
first narrow the candidates to the languages that write them; langdetect chooses among those.
"""

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


# The languages above that write each script (its Unicode character-name prefix), the rest
# of them Latin. Han alone is Chinese or Japanese; kana make it Japanese and Hangul Korean
# (see ``_possible``).
_SCRIPT_LANGUAGES = {
    "CYRILLIC": frozenset({"bg", "mk", "ru", "uk"}),
    "GREEK": frozenset({"el"}),
    "HEBREW": frozenset({"he"}),
    "ARABIC": frozenset({"ar", "fa", "ur"}),
    "DEVANAGARI": frozenset({"hi", "mr", "ne"}),
    "BENGALI": frozenset({"bn"}),
    "GURMUKHI": frozenset({"pa"}),
    "GUJARATI": frozenset({"gu"}),
    "TAMIL": frozenset({"ta"}),
    "TELUGU": frozenset({"te"}),
    "KANNADA": frozenset({"kn"}),
    "MALAYALAM": frozenset({"ml"}),
    "THAI": frozenset({"th"}),
    "CJK": frozenset({"ja", "zh-cn", "zh-tw"}),
    "HIRAGANA": frozenset({"ja"}),
    "KATAKANA": frozenset({"ja"}),
    "HANGUL": frozenset({"ko"}),
}
_SCRIPT_LANGUAGES["LATIN"] = frozenset(LANGUAGE_NAMES).difference(*_SCRIPT_LANGUAGES.values())
_EAST_ASIAN = ("CJK", "HIRAGANA", "KATAKANA", "HANGUL")
# The Cyrillic alphabets, lowercase: a text holding a letter outside one (Ukrainian's і, ї, є,
# ґ; Russian's ё, ы, э; Macedonian's ј, љ, њ) is not in that language.
_CYRILLIC_ALPHABETS = {
    "bg": frozenset("абвгдежзийклмнопрстуфхцчшщъьюяѝ"),
    "mk": frozenset("абвгдѓежзѕијклљмнњопрстќуфхцчџш"),
    "ru": frozenset("абвгдеёжзийклмнопрстуфхцчшщъыьэюя"),
    "uk": frozenset("абвгґдеєжзиіїйклмнопрстуфхцчшщьюя"),
}

# Below these, langdetect's answer is often wrong (it calls "ok" Slovak with certainty).
_RELIABLE_PROBABILITY = 0.9
_RELIABLE_LETTERS = 15


def _letter_weight(text: str) -> int:
    # A Chinese or Japanese character carries about as much as a short word.
    return sum(
        3 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text if c.isalpha()
    )


def _script(char: str) -> str:
    # "CYRILLIC SMALL LETTER I", "KATAKANA-HIRAGANA PROLONGED SOUND MARK" -> "KATAKANA"
    return unicodedata.name(char, "").split(" ")[0].split("-")[0]


def _possible(text: str) -> frozenset[str] | None:
    """The languages whose writing the text's letters fit, or None when they do not narrow
    them (a script none of the languages writes). The main script is the one with the most
    letter weight, so a brand name in Latin letters leaves a Russian sentence Russian."""
    weights: dict[str, int] = {}
    for char in text:
        if char.isalpha():
            script = _script(char)
            weights[script] = weights.get(script, 0) + _letter_weight(char)
    if not weights:
        return None
    east_asian = sum(weights.get(script, 0) for script in _EAST_ASIAN)
    main = max(weights, key=lambda script: weights[script])
    if east_asian >= weights[main]:
        kana = weights.get("HIRAGANA", 0) + weights.get("KATAKANA", 0)
        hangul = weights.get("HANGUL", 0)
        if kana or hangul:
            return _SCRIPT_LANGUAGES["HANGUL" if hangul > kana else "HIRAGANA"]
        return _SCRIPT_LANGUAGES["CJK"]
    if main == "CYRILLIC":
        letters = {c for c in text.lower() if c.isalpha() and _script(c) == "CYRILLIC"}
        fitting = frozenset(lang for lang, abc in _CYRILLIC_ALPHABETS.items() if letters <= abc)
        # Letters of two alphabets (a quoted word): the letters cannot decide.
        return fitting or _SCRIPT_LANGUAGES["CYRILLIC"]
    return _SCRIPT_LANGUAGES.get(main)


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
        possible = _possible(inputs["text"])
        if possible is not None:
            detector.set_prior_map(dict.fromkeys(possible, 1.0))
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
            # Letters only one language writes (Hangul, Greek, Ukrainian's ї) decide alone.
            "reliable": possible is not None
            and len(possible) == 1
            or best["probability"] >= _RELIABLE_PROBABILITY
            and _letter_weight(inputs["text"]) >= _RELIABLE_LETTERS,
            "candidates": candidates,
        }
