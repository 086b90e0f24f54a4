"""hreflang codes and alternates checked: ISO 639-1 languages, ISO 3166-1 regions."""

from __future__ import annotations

import re

from engines.web._helpers import Issue, _is_absolute, _issue

# --- hreflang: shared validation ---------------------------------------------------------

_LANGUAGES = frozenset({
    "aa", "ab", "ae", "af", "ak", "am", "an", "ar", "as", "av", "ay", "az", "ba", "be", "bg", "bh",
    "bi", "bm", "bn", "bo", "br", "bs", "ca", "ce", "ch", "co", "cr", "cs", "cu", "cv", "cy", "da",
    "de", "dv", "dz", "ee", "el", "en", "eo", "es", "et", "eu", "fa", "ff", "fi", "fj", "fo", "fr",
    "fy", "ga", "gd", "gl", "gn", "gu", "gv", "ha", "he", "hi", "ho", "hr", "ht", "hu", "hy", "hz",
    "ia", "id", "ie", "ig", "ii", "ik", "io", "is", "it", "iu", "ja", "jv", "ka", "kg", "ki", "kj",
    "kk", "kl", "km", "kn", "ko", "kr", "ks", "ku", "kv", "kw", "ky", "la", "lb", "lg", "li", "ln",
    "lo", "lt", "lu", "lv", "mg", "mh", "mi", "mk", "ml", "mn", "mr", "ms", "mt", "my", "na", "nb",
    "nd", "ne", "ng", "nl", "nn", "no", "nr", "nv", "ny", "oc", "oj", "om", "or", "os", "pa", "pi",
    "pl", "ps", "pt", "qu", "rm", "rn", "ro", "ru", "rw", "sa", "sc", "sd", "se", "sg", "si", "sk",
    "sl", "sm", "sn", "so", "sq", "sr", "ss", "st", "su", "sv", "sw", "ta", "te", "tg", "th", "ti",
    "tk", "tl", "tn", "to", "tr", "ts", "tt", "tw", "ty", "ug", "uk", "ur", "uz", "ve", "vi", "vo",
    "wa", "wo", "xh", "yi", "yo", "za", "zh", "zu",
})  # fmt: skip
_REGIONS = frozenset({
    "ad", "ae", "af", "ag", "ai", "al", "am", "ao", "aq", "ar", "as", "at", "au", "aw", "ax", "az",
    "ba", "bb", "bd", "be", "bf", "bg", "bh", "bi", "bj", "bl", "bm", "bn", "bo", "bq", "br", "bs",
    "bt", "bv", "bw", "by", "bz", "ca", "cc", "cd", "cf", "cg", "ch", "ci", "ck", "cl", "cm", "cn",
    "co", "cr", "cu", "cv", "cw", "cx", "cy", "cz", "de", "dj", "dk", "dm", "do", "dz", "ec", "ee",
    "eg", "eh", "er", "es", "et", "fi", "fj", "fk", "fm", "fo", "fr", "ga", "gb", "gd", "ge", "gf",
    "gg", "gh", "gi", "gl", "gm", "gn", "gp", "gq", "gr", "gs", "gt", "gu", "gw", "gy", "hk", "hm",
    "hn", "hr", "ht", "hu", "id", "ie", "il", "im", "in", "io", "iq", "ir", "is", "it", "je", "jm",
    "jo", "jp", "ke", "kg", "kh", "ki", "km", "kn", "kp", "kr", "kw", "ky", "kz", "la", "lb", "lc",
    "li", "lk", "lr", "ls", "lt", "lu", "lv", "ly", "ma", "mc", "md", "me", "mf", "mg", "mh", "mk",
    "ml", "mm", "mn", "mo", "mp", "mq", "mr", "ms", "mt", "mu", "mv", "mw", "mx", "my", "mz", "na",
    "nc", "ne", "nf", "ng", "ni", "nl", "no", "np", "nr", "nu", "nz", "om", "pa", "pe", "pf", "pg",
    "ph", "pk", "pl", "pm", "pn", "pr", "ps", "pt", "pw", "py", "qa", "re", "ro", "rs", "ru", "rw",
    "sa", "sb", "sc", "sd", "se", "sg", "sh", "si", "sj", "sk", "sl", "sm", "sn", "so", "sr", "ss",
    "st", "sv", "sx", "sy", "sz", "tc", "td", "tf", "tg", "th", "tj", "tk", "tl", "tm", "tn", "to",
    "tr", "tt", "tv", "tw", "tz", "ua", "ug", "um", "us", "uy", "uz", "va", "vc", "ve", "vg", "vi",
    "vn", "vu", "wf", "ws", "ye", "yt", "za", "zm", "zw",
})  # fmt: skip
_HREFLANG_RE = re.compile(r"^([a-z]{2})(?:-([a-z]{4}))?(?:-([a-z]{2}))?$", re.I)


def _hreflang_problem(code: str) -> str | None:
    if code.lower() == "x-default":
        return None
    match = _HREFLANG_RE.match(code)
    if not match:
        return f'"{code}" is not language[-Script][-REGION], such as en, en-GB or zh-Hant-TW.'
    language, _, region = match.groups()
    if language.lower() not in _LANGUAGES:
        return f'"{language}" is not an ISO 639-1 language code.'
    if region and region.lower() not in _REGIONS:
        hint = " (use gb)" if region.lower() == "uk" else ""
        return f'"{region}" is not an ISO 3166-1 country code{hint}.'
    return None


def _hreflang_issues(pairs: list[tuple[str, str]], page_url: str) -> list[Issue]:
    issues = []
    seen: dict[str, str] = {}
    for code, href in pairs:
        problem = _hreflang_problem(code)
        if problem:
            issues.append(_issue("error", code, problem))
        if not _is_absolute(href):
            issues.append(_issue("error", code, f"{href or '(empty)'} must be an absolute URL."))
        key = code.lower()
        if key in seen and seen[key] != href:
            issues.append(_issue("error", code, f"{code} points to two URLs."))
        seen[key] = href
    if pairs and "x-default" not in seen:
        issues.append(
            _issue("notice", "x-default", "No x-default for visitors matching no language.")
        )
    if page_url and pairs and page_url not in {href for _, href in pairs}:
        issues.append(
            _issue("error", "self", "The page does not list itself among its alternates.")
        )
    return issues
