"""A runner that goes through the tool exactly as the API does and checks the output schema."""

import pytest
from jsonschema import Draft202012Validator

from catalogue import load_catalogue
from engines import run_tool


def run_checked(slug: str, **inputs) -> dict:
    tool = load_catalogue().get(slug)
    assert tool.validate(inputs) == {}
    output = run_tool(tool, tool.with_defaults(inputs))
    Draft202012Validator(tool.output).validate(output)
    return output


@pytest.fixture
def run():
    """``run(slug, **inputs)``: validate, fill defaults, run, check the output schema."""
    return run_checked
