"""Code helpers: formatters (SQL, JSON, JS, Python), cron explainer, highlighter, Markdown."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlsplit

from engines.base import Engine, EngineError, load_once

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


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


class JsonFormatEngine(Engine):
    name = "code.json"

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        source = inputs["json"]
        _refuse_deep_nesting(source, "JSON")
        try:
            value = json.loads(source, parse_constant=_reject_constant)
        except json.JSONDecodeError as error:
            raise EngineError(
                f"Invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}."
            ) from None
        except ValueError as error:  # NaN / Infinity, which Python would otherwise accept
            raise EngineError(f"Invalid JSON: {error}.") from None
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


# --- cron --------------------------------------------------------------------------------

_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"]
_DAYS = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"]
# (field name, output key, lowest, highest, names)
_CRON_FIELDS = (
    ("Minute", "minute", 0, 59, []),
    ("Hour", "hour", 0, 23, []),
    ("Day of month", "day_of_month", 1, 31, []),
    ("Month", "month", 1, 12, _MONTHS),
    ("Day of week", "day_of_week", 0, 7, _DAYS),
)
_CRON_ITEM_RE = re.compile(r"^(?P<base>\*|\?|[A-Z0-9]+(?:-[A-Z0-9]+)?)(?:/(?P<step>\d+))?$")


def _cron_value(token: str, label: str, low: int, high: int, names: list[str]) -> int:
    if token in names:
        return names.index(token) + (1 if label == "Month" else 0)
    if not token.isdigit():
        raise EngineError(f"{label}: '{token}' is not a valid value.")
    value = int(token)
    if not low <= value <= high:
        raise EngineError(f"{label}: {value} is out of range {low}-{high}.")
    return value


def _check_cron_field(field: str, label: str, low: int, high: int, names: list[str]) -> None:
    for item in field.split(","):
        # Quartz extensions cron_descriptor understands: L, LW, 15W, 5L, 5#3.
        if label == "Day of month" and re.fullmatch(r"L|LW|L-\d{1,2}|\d{1,2}W", item):
            continue
        if label == "Day of week" and re.fullmatch(r"[0-7]L|[0-7]#[1-5]|[A-Z]{3}(L|#[1-5])", item):
            continue
        match = _CRON_ITEM_RE.match(item)
        if not match:
            raise EngineError(f"{label}: '{item}' is not a valid value.")
        base, step = match.group("base"), match.group("step")
        if base == "?" and label not in ("Day of month", "Day of week"):
            raise EngineError(f"{label}: '?' is only allowed for the day fields.")
        if base not in ("*", "?"):
            bounds = [_cron_value(t, label, low, high, names) for t in base.split("-")]
            if len(bounds) == 2 and bounds[0] > bounds[1]:
                raise EngineError(f"{label}: the range {base} runs backwards.")
        if step is not None and not 1 <= int(step) <= high:
            raise EngineError(f"{label}: step {step} must be between 1 and {high}.")


class CronExplainEngine(Engine):
    name = "code.cron"
    requires = ("cron_descriptor",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        from cron_descriptor import (
            CasingTypeEnum,
            DescriptionTypeEnum,
            ExpressionDescriptor,
            FormatException,
            Options,
        )

        raw = " ".join(inputs["expression"].split())
        expression = _MACROS.get(raw.lower(), raw).upper()
        if expression == "@REBOOT":
            raise EngineError("@reboot runs once when cron starts; it has no schedule to explain.")
        if expression.startswith("@"):
            raise EngineError(f"Unknown cron macro '{raw}'.")
        fields = expression.split(" ")
        if len(fields) != 5:
            raise EngineError(
                "A cron expression has 5 fields (minute, hour, day of month, month, day of "
                f"week); this one has {len(fields)}."
            )
        for field, (label, _key, low, high, names) in zip(fields, _CRON_FIELDS, strict=True):
            _check_cron_field(field, label, low, high, names)
        options = Options(
            CasingTypeEnum.Sentence,
            verbose=inputs["verbose"],
            use_24hour_time_format=inputs["use_24_hour_time"],
            locale_code="en_US",
        )
        try:
            description = ExpressionDescriptor(expression, options).get_description(
                DescriptionTypeEnum.FULL
            )
        except FormatException as error:
            raise EngineError(f"Invalid cron expression: {error}") from None
        return {
            "expression": expression,
            "description": description,
            "fields": {spec[1]: value for value, spec in zip(fields, _CRON_FIELDS, strict=True)},
        }


# --- syntax highlighting -----------------------------------------------------------------


class HighlightEngine(Engine):
    name = "code.highlight"
    requires = ("pygments",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import get_lexer_by_name
        from pygments.util import ClassNotFound

        try:
            lexer = get_lexer_by_name(inputs["language"], stripnl=False)
        except ClassNotFound:
            raise EngineError(f"Unknown language '{inputs['language']}'.") from None
        formatter = HtmlFormatter(
            style=inputs["style"],
            cssclass="highlight",
            linenos="table" if inputs["line_numbers"] else False,
            wrapcode=True,
        )
        return {
            "html": highlight(inputs["code"], lexer, formatter),
            "css": formatter.get_style_defs(".highlight") if inputs["include_css"] else None,
            "language": lexer.name,
        }


# --- Markdown ----------------------------------------------------------------------------

_SAFE_SCHEMES = frozenset({"", "http", "https", "mailto"})


@load_once
def _safe_markdown_extension() -> Any:
    """Escape raw HTML, drop javascript:/data: links and on* attributes: safe to display."""
    from markdown.extensions import Extension
    from markdown.treeprocessors import Treeprocessor

    class DropUnsafeAttributes(Treeprocessor):
        def run(self, root: Any) -> None:
            for element in root.iter():
                for name, value in list(element.attrib.items()):
                    # attr_list lets authors set any attribute, event handlers included.
                    unsafe_url = (
                        name in ("href", "src")
                        and urlsplit(value.strip()).scheme.lower() not in _SAFE_SCHEMES
                    )
                    if unsafe_url or name.lower().startswith("on"):
                        del element.attrib[name]

    class Safe(Extension):
        def extendMarkdown(self, md: Any) -> None:  # noqa: N802 - Markdown's hook name
            md.preprocessors.deregister("html_block")
            md.inlinePatterns.deregister("html")
            md.treeprocessors.register(DropUnsafeAttributes(md), "drop_unsafe_attributes", 0)

    return Safe


# Python-Markdown scans to the end of the block for the closing bracket of every "[" and
# "(": unclosed ones cost time quadratic in the block's length (30,000 "[" took 95 s). The
# budget is the sum, per block, of unclosed brackets times block length (about 0.1 s per
# million).
_MARKDOWN_SCAN_BUDGET = 2_000_000
_BLOCK_SPLIT_RE = re.compile(r"\n[ \t]*\n")


def _refuse_unclosed_brackets(text: str) -> None:
    cost = 0
    for block in _BLOCK_SPLIT_RE.split(text):
        unclosed = max(block.count("[") - block.count("]"), 0)
        unclosed += max(block.count("(") - block.count(")"), 0)
        cost += unclosed * len(block)
    if cost > _MARKDOWN_SCAN_BUDGET:
        raise EngineError(
            "The Markdown has too many unclosed [ or ( to convert; close them or escape them "
            "as \\[ and \\(."
        )


class MarkdownEngine(Engine):
    name = "code.markdown"
    requires = ("markdown",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        import markdown

        _refuse_unclosed_brackets(inputs["markdown"])
        extensions: list[Any] = list(inputs["extensions"])
        if inputs["safe"]:
            extensions.append(_safe_markdown_extension()())
        # A Markdown instance keeps per-document state: one per call.
        converter = markdown.Markdown(extensions=extensions, output_format="html")
        try:
            return {"html": converter.convert(inputs["markdown"])}
        except RecursionError:
            raise EngineError("The Markdown is nested too deeply to convert.") from None


ENGINES = (
    SqlFormatEngine(),
    JsonFormatEngine(),
    JavaScriptFormatEngine(),
    PythonFormatEngine(),
    CronExplainEngine(),
    HighlightEngine(),
    MarkdownEngine(),
)
