"""Numbers and units (convert.numbers): bases, Roman numerals, units of measure, byte sizes."""

from __future__ import annotations

import re
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


# category -> unit symbol -> (name, factor to the category's base unit, other spellings)
_UNITS: dict[str, dict[str, tuple[str, float, tuple[str, ...]]]] = {
    "length": {
        "nm": ("nanometre", 1e-9, ("nanometer", "nanometers", "nanometres")),
        "um": ("micrometre", 1e-6, ("µm", "micron", "microns", "micrometer", "micrometers")),
        "mm": ("millimetre", 1e-3, ("millimeter", "millimeters", "millimetres")),
        "cm": ("centimetre", 1e-2, ("centimeter", "centimeters", "centimetres")),
        "m": ("metre", 1.0, ("meter", "meters", "metres")),
        "km": ("kilometre", 1e3, ("kilometer", "kilometers", "kilometres")),
        "in": ("inch", 0.0254, ("inches", '"')),
        "ft": ("foot", 0.3048, ("feet", "'")),
        "yd": ("yard", 0.9144, ("yards",)),
        "mi": ("mile", 1609.344, ("miles",)),
        "nmi": ("nautical mile", 1852.0, ("nautical miles",)),
    },
    "mass": {
        "mg": ("milligram", 1e-6, ("milligrams",)),
        "g": ("gram", 1e-3, ("grams",)),
        "kg": ("kilogram", 1.0, ("kilograms", "kilo", "kilos")),
        "t": ("tonne", 1e3, ("tonnes", "metric ton", "metric tons")),
        "oz": ("ounce", 0.028349523125, ("ounces",)),
        "lb": ("pound", 0.45359237, ("lbs", "pounds")),
        "st": ("stone", 6.35029318, ("stones",)),
        "ton": ("US ton", 907.18474, ("short ton", "short tons", "us ton")),
    },
    "volume": {
        "ml": ("millilitre", 1e-3, ("milliliter", "milliliters", "millilitres", "cc")),
        "l": ("litre", 1.0, ("liter", "liters", "litres")),
        "m3": ("cubic metre", 1e3, ("m³", "cubic meter", "cubic meters")),
        "tsp": ("US teaspoon", 0.00492892159375, ("teaspoon", "teaspoons")),
        "tbsp": ("US tablespoon", 0.01478676478125, ("tablespoon", "tablespoons")),
        "floz": ("US fluid ounce", 0.0295735295625, ("fl oz", "fluid ounce", "fluid ounces")),
        "cup": ("US cup", 0.2365882365, ("cups",)),
        "pt": ("US pint", 0.473176473, ("pint", "pints")),
        "qt": ("US quart", 0.946352946, ("quart", "quarts")),
        "gal": ("US gallon", 3.785411784, ("gallon", "gallons", "us gal")),
        "impgal": ("imperial gallon", 4.54609, ("imperial gallon", "uk gallon", "uk gal")),
    },
    "area": {
        "mm2": ("square millimetre", 1e-6, ("mm²",)),
        "cm2": ("square centimetre", 1e-4, ("cm²",)),
        "m2": ("square metre", 1.0, ("m²", "sqm", "square meter", "square meters")),
        "ha": ("hectare", 1e4, ("hectare", "hectares")),
        "km2": ("square kilometre", 1e6, ("km²",)),
        "in2": ("square inch", 0.00064516, ("in²", "sq in")),
        "ft2": ("square foot", 0.09290304, ("ft²", "sq ft", "sqft", "square feet")),
        "yd2": ("square yard", 0.83612736, ("yd²", "sq yd")),
        "acre": ("acre", 4046.8564224, ("acres", "ac")),
        "mi2": ("square mile", 2589988.110336, ("mi²", "sq mi")),
    },
    "speed": {
        "m/s": ("metre per second", 1.0, ("mps",)),
        "km/h": ("kilometre per hour", 1 / 3.6, ("kmh", "kph")),
        "mph": ("mile per hour", 0.44704, ("mi/h",)),
        "kn": ("knot", 1852 / 3600, ("knot", "knots", "kt")),
        "ft/s": ("foot per second", 0.3048, ("fps",)),
    },
    "time": {
        "ms": ("millisecond", 1e-3, ("millisecond", "milliseconds")),
        "s": ("second", 1.0, ("sec", "second", "seconds")),
        "min": ("minute", 60.0, ("minute", "minutes")),
        "h": ("hour", 3600.0, ("hr", "hour", "hours")),
        "d": ("day", 86400.0, ("day", "days")),
        "wk": ("week", 604800.0, ("week", "weeks")),
        "yr": ("year (365.2425 days)", 31556952.0, ("year", "years")),
    },
    "pressure": {
        "pa": ("pascal", 1.0, ("pascal", "pascals")),
        "kpa": ("kilopascal", 1e3, ("kilopascal", "kilopascals")),
        "bar": ("bar", 1e5, ("bars",)),
        "psi": ("pound per square inch", 6894.757293168361, ()),
        "atm": ("standard atmosphere", 101325.0, ("atmosphere", "atmospheres")),
        "mmhg": ("millimetre of mercury", 133.322387415, ("torr",)),
    },
    "energy": {
        "j": ("joule", 1.0, ("joule", "joules")),
        "kj": ("kilojoule", 1e3, ("kilojoule", "kilojoules")),
        "cal": ("calorie", 4.184, ("calorie", "calories")),
        "kcal": ("kilocalorie", 4184.0, ("kilocalorie", "kilocalories", "Cal")),
        "wh": ("watt-hour", 3600.0, ("watt hour", "watt hours")),
        "kwh": ("kilowatt-hour", 3.6e6, ("kilowatt hour", "kilowatt hours")),
        "btu": ("British thermal unit", 1055.05585262, ()),
    },
    "temperature": {
        "C": ("degree Celsius", 1.0, ("°C", "celsius", "centigrade")),
        "F": ("degree Fahrenheit", 1.0, ("°F", "fahrenheit")),
        "K": ("kelvin", 1.0, ("kelvin", "kelvins")),
    },
}
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
