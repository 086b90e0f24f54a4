"""Code formatters: ``code.sql``, ``code.json``, ``code.javascript`` and ``code.python``."""

from __future__ import annotations

import json
import re
from typing import Any

from engines._json import parse_json
from engines.base import Engine, EngineError

# Formatters indent every level: deep nesting makes black and jsbeautifier slow and the
# output quadratic in size (5,000 nested braces beautify to 25 MB).
_MAX_NESTING = 100
_NESTING_TOKEN_RE = re.compile(r"[()\[\]{}\"'`\\]")


def _refuse_deep_nesting(code: str, what: str) -> None:
    """Refuse code nested more than _MAX_NESTING brackets deep (strings are skipped)."""
    depth = 0
    quote = None
    escaped = False
    for match in _NESTING_TOKEN_RE.finditer(code):
        char = match.group()
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = quote is not None
        elif quote:
            quote = None if char == quote else quote
        elif char in "\"'`":
            quote = char
        elif char in "([{":
            depth += 1
            if depth > _MAX_NESTING:
                raise EngineError(f"The {what} is nested more than {_MAX_NESTING} levels deep.")
        else:
            depth = max(depth - 1, 0)


# Indentation can still multiply the size of deeply nested input; answers stay under this.
_MAX_OUTPUT_CHARS = 1_000_000


def _refuse_huge(formatted: str) -> str:
    if len(formatted) > _MAX_OUTPUT_CHARS:
        raise EngineError(
            f"The formatted result would be {len(formatted):,} characters, over the "
            f"{_MAX_OUTPUT_CHARS:,} limit; use less indentation or send less code."
        )
    return formatted


# --- SQL ---------------------------------------------------------------------------------

_CASES = {"upper": "upper", "lower": "lower", "capitalize": "capitalize", "unchanged": None}


class _StatementCounter:
    """A sqlparse filter counting statements that hold more than comments and semicolons."""

    def __init__(self) -> None:
        self.count = 0

    def process(self, statement: Any) -> Any:
        from sqlparse import tokens

        if any(
            not token.is_whitespace
            and token.ttype not in tokens.Comment
            and token.ttype not in tokens.Punctuation
            for token in statement.flatten()
        ):
            self.count += 1
        return statement


class SqlFormatEngine(Engine):
    name = "code.sql"
    requires = ("sqlparse",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        from sqlparse import engine, filters, formatter
        from sqlparse.exceptions import SQLParseError

        # sqlparse.format() spelled out, to count statements in the same pass (parsing is
        # the slow part: about 15 ms per 1,000 characters).
        options = formatter.validate_options(
            {
                "keyword_case": _CASES[inputs["keyword_case"]],
                "identifier_case": _CASES[inputs["identifier_case"]],
                "reindent": inputs["reindent"],
                "indent_width": inputs["indent_width"],
                "strip_comments": inputs["strip_comments"],
                "use_space_around_operators": inputs["spaces_around_operators"],
            }
        )
        stack = formatter.build_filter_stack(engine.FilterStack(), options)
        counter = _StatementCounter()
        stack.postprocess.insert(0, counter)
        stack.postprocess.append(filters.SerializerUnicode())
        try:
            formatted = "".join(stack.run(inputs["sql"]))
        except SQLParseError as error:
            raise EngineError(f"The SQL cannot be parsed: {error}") from None
        if not counter.count:
            raise EngineError("The text contains no SQL statement.")
        return {"formatted": _refuse_huge(formatted.strip()), "statements": counter.count}


# --- JSON --------------------------------------------------------------------------------

_JSON_TYPES = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}


class JsonFormatEngine(Engine):
    name = "code.json"

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        source = inputs["json"]
        _refuse_deep_nesting(source, "JSON")
        value = parse_json(source, "Invalid JSON", at=" at line {line}, column {column}")
        indent = inputs["indent"]
        formatted = json.dumps(
            value,
            indent=indent or None,
            separators=(",", ": ") if indent else (",", ":"),
            sort_keys=inputs["sort_keys"],
            ensure_ascii=inputs["ascii_only"],
        )
        kind = _JSON_TYPES.get(type(value), "number")
        return {
            "formatted": _refuse_huge(formatted),
            "type": kind,
            "items": len(value) if kind in ("object", "array") else None,
        }


# --- JavaScript --------------------------------------------------------------------------


class JavaScriptFormatEngine(Engine):
    name = "code.javascript"
    requires = ("jsbeautifier",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        import jsbeautifier

        _refuse_deep_nesting(inputs["code"], "code")
        options = jsbeautifier.default_options()
        options.indent_size = inputs["indent_size"]
        options.indent_with_tabs = inputs["indent_with_tabs"]
        options.brace_style = inputs["brace_style"]
        options.max_preserve_newlines = inputs["max_preserve_newlines"]
        options.preserve_newlines = inputs["max_preserve_newlines"] > 0
        options.end_with_newline = False
        formatted = _refuse_huge(jsbeautifier.beautify(inputs["code"], options))
        return {"formatted": formatted, "lines": len(formatted.splitlines())}


# --- Python ------------------------------------------------------------------------------


class PythonFormatEngine(Engine):
    name = "code.python"
    requires = ("black",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        import black

        source = inputs["code"]
        _refuse_deep_nesting(source, "code")
        mode = black.Mode(
            line_length=inputs["line_length"],
            string_normalization=not inputs["skip_string_normalization"],
            magic_trailing_comma=inputs["magic_trailing_comma"],
        )
        try:
            formatted = black.format_str(source, mode=mode)
        except black.parsing.InvalidInput as error:
            raise EngineError(_describe_black_error(error)) from None
        return {"formatted": _refuse_huge(formatted), "changed": formatted != source}


def _describe_black_error(error: Exception) -> str:
    # black says "cannot parse: 3:7: <source line>"; lines and columns are 1-based.
    match = re.match(r"Cannot parse(?: for target version [^:]+)?: (\d+):(\d+)", str(error), re.I)
    if match:
        return f"Invalid Python syntax at line {match.group(1)}, column {match.group(2)}."
    return f"Invalid Python syntax: {error}."
