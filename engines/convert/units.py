"""Numbers and units (convert.numbers): bases, Roman numerals, units of measure, byte sizes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from engines.base import ChoiceEngine, EngineError
from engines.convert._helpers import _round

_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"
_PREFIXES = {"0x": 16, "0o": 8, "0b": 2}


def _to_base(number: int, base: int) -> str:
    if number == 0:
        return "0"
    digits = []
    value = abs(number)
    while value:
        value, digit = divmod(value, base)
        digits.append(_DIGITS[digit])
    return ("-" if number < 0 else "") + "".join(reversed(digits))


def _number_base(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["value"].strip().replace("_", "").replace(" ", "").lower()
    negative = text.startswith("-")
    body = text.lstrip("+-")
    base = inputs["from_base"]
    if base == 0:
        base = _PREFIXES.get(body[:2], 10)
    if body[:2] in _PREFIXES and _PREFIXES[body[:2]] == base:
        body = body[2:]
    try:
        number = int(body, base)
    except ValueError:
        allowed = _DIGITS[:base]
        raise EngineError(
            f"'{inputs['value'].strip()}' is not a base-{base} number (digits {allowed[0]}-"
            f"{allowed[-1]})."
        ) from None
    number = -number if negative else number
    return {
        "decimal": str(number),
        "binary": _to_base(number, 2),
        "octal": _to_base(number, 8),
        "hexadecimal": _to_base(number, 16),
        "target_base": inputs["to_base"],
        "converted": _to_base(number, inputs["to_base"]),
        "bit_length": number.bit_length(),
    }


_ROMAN = ((1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"),
          (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"))  # fmt: skip
_ROMAN_VALUES = {"M": 1000, "D": 500, "C": 100, "L": 50, "X": 10, "V": 5, "I": 1}


def _to_roman(number: int) -> str:
    parts = []
    for value, numeral in _ROMAN:
        count, number = divmod(number, value)
        parts.append(numeral * count)
    return "".join(parts)


def _roman(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["value"].strip().upper()
    if text.isdigit():
        number = int(text)
        if not 1 <= number <= 3999:
            raise EngineError("Roman numerals run from 1 to 3999.")
        return {"arabic": number, "roman": _to_roman(number)}
    if not text or any(char not in _ROMAN_VALUES for char in text):
        raise EngineError(
            f"'{inputs['value'].strip()}' is neither a whole number nor a Roman numeral (I, V, "
            "X, L, C, D, M)."
        )
    values = [_ROMAN_VALUES[char] for char in text]
    number = sum(
        -v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values)
    )
    if not 1 <= number <= 3999 or _to_roman(number) != text:
        suggestion = f" Did you mean {_to_roman(number)} ({number})?" if 1 <= number <= 3999 else ""
        raise EngineError(f"'{text}' is not a standard Roman numeral.{suggestion}")
    return {"arabic": number, "roman": text}


# category -> unit symbol -> [name, factor to the category's base unit, other spellings]
_UNITS: dict[str, dict[str, list[Any]]] = json.loads(
    Path(__file__).with_name("units.json").read_text(encoding="utf-8")
)
# Temperature scales are affine: (to kelvin, from kelvin).
_TEMPERATURE = {
    "C": (lambda v: v + 273.15, lambda k: k - 273.15),
    "F": (lambda v: (v - 32) * 5 / 9 + 273.15, lambda k: (k - 273.15) * 9 / 5 + 32),
    "K": (lambda v: v, lambda k: k),
}


def _find_unit(text: str) -> tuple[str, str]:
    """(category, symbol) of a unit written as a symbol or a name, case-insensitively."""
    wanted = text.strip()
    for exact in (True, False):
        for category, units in _UNITS.items():
            for symbol, (name, _factor, aliases) in units.items():
                spellings = (symbol, name, *aliases)
                if exact and wanted in spellings:
                    return category, symbol
                if not exact and wanted.lower() in {s.lower() for s in spellings}:
                    return category, symbol
    raise EngineError(
        f"Unknown unit '{wanted}'. Known units: "
        + "; ".join(f"{c}: {', '.join(units)}" for c, units in _UNITS.items())
        + "."
    )


def _convert_unit(value: float, category: str, source: str, target: str) -> float:
    if category == "temperature":
        return _TEMPERATURE[target][1](_TEMPERATURE[source][0](value))
    units = _UNITS[category]
    return value * units[source][1] / units[target][1]


def _unit_convert(inputs: dict[str, Any]) -> dict[str, Any]:
    category, source = _find_unit(inputs["from_unit"])
    value = inputs["value"]
    if category == "temperature" and _TEMPERATURE[source][0](value) < 0:
        raise EngineError("That temperature is below absolute zero.")
    if inputs["to_unit"].strip():
        target_category, target = _find_unit(inputs["to_unit"])
        if target_category != category:
            raise EngineError(
                f"Cannot convert {category} ({source}) to {target_category} ({target})."
            )
        targets = [target]
    else:
        targets = [symbol for symbol in _UNITS[category] if symbol != source]
    digits = inputs["significant_digits"]
    return {
        "category": category,
        "value": value,
        "from_unit": source,
        "conversions": [
            {
                "unit": symbol,
                "name": _UNITS[category][symbol][0],
                "value": _round(_convert_unit(value, category, source, symbol), digits),
            }
            for symbol in targets
        ],
    }


_BYTE_UNITS = ("B", "KB", "MB", "GB", "TB", "PB", "EB")
_BYTE_SIZE_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([KMGTPE]?)(i?)(B|bytes?|bits?|b)?", re.I)


def _human_size(count: int, base: int, precision: int) -> str:
    units = _BYTE_UNITS if base == 1000 else ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    value = float(count)
    index = 0
    while abs(value) >= base and index < len(units) - 1:
        value /= base
        index += 1
    if index == 0:
        return f"{count} B"
    return f"{value:.{precision}f} {units[index]}"


def _byte_size(inputs: dict[str, Any]) -> dict[str, Any]:
    text = inputs["size"].strip()
    match = _BYTE_SIZE_RE.fullmatch(text)
    if not match:
        raise EngineError(
            f"'{text}' is not a size: write a number with an optional unit, such as 1536, "
            "1.5 GB, 20 MiB or 100 Mbit."
        )
    number, prefix, binary, unit = match.groups()
    base = 1024 if binary or (prefix and inputs["kb_means"] == 1024) else 1000
    exponent = " KMGTPE".index(prefix.upper()) if prefix else 0
    from decimal import Decimal

    count = Decimal(number) * Decimal(base) ** exponent
    if unit and unit.lower().startswith("bit") or unit == "b":
        count /= 8
    if count > Decimal(2) ** 80:
        raise EngineError("Give a size below 1 yobibyte.")
    total = int(count.to_integral_value())
    precision = inputs["precision"]
    return {
        "bytes": total,
        "bits": total * 8,
        "decimal": _human_size(total, 1000, precision),
        "binary": _human_size(total, 1024, precision),
    }


class NumberEngine(ChoiceEngine):
    """Number bases, Roman numerals, units of measurement and byte sizes."""

    name = "convert.numbers"
    jobs = {
        "base": _number_base,
        "roman": _roman,
        "units": _unit_convert,
        "bytes": _byte_size,
    }
