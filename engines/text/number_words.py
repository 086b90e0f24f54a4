"""Numbers to words, a job of ``text.transform``."""

from __future__ import annotations

from typing import Any

from engines.base import EngineError
from engines.text._helpers import _capitalize

_ONES = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
)  # fmt: skip
_TENS = (
    "_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
)  # fmt: skip
_SCALES = (
    "", "thousand", "million", "billion", "trillion", "quadrillion", "quintillion",
    "sextillion", "septillion", "octillion", "nonillion", "decillion",
)  # fmt: skip
_ORDINAL_ENDINGS = {
    "one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
    "nine": "ninth", "twelve": "twelfth",
}  # fmt: skip
# Currency: major unit (singular, plural), minor unit (singular, plural) or None.
CURRENCIES = {
    "USD": (("dollar", "dollars"), ("cent", "cents")),
    "CAD": (("Canadian dollar", "Canadian dollars"), ("cent", "cents")),
    "AUD": (("Australian dollar", "Australian dollars"), ("cent", "cents")),
    "EUR": (("euro", "euros"), ("cent", "cents")),
    "GBP": (("pound", "pounds"), ("penny", "pence")),
    "CHF": (("franc", "francs"), ("centime", "centimes")),
    "INR": (("rupee", "rupees"), ("paisa", "paise")),
    "JPY": (("yen", "yen"), None),
}


def _under_thousand(number: int, british_and: bool) -> str:
    hundreds, rest = divmod(number, 100)
    words = []
    if hundreds:
        words.append(f"{_ONES[hundreds]} hundred")
    if rest:
        if hundreds and british_and:
            words.append("and")
        if rest < 20:
            words.append(_ONES[rest])
        else:
            tens, ones = divmod(rest, 10)
            words.append(_TENS[tens] + (f"-{_ONES[ones]}" if ones else ""))
    return " ".join(words)


def _cardinal(number: int, british_and: bool = False) -> str:
    if number == 0:
        return "zero"
    groups = []
    while number:
        number, group = divmod(number, 1000)
        groups.append(group)
    words = []
    for scale in range(len(groups) - 1, -1, -1):
        group = groups[scale]
        if not group:
            continue
        # British usage: "one thousand and five".
        if british_and and scale == 0 and group < 100 and words:
            words.append("and")
        words.append(_under_thousand(group, british_and))
        if _SCALES[scale]:
            words.append(_SCALES[scale])
    return " ".join(words)


def _ordinal(number: int, british_and: bool) -> str:
    words = _cardinal(number, british_and)
    head, sep, last = words.rpartition(" ")
    pieces = last.split("-")
    final = pieces[-1]
    if final in _ORDINAL_ENDINGS:
        final = _ORDINAL_ENDINGS[final]
    elif final.endswith("y"):
        final = final[:-1] + "ieth"
    else:
        final += "th"
    return head + sep + "-".join([*pieces[:-1], final])


def _year_words(year: int) -> str:
    if not 1000 <= year <= 9999:
        return _cardinal(year)
    century, rest = divmod(year, 100)
    if rest == 0:
        return f"{_cardinal(century)} hundred" if century % 10 else _cardinal(year)
    if century % 10 == 0 and rest < 10:  # 2005: "two thousand five"
        return _cardinal(year)
    tail = f"oh {_ONES[rest]}" if rest < 10 else _cardinal(rest)
    return f"{_cardinal(century)} {tail}"


def _number_words(inputs: dict[str, Any]) -> dict[str, Any]:
    raw = inputs["number"].replace(",", "").replace(" ", "").replace("_", "")
    negative = raw.startswith("-")
    whole_text, _, fraction = raw.lstrip("+-").partition(".")
    whole = int(whole_text or "0")
    if whole >= 1000 ** len(_SCALES):
        raise EngineError("The number is too large: the whole part may have at most 36 digits.")
    mode = inputs["mode"]
    british = inputs["british_and"]
    sign = "minus " if negative and (whole or fraction.strip("0")) else ""
    if mode in ("ordinal", "year") and fraction:
        raise EngineError(f"A {mode} must be a whole number; remove the decimal part.")
    if mode == "ordinal":
        words = sign + _ordinal(whole, british)
    elif mode == "year":
        words = sign + _year_words(whole)
    elif mode in ("currency", "check"):
        words = sign + _money(whole, fraction, inputs["currency"], mode, british)
    else:
        words = sign + _cardinal(whole, british)
        if fraction:
            words += " point " + " ".join(_ONES[int(d)] for d in fraction)
    return {"words": words, "mode": mode}


def _money(whole: int, fraction: str, currency: str, mode: str, british: bool) -> str:
    (major_one, major_many), minor = CURRENCIES[currency]
    if minor is None and fraction.strip("0"):
        raise EngineError(f"{currency} has no minor unit; give a whole amount.")
    if len(fraction) > 2:
        raise EngineError("Give money with at most two decimal places.")
    cents = int(fraction.ljust(2, "0")) if fraction else 0
    if mode == "check":
        words = _cardinal(whole, british)
        return f"{_capitalize(words)} and {cents:02d}/100 {major_many}"
    words = f"{_cardinal(whole, british)} {major_one if whole == 1 else major_many}"
    if cents and minor:
        words += f" and {_cardinal(cents)} {minor[0] if cents == 1 else minor[1]}"
    return words
