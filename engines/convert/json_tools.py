"""JSON tools (convert.json): schema inference and validation, JMESPath, diff, flatten."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from engines.base import ChoiceEngine, EngineError
from engines.convert._helpers import (
    _REGEX_TIMEOUT,
    _check_size,
    _dump_json,
    _flatten,
    _json_path,
    _json_type,
    _parse_json,
)

_FORMAT_CHECKS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("date-time", re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)?")),
    ("date", re.compile(r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])")),
    ("time", re.compile(r"([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")),
    ("email", re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}")),
    ("uri", re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s]+")),
    ("uuid", re.compile(r"[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")),
    ("ipv4", re.compile(r"((25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(25[0-5]|2[0-4]\d|1?\d?\d)")),
)


def _infer_schema(value: Any, formats: bool, strict: bool) -> dict[str, Any]:
    if isinstance(value, dict):
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {k: _infer_schema(v, formats, strict) for k, v in value.items()},
            "required": list(value),
        }
        if strict:
            schema["additionalProperties"] = False
        return schema
    if isinstance(value, list):
        schema = {"type": "array"}
        if value:
            items = _infer_schema(value[0], formats, strict)
            for item in value[1:]:
                items = _merge_schemas(items, _infer_schema(item, formats, strict))
            schema["items"] = items
        return schema
    kind = {bool: "boolean", int: "integer", float: "number", str: "string"}.get(
        type(value), "null"
    )
    if kind == "string" and formats:
        for name, pattern in _FORMAT_CHECKS:
            if pattern.fullmatch(value):
                return {"type": "string", "format": name}
    return {"type": kind}


def _merge_schemas(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """One schema that accepts what ``a`` and ``b`` accept (as inferred from samples)."""
    if a == b:
        return a
    options = a.get("anyOf", [a]) + b.get("anyOf", [b])
    merged: list[dict[str, Any]] = []
    for option in options:
        for index, seen in enumerate(merged):
            combined = _merge_same_type(seen, option)
            if combined is not None:
                merged[index] = combined
                break
        else:
            merged.append(option)
    if len(merged) == 1:
        return merged[0]
    if all(set(option) == {"type"} for option in merged):
        return {"type": [option["type"] for option in merged]}
    return {"anyOf": merged}


def _merge_same_type(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any] | None:
    kinds = {a.get("type"), b.get("type")}
    if a == b:
        return a
    if kinds == {"integer", "number"}:
        return {"type": "number"}
    if kinds == {"string"}:
        return {"type": "string"}
    if kinds == {"array"}:
        if "items" in a and "items" in b:
            return {"type": "array", "items": _merge_schemas(a["items"], b["items"])}
        return a if "items" in a else b
    if kinds == {"object"}:
        properties = dict(a["properties"])
        for key, schema in b["properties"].items():
            properties[key] = (
                _merge_schemas(properties[key], schema) if key in properties else schema
            )
        merged = {
            "type": "object",
            "properties": properties,
            "required": [key for key in a["required"] if key in b["required"]],
        }
        if "additionalProperties" in a:
            merged["additionalProperties"] = False
        return merged
    return None


def _drop_required(schema: Any) -> None:
    if isinstance(schema, dict):
        schema.pop("required", None)
        for value in schema.values():
            _drop_required(value)
    elif isinstance(schema, list):
        for item in schema:
            _drop_required(item)


def _json_schema_infer(inputs: dict[str, Any]) -> dict[str, Any]:
    value = _parse_json(inputs["json"])
    schema = _infer_schema(value, inputs["detect_formats"], inputs["strict"])
    if not inputs["required"]:
        _drop_required(schema)
    document = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    if inputs["title"]:
        document["title"] = inputs["title"]
    document.update(schema)
    return {"schema": document, "json": _dump_json(document, 2)}


def _regex_search(pattern: str, text: str) -> Any:
    """``regex.search`` with a time limit: a pattern that backtracks forever fails instead."""
    import regex

    try:
        return regex.search(pattern, text, timeout=_REGEX_TIMEOUT)
    except regex.error as error:
        raise EngineError(f"The pattern {pattern!r} is invalid: {error}.") from None
    except TimeoutError:
        raise EngineError(
            f"The pattern {pattern!r} takes too long to match (catastrophic backtracking); "
            "simplify it."
        ) from None


def _schema_validator_class(schema: dict[str, Any]) -> Any:
    """The validator class for ``schema``'s draft, matching patterns with a time limit."""
    from jsonschema import ValidationError, validators

    def pattern(validator: Any, expected: str, instance: Any, _schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string") and not _regex_search(expected, instance):
            yield ValidationError(f"{instance!r} does not match {expected!r}")

    def pattern_properties(
        validator: Any, patterns: dict[str, Any], instance: Any, _schema: Any
    ) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for expected, subschema in patterns.items():
            for key, value in instance.items():
                if _regex_search(expected, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=expected)

    base = validators.validator_for(schema, default=validators.Draft202012Validator)
    return validators.extend(base, {"pattern": pattern, "patternProperties": pattern_properties})


_MAX_ERRORS = 100


def _json_schema_validate(inputs: dict[str, Any]) -> dict[str, Any]:
    from jsonschema import SchemaError
    from referencing.exceptions import Unresolvable

    instance = _parse_json(inputs["json"], "The JSON document")
    schema = _parse_json(inputs["schema"], "The schema")
    if not isinstance(schema, dict | bool):
        raise EngineError("The schema must be a JSON object (or true/false).")
    cls = _schema_validator_class(schema if isinstance(schema, dict) else {})
    try:
        cls.check_schema(schema)
        validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
        found = sorted(validator.iter_errors(instance), key=lambda e: list(map(str, e.path)))
    except SchemaError as error:
        where = _json_path(list(error.path))
        raise EngineError(f"The schema itself is invalid at {where}: {error.message}.") from None
    except Unresolvable as error:
        raise EngineError(
            f"The schema refers to {error.ref!r}, which cannot be resolved: only references "
            "inside the schema ($defs) work here."
        ) from None
    errors = [
        {
            "path": _json_path(list(error.absolute_path)),
            "message": error.message,
            "keyword": str(error.validator),
            "schema_path": "/".join(str(part) for part in error.absolute_schema_path),
        }
        for error in found[:_MAX_ERRORS]
    ]
    return {
        "valid": not found,
        "error_count": len(found),
        "errors": errors,
        "draft": cls.META_SCHEMA.get("$schema", ""),
    }


def _jmespath_query(inputs: dict[str, Any]) -> dict[str, Any]:
    import jmespath
    from jmespath import exceptions

    data = _parse_json(inputs["json"])
    try:
        result = jmespath.search(inputs["expression"], data)
    except exceptions.ParseError as error:
        raise EngineError(
            f"The expression is invalid at position {error.lex_position}: {error.msg}."
        ) from None
    except exceptions.JMESPathError as error:
        raise EngineError(f"The expression cannot run: {error}") from None
    except RecursionError:
        raise EngineError("The expression is nested too deeply.") from None
    _check_size(result, "The result")
    return {
        "result": result,
        "json": _dump_json(result, inputs["indent"]),
        "type": _json_type(result),
    }


_MAX_DIFFERENCES = 500


def _diff_values(old: Any, new: Any, path: list[Any], found: list[dict[str, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                found.append(
                    {
                        "path": _json_path([*path, key]),
                        "change": "removed",
                        "old": old[key],
                        "new": None,
                    }
                )
            else:
                _diff_values(old[key], new[key], [*path, key], found)
        for key in new:
            if key not in old:
                found.append(
                    {
                        "path": _json_path([*path, key]),
                        "change": "added",
                        "old": None,
                        "new": new[key],
                    }
                )
    elif isinstance(old, list) and isinstance(new, list):
        for index in range(max(len(old), len(new))):
            if index >= len(new):
                found.append(
                    {
                        "path": _json_path([*path, index]),
                        "change": "removed",
                        "old": old[index],
                        "new": None,
                    }
                )
            elif index >= len(old):
                found.append(
                    {
                        "path": _json_path([*path, index]),
                        "change": "added",
                        "old": None,
                        "new": new[index],
                    }
                )
            else:
                _diff_values(old[index], new[index], [*path, index], found)
    elif old != new or type(old) is not type(new):
        found.append({"path": _json_path(path), "change": "changed", "old": old, "new": new})


def _json_diff(inputs: dict[str, Any]) -> dict[str, Any]:
    old = _parse_json(inputs["original"], "The original JSON")
    new = _parse_json(inputs["changed"], "The changed JSON")
    found: list[dict[str, Any]] = []
    _diff_values(old, new, [], found)
    counts = {
        kind: sum(1 for d in found if d["change"] == kind)
        for kind in ("added", "removed", "changed")
    }
    return {
        "identical": not found,
        **counts,
        "differences": found[:_MAX_DIFFERENCES],
        "truncated": len(found) > _MAX_DIFFERENCES,
    }


def _unflatten(flat: dict[str, Any], separator: str) -> Any:
    root: dict[str, Any] = {}
    for key, value in flat.items():
        parts = key.split(separator)
        node = root
        for depth, part in enumerate(parts[:-1], start=1):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise EngineError(
                    f"'{key}' needs '{separator.join(parts[:depth])}' to be an object, but it "
                    "also has a value of its own."
                )
            node = child
        if parts[-1] in node:
            raise EngineError(f"'{key}' is given both as a value and as a parent of other keys.")
        node[parts[-1]] = value
    return _lists_from_indexes(root)


def _lists_from_indexes(value: Any) -> Any:
    """Objects whose keys are exactly 0..n-1 become arrays."""
    if not isinstance(value, dict):
        return value
    converted = {key: _lists_from_indexes(item) for key, item in value.items()}
    if converted and list(converted) == [str(i) for i in range(len(converted))]:
        return list(converted.values())
    return converted


def _json_flatten(inputs: dict[str, Any]) -> dict[str, Any]:
    value = _parse_json(inputs["json"])
    separator = inputs["separator"]
    if inputs["direction"] == "flatten":
        if not isinstance(value, dict | list):
            raise EngineError("Give a JSON object or array to flatten.")
        result: Any = _flatten(value, separator)
    else:
        if not isinstance(value, dict):
            raise EngineError('Give a JSON object of flat keys (like {"a.b": 1}) to unflatten.')
        if any(isinstance(item, dict) for item in value.values()):
            raise EngineError("The object is already nested: its values must not be objects.")
        result = _unflatten(value, separator)
    _check_size(result, "The result")
    keys = len(result) if isinstance(result, dict | list) else 0
    return {"json": _dump_json(result, inputs["indent"]), "keys": keys}


class JsonToolsEngine(ChoiceEngine):
    """Works on JSON documents: infer or apply a JSON Schema, query, diff, (un)flatten."""

    name = "convert.json"
    requires = ("jmespath", "regex")
    jobs = {
        "schema-infer": _json_schema_infer,
        "schema-validate": _json_schema_validate,
        "query": _jmespath_query,
        "diff": _json_diff,
        "flatten": _json_flatten,
    }
