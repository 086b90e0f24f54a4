"""The numbers and units engine (convert.numbers), run through its catalogue tools."""

import pytest

from engines import EngineError


def test_number_base_with_explicit_base_and_bad_digits(run):
    out = run("number-base-converter", value="-z", from_base=36, to_base=2)
    assert (out["decimal"], out["converted"]) == ("-35", "-100011")
    with pytest.raises(EngineError, match="not a base-2 number"):
        run("number-base-converter", value="102", from_base=2)


def test_roman_numerals_suggest_the_standard_form(run):
    assert run("roman-numeral-converter", value="3999")["roman"] == "MMMCMXCIX"
    with pytest.raises(EngineError, match="Did you mean IV \\(4\\)"):
        run("roman-numeral-converter", value="iiii")


def test_unit_conversion_of_temperature_and_mismatched_kinds(run):
    out = run("unit-converter", value=-40, from_unit="°C", to_unit="fahrenheit")
    assert out["conversions"] == [{"unit": "F", "name": "degree Fahrenheit", "value": -40}]
    with pytest.raises(EngineError, match="Cannot convert length \\(m\\) to mass"):
        run("unit-converter", value=1, from_unit="m", to_unit="kg")
    with pytest.raises(EngineError, match="below absolute zero"):
        run("unit-converter", value=-1, from_unit="K")


def test_byte_sizes_binary_units_and_bits(run):
    assert run("byte-size-converter", size="20 MiB")["bytes"] == 20 * 1024**2
    assert run("byte-size-converter", size="100 Mbit")["bytes"] == 12_500_000
    assert run("byte-size-converter", size="1 KB", kb_means=1024)["binary"] == "1.00 KiB"
    with pytest.raises(EngineError, match="is not a size"):
        run("byte-size-converter", size="lots")
