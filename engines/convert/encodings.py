"""Text encodings (convert.encoding): base64, URL, HTML entities, string literals, punycode."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from engines.base import ChoiceEngine, EngineError
from engines.convert._helpers import _bounded, _convert_domain, _utf8_text


def _base64(inputs: dict[str, Any]) -> dict[str, Any]:
    import base64
    import binascii

    text = inputs["text"]
    url_safe = inputs["alphabet"] == "url-safe"
    if inputs["direction"] == "encode":
        data = text.encode("utf-8")
        encoded = (base64.urlsafe_b64encode if url_safe else base64.b64encode)(data).decode()
        if not inputs["padding"]:
            encoded = encoded.rstrip("=")
        return {"result": encoded, "bytes": len(data)}
    compact = "".join(text.split())
    if url_safe:
        compact = compact.replace("-", "+").replace("_", "/")
    compact += "=" * (-len(compact) % 4)
    try:
        data = base64.b64decode(compact, validate=True)
    except binascii.Error:
        bad = re.search(r"[^A-Za-z0-9+/=]", compact)
        hint = f" (it contains {bad.group()!r})" if bad else ""
        raise EngineError(
            f"The text is not valid base64{hint}; check the alphabet setting."
        ) from None
    return {"result": _utf8_text(data, "The base64"), "bytes": len(data)}


def _url_encoding(inputs: dict[str, Any]) -> dict[str, Any]:
    from urllib.parse import quote, quote_plus, unquote, unquote_plus

    text, mode = inputs["text"], inputs["mode"]
    if inputs["direction"] == "encode":
        if mode == "form":
            return {"result": quote_plus(text, safe="")}
        return {"result": quote(text, safe="/" if mode == "path" else "")}
    try:
        return {"result": (unquote_plus if mode == "form" else unquote)(text, errors="strict")}
    except UnicodeDecodeError:
        raise EngineError(
            "The %-escapes decode to bytes that are not UTF-8 text; check the input."
        ) from None


def _html_entities(inputs: dict[str, Any]) -> dict[str, Any]:
    import html
    from html.entities import codepoint2name

    text = inputs["text"]
    if inputs["direction"] == "decode":
        return {"result": html.unescape(text)}
    escaped = html.escape(text, quote=inputs["escape_quotes"])
    style = inputs["non_ascii"]
    if style == "keep":
        return {"result": escaped}

    def entity(match: re.Match[str]) -> str:
        code = ord(match.group())
        if style == "named" and code in codepoint2name:
            return f"&{codepoint2name[code]};"
        return f"&#x{code:X};"

    return {"result": _bounded(re.sub(r"[^\x00-\x7f]", entity, escaped))}


def _escape_string(text: str, target: str) -> str:
    import shlex

    if target == "json":
        return json.dumps(text, ensure_ascii=False)
    if target == "python":
        return repr(text)
    if target == "sql":
        return "'" + text.replace("'", "''") + "'"
    if target == "shell":
        return shlex.quote(text)
    if target == "csv":
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="").writerow([text])
        return buffer.getvalue()
    return re.escape(text)


def _unescape_string(text: str, target: str) -> str:
    import ast
    import shlex

    stripped = text.strip()
    if target == "json":
        literal = stripped if stripped.startswith('"') else f'"{stripped}"'
        try:
            return str(json.loads(literal))  # a literal starting with " is a string or fails
        except json.JSONDecodeError as error:
            raise EngineError(
                f"Not a valid JSON string: {error.msg} at column {error.colno}."
            ) from None
    if target == "python":
        quoted = stripped[:1] in ("'", '"') and stripped[-1:] == stripped[:1] and len(stripped) > 1
        literal = stripped if quoted else f'"{stripped}"'
        try:
            value = ast.literal_eval(literal)
        except (SyntaxError, ValueError):
            raise EngineError(
                "Not a valid Python string literal; include the quotes, e.g. 'It\\'s'."
            ) from None
        if not isinstance(value, str):
            raise EngineError("The Python literal is not a string.")
        return value
    if target == "sql":
        if len(stripped) > 1 and stripped[0] == stripped[-1] == "'":
            stripped = stripped[1:-1]
        return stripped.replace("''", "'")
    if target == "shell":
        try:
            words = shlex.split(stripped)
        except ValueError as error:
            raise EngineError(f"Not valid shell quoting: {error}.") from None
        if len(words) != 1:
            raise EngineError(f"The text is {len(words)} shell words, not one quoted string.")
        return words[0]
    if target == "csv":
        rows = list(csv.reader(io.StringIO(stripped)))
        if len(rows) != 1 or len(rows[0]) != 1:
            raise EngineError('The text is not one CSV field; quote it as "...".')
        return rows[0][0]
    return re.sub(r"\\(.)", r"\1", text, flags=re.DOTALL)


def _string_escape(inputs: dict[str, Any]) -> dict[str, Any]:
    function = _escape_string if inputs["direction"] == "escape" else _unescape_string
    return {"result": _bounded(function(inputs["text"], inputs["target"]))}


def _punycode(inputs: dict[str, Any]) -> dict[str, Any]:
    results = []
    for line in inputs["domains"].splitlines():
        if not line.strip():
            continue
        local, at, domain = line.strip().rpartition("@")
        unicode_form, ascii_form = _convert_domain(domain)
        results.append(
            {
                "input": line.strip(),
                "unicode": f"{local}{at}{unicode_form}",
                "ascii": f"{local}{at}{ascii_form}",
                "internationalized": unicode_form != ascii_form,
            }
        )
    if not results:
        raise EngineError("Give at least one domain name.")
    if len(results) > 100:
        raise EngineError(f"Give at most 100 domains; there are {len(results)}.")
    return {"domains": results}


class EncodingEngine(ChoiceEngine):
    """Encodes and decodes text: base64, URL, HTML entities, string literals, punycode."""

    name = "convert.encoding"
    requires = ("idna",)
    jobs = {
        "base64": _base64,
        "url": _url_encoding,
        "html-entities": _html_entities,
        "string-escape": _string_escape,
        "punycode": _punycode,
    }
