"""`/v1/openapi.yaml` reads back as `/v1/openapi.json` with YAML 1.1 and YAML 1.2 parsers."""

import json

import pytest
import yaml
from ruamel.yaml import YAML

from blueprints.api.openapi.routes import to_yaml

# Strings that some YAML 1.1 or 1.2 parser reads as a number, a boolean, null, a date or a
# merge key when they are written plain; and some that stay strings, as controls.
TRICKY_STRINGS = [
    # YAML 1.2 core integers PyYAML (1.1) writes plain: leading zeros, 0o octal.
    "0614141999996",
    "004817",
    "09",
    "-012",
    "+0",
    "0o17",
    "0O17",
    "1_000",
    # Integers in both.
    "0",
    "-0",
    "+12",
    "0x1F",
    "0b101",
    "190:20:30",
    # Floats: exponents without a dot or sign, signed leading dot, trailing dot.
    "1e5",
    "1E5",
    "1.5e3",
    "6.02e+23",
    "+.5",
    "-.5",
    ".5",
    "1.",
    "1_000.5",
    "20:30.15",
    ".inf",
    "-.Inf",
    "+.INF",
    ".nan",
    ".NaN",
    ".NAN",
    # Booleans and null in YAML 1.1 and 1.2.
    "yes",
    "No",
    "on",
    "OFF",
    "y",
    "Y",
    "n",
    "N",
    "true",
    "False",
    "TRUE",
    "~",
    "null",
    "Null",
    "NULL",
    "",
    # Timestamps, merge and value keys.
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5",
    "<<",
    "=",
    # Line breaks in YAML 1.1 only; a BOM; characters that start YAML syntax.
    "a\u2028b",
    "a\x85b",
    "end\u2029",
    "\ufeffbom",
    " leading space",
    "trailing space ",
    "# not a comment",
    "- not a list",
    "key: value",
    "@at",
    "`tick",
    "!tag",
    "&anchor",
    "*alias",
    "{flow}",
    "[flow]",
    "'single'",
    '"double"',
    "multi\nline\n",
    # Controls: strings everywhere.
    "1.0.0",
    "1,000",
    "e5",
    "0x",
    "0o8",
    "inf",
    "nan",
    "yes!",
    "Yes, and",
]

# Values that must stay what they are.
NOT_STRINGS = [0, -3, 614141999996, 0.5, -2.5, 1e16, 1e-5, 6.02e23, True, False, None]


def same(loaded, expected) -> bool:
    """Equal with the same types (`==` alone takes True for 1 and 1e16 for 10**16)."""
    return loaded == expected and json.dumps(loaded, sort_keys=True) == json.dumps(
        expected, sort_keys=True
    )


def load_1_1(text: str):
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_1_2(text: str):
    parser = YAML(typ="safe", pure=True)
    parser.version = (1, 2)
    return parser.load(text)


@pytest.mark.parametrize("load", [load_1_1, load_1_2], ids=["yaml-1.1", "yaml-1.2"])
@pytest.mark.parametrize("value", TRICKY_STRINGS + NOT_STRINGS, ids=repr)
def test_every_value_reads_back_as_itself(load, value):
    document = {"value": value, "list": [value], "nested": {"key": value}}
    if isinstance(value, str) and value:
        document[value] = "as a key"
    text = to_yaml(document)
    assert same(load(text), document), text


def test_both_parsers_read_the_document_as_the_json(client):
    response = client.get("/v1/openapi.yaml")
    assert response.status_code == 200
    assert response.mimetype == "application/yaml"
    text = response.get_data(as_text=True)
    document = client.get("/v1/openapi.json").get_json()
    assert same(load_1_1(text), document)
    assert same(load_1_2(text), document)
