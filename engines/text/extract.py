"""``text.extract``: e-mail addresses, URLs, phone numbers, hashtags, dates and acronyms."""

from __future__ import annotations

import datetime
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from engines.base import ChoiceEngine
from engines.text._helpers import Match, _ranked, load_data

COMMON_ACRONYMS = frozenset(load_data("common_acronyms.txt"))

_EMAIL_RE = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,62}[A-Za-z0-9_%+-])?"
    r"@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])"
)
# "jane [at] example [dot] com" and "jane(at)example(dot)com".
_OBFUSCATED_AT_RE = re.compile(r"\s*[\[({]\s*at\s*[\])}]\s*", re.IGNORECASE)
_OBFUSCATED_DOT_RE = re.compile(r"\s*[\[({]\s*dot\s*[\])}]\s*", re.IGNORECASE)
_URL_RE = re.compile(r"(?<![\w@/])(?:https?://|ftp://|www\.)[^\s<>\"'`]+", re.IGNORECASE)
_URL_TRAILING = ".,;:!?'\"”’…"
_CLOSERS = {")": "(", "]": "[", "}": "{"}


def _tally(items: list[tuple[str, str]]) -> tuple[list[Match], list[Match]]:
    """(item, domain) pairs -> items with counts in first-seen order, and domains by count."""
    counts = Counter(item for item, _ in items)
    domains = dict(items)
    listed = [
        {"value": item, "count": counts[item], "domain": domains[item]}
        for item in dict.fromkeys(item for item, _ in items)
    ]
    by_domain = Counter(domain for _, domain in items)
    return listed, [{"domain": d, "count": c} for d, c in _ranked(by_domain)]


def _emails(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    if inputs["deobfuscate"]:
        text = _OBFUSCATED_DOT_RE.sub(".", _OBFUSCATED_AT_RE.sub("@", text))
    found = []
    for match in _EMAIL_RE.finditer(text):
        local, domain = match.group().rsplit("@", 1)
        domain = domain.lower()
        email = f"{local.lower() if inputs['lowercase'] else local}@{domain}"
        found.append((email, domain))
    emails, domains = _tally(found)
    return {
        "count": len(emails),
        "emails": [
            {"email": e["value"], "count": e["count"], "domain": e["domain"]} for e in emails
        ],
        "domains": domains,
    }


def _trim_url(url: str) -> str:
    while url:
        last = url[-1]
        unbalanced = last in _CLOSERS and url.count(last) > url.count(_CLOSERS[last])
        if last not in _URL_TRAILING and not unbalanced:
            break
        url = url[:-1]
    return url


def _urls(inputs: dict[str, Any]) -> dict[str, Any]:
    from urllib.parse import urlsplit

    found = []
    for match in _URL_RE.finditer(inputs["text"]):
        url = _trim_url(match.group())
        full = url if "://" in url else f"http://{url}"
        try:
            host = (urlsplit(full).hostname or "").removeprefix("www.")
        except ValueError:
            continue
        if "." not in host:
            continue
        found.append((url, host))
    urls, domains = _tally(found)
    return {
        "count": len(urls),
        "urls": [{"url": u["value"], "count": u["count"], "domain": u["domain"]} for u in urls],
        "domains": domains,
    }


# Calling code and trunk prefix (dialled before national numbers) of the supported countries.
PHONE_COUNTRIES = {
    "US": ("1", "1"), "CA": ("1", "1"), "GB": ("44", "0"), "IE": ("353", "0"),
    "AU": ("61", "0"), "NZ": ("64", "0"), "DE": ("49", "0"), "FR": ("33", "0"),
    "ES": ("34", ""), "IT": ("39", ""), "NL": ("31", "0"), "BE": ("32", "0"),
    "CH": ("41", "0"), "AT": ("43", "0"), "SE": ("46", "0"), "PT": ("351", ""),
    "IN": ("91", "0"), "BR": ("55", "0"), "MX": ("52", ""), "JP": ("81", "0"),
    "SG": ("65", ""), "ZA": ("27", "0"),
}  # fmt: skip
_PHONE_RE = re.compile(r"(?<![\w+.,/-])(?:\+|\b|(?=\())\(?\d[\d().\t -]{5,22}\d(?![\w-]|[.,]\d)")
_DATE_LIKE_RE = re.compile(r"^\d{4}[-./]\d{1,2}[-./]\d{1,2}$|^\d{1,2}[-./]\d{1,2}[-./]\d{2,4}$")


def _e164(raw: str, digits: str, country: str) -> str | None:
    code, trunk = PHONE_COUNTRIES[country]
    if raw.startswith("+"):
        number = digits
    elif digits.startswith("00"):
        number = digits[2:]
    elif code == "1":
        if len(digits) == 10:
            number = "1" + digits
        elif len(digits) == 11 and digits.startswith("1"):
            number = digits
        else:
            return None
    elif trunk:
        if not digits.startswith(trunk):
            return None
        number = code + digits[len(trunk) :]
    else:
        number = code + digits
    return f"+{number}" if 8 <= len(number) <= 15 else None


def _phones(inputs: dict[str, Any]) -> dict[str, Any]:
    numbers = []
    for match in _PHONE_RE.finditer(inputs["text"]):
        raw = match.group().strip()
        digits = re.sub(r"\D", "", raw)
        has_separator = bool(re.search(r"[\s().-]", raw))
        if not 7 <= len(digits) <= 15 or _DATE_LIKE_RE.match(raw):
            continue
        if raw.count("(") != raw.count(")") or not (has_separator or raw.startswith("+")):
            continue  # a bare run of digits is more likely an order or account number
        numbers.append(
            {
                "number": raw,
                "e164": _e164(raw, digits, inputs["default_country"]),
                "start": match.start(),
                "end": match.start() + len(raw),
            }
        )
    return {"count": len(numbers), "numbers": numbers}


_HASHTAG_RE = re.compile(r"(?<![\w&#/])#(\w*[^\W\d_]\w*)")
_MENTION_RE = re.compile(r"(?<![\w@./])@([A-Za-z0-9_](?:[A-Za-z0-9_.]*[A-Za-z0-9_])?)(?![\w@])")
_CASHTAG_RE = re.compile(r"(?<![\w$])\$([A-Za-z]{1,6}(?:\.[A-Za-z]{1,2})?)(?![\w])")


def _grouped(values: list[str], key: Callable[[str], str]) -> list[Match]:
    """Count values by ``key``, keeping each group's first spelling; most frequent first."""
    counts: Counter[str] = Counter()
    first: dict[str, str] = {}
    for value in values:
        counts[key(value)] += 1
        first.setdefault(key(value), value)
    order = {k: i for i, k in enumerate(first)}
    ranked = sorted(counts, key=lambda k: (-counts[k], order[k]))
    return [{"value": first[k], "count": counts[k]} for k in ranked]


def _social_tags(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    hashtags = _grouped(["#" + m for m in _HASHTAG_RE.findall(text)], str.lower)
    mentions = _grouped(["@" + m for m in _MENTION_RE.findall(text)], str.lower)
    cashtags = _grouped(["$" + m.upper() for m in _CASHTAG_RE.findall(text)], str.upper)
    return {
        "hashtags": [{"tag": h["value"], "count": h["count"]} for h in hashtags],
        "mentions": [{"handle": m["value"], "count": m["count"]} for m in mentions],
        "cashtags": [{"symbol": c["value"], "count": c["count"]} for c in cashtags],
    }


_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
            ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
            ("september", "sept", "sep"), ("october", "oct"), ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}  # fmt: skip
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_DATE_RE = re.compile(
    rf"\b(?:"
    rf"(?P<iso>(?P<iy>\d{{4}})-(?P<im>\d{{1,2}})-(?P<id>\d{{1,2}}))"
    rf"|(?P<num>(?P<n1>\d{{1,2}})(?P<sep>[/.])(?P<n2>\d{{1,2}})(?P=sep)(?P<ny>\d{{4}}|\d{{2}}))"
    rf"|(?P<mdy>(?P<m1>{_MONTH})\s+(?P<d1>{_DAY}),?\s+(?P<y1>\d{{4}}))"
    rf"|(?P<dmy>(?P<d2>{_DAY})\s+(?:of\s+)?(?P<m2>{_MONTH}),?\s+(?P<y2>\d{{4}}))"
    rf"|(?P<my>(?P<m3>{_MONTH})\s+(?P<y3>\d{{4}}))"
    rf")(?![\w/-]|\.\d)",
    re.IGNORECASE,
)


def _year(text: str) -> int:
    year = int(text)
    if len(text) == 2:  # the POSIX pivot: 69 -> 2069, 70 -> 1970
        year += 2000 if year < 70 else 1900
    return year


def _date_parts(found: re.Match[str], day_first: bool) -> tuple[int, int, int | None]:
    group = found.group
    if group("iso"):
        return int(group("iy")), int(group("im")), int(group("id"))
    if group("num"):
        first, second = int(group("n1")), int(group("n2"))
        day, month = (first, second) if day_first else (second, first)
        return _year(group("ny")), month, day
    if group("mdy"):
        return int(group("y1")), _month(group("m1")), int(re.sub(r"\D", "", group("d1")))
    if group("dmy"):
        return int(group("y2")), _month(group("m2")), int(re.sub(r"\D", "", group("d2")))
    return int(group("y3")), _month(group("m3")), None


def _month(text: str) -> int:
    return _MONTHS[text.rstrip(".").lower()]


def _dates(inputs: dict[str, Any]) -> dict[str, Any]:
    dates = []
    for found in _DATE_RE.finditer(inputs["text"]):
        year, month, day = _date_parts(found, inputs["day_first"])
        try:
            value = datetime.date(year, month, day or 1)
        except ValueError:
            continue  # 31/02/2024 or 13/13/2024: not a date
        dates.append(
            {
                "text": found.group(),
                "start": found.start(),
                "end": found.end(),
                "date": value.isoformat() if day else value.isoformat()[:7],
                "precision": "day" if day else "month",
            }
        )
    ordered = sorted(d["date"] for d in dates)
    return {
        "count": len(dates),
        "earliest": ordered[0] if ordered else None,
        "latest": ordered[-1] if ordered else None,
        "dates": dates,
    }


_ACRONYM_RE = re.compile(r"\b([A-Z][A-Z0-9&]*[A-Z][A-Z0-9&]*)(s?)\b")
_PAREN_RE = re.compile(r"\(([^()]{1,120})\)")
_MINOR_WORDS = frozenset({"of", "and", "the", "for", "in", "on", "to", "a", "an", "&", "de"})


def _initials(words: list[str], camel: bool) -> str:
    """Initials of the major words; parts of "Wi-Fi" count, and with ``camel`` of "JavaScript"."""
    letters = []
    for word in words:
        if word.lower() in _MINOR_WORDS:
            continue
        for part in re.split(r"[-/]", word):
            pieces = re.findall(r"[A-Z]?[^A-Z]*", part) if camel else [part]
            letters.extend(piece[0] for piece in pieces if piece)
    return "".join(letters).upper()


def _spells(words: list[str], acronym: str) -> bool:
    target = acronym.replace("&", "")
    return _initials(words, camel=False) == target or _initials(words, camel=True) == target


def _expansion_before(text: str, paren_start: int, acronym: str) -> str | None:
    """The words right before "(ACRONYM)" whose initials spell it, if any."""
    before = re.findall(r"[\w’'&/-]+", text[max(0, paren_start - 200) : paren_start])
    for size in range(1, min(len(acronym) * 2 + 2, len(before)) + 1):
        words = before[-size:]
        if words[0].lower() in _MINOR_WORDS:
            continue
        if _spells(words, acronym):
            return " ".join(words)
    return None


def _definitions(text: str) -> dict[str, tuple[str, int]]:
    """Acronym -> (expansion, offset) for "Long Form (LF)" and "LF (long form)"."""
    found: dict[str, tuple[str, int]] = {}
    for paren in _PAREN_RE.finditer(text):
        inside = paren.group(1).strip()
        if _ACRONYM_RE.fullmatch(inside):
            acronym = (
                inside.rstrip("s") if inside.endswith("s") and inside[:-1].isupper() else inside
            )
            expansion = _expansion_before(text, paren.start(), acronym)
            if expansion:
                found.setdefault(acronym, (expansion, paren.start() - len(expansion) - 1))
            continue
        before = re.search(r"\b([A-Z][A-Z0-9&]*[A-Z][A-Z0-9&]*)s?\s*$", text[: paren.start()])
        words = inside.split()
        if before and _spells(words, before.group(1)):
            found.setdefault(before.group(1), (inside, before.start()))
    return found


def _acronyms(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["text"]
    definitions = _definitions(text)
    uses: dict[str, list[int]] = {}
    for found in _ACRONYM_RE.finditer(text):
        uses.setdefault(found.group(1), []).append(found.start())
    listed = []
    for acronym, offsets in uses.items():
        expansion, defined_at = definitions.get(acronym, (None, None))
        if expansion is None and inputs["ignore_common"] and acronym in COMMON_ACRONYMS:
            continue
        if expansion is None:
            status = "undefined"
        elif offsets[0] < defined_at:
            status = "defined_late"
        else:
            status = "defined"
        listed.append(
            {
                "acronym": acronym,
                "count": len(offsets),
                "first_use": offsets[0],
                "expansion": expansion,
                "defined_at": defined_at,
                "status": status,
            }
        )
    return {
        "count": len(listed),
        "undefined": [a["acronym"] for a in listed if a["status"] == "undefined"],
        "defined_late": [a["acronym"] for a in listed if a["status"] == "defined_late"],
        "acronyms": listed,
    }


class ExtractEngine(ChoiceEngine):
    name = "text.extract"
    choice = "kind"
    jobs = {
        "emails": _emails,
        "urls": _urls,
        "phones": _phones,
        "social_tags": _social_tags,
        "dates": _dates,
        "acronyms": _acronyms,
    }
