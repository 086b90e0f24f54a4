"""Example values for JSON schemas: stated ones (`example`, `examples`, `default`, ...),
else synthesised from the schema, through `$ref`s, `allOf`, `oneOf` and `anyOf`.

`example_from_schema` is the public entry; the Postman collection also takes a media type's or
parameter's explicit example (`_explicit_example`) before synthesising one.
"""

from __future__ import annotations

from typing import Any

from blueprints.api.openapi.document import _pointer, _resolve

# Bounds the synthesised example even for deeply nested schemas without a `$ref` cycle.
MAX_EXAMPLE_DEPTH = 32

STRING_FORMAT_EXAMPLES = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "00:00:00Z",
    "duration": "PT1H",
    "uuid": "3fa85f64-5717-4562-b3fc-2c963f66afa6",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "iri": "https://example.com/",
    "uri-reference": "/path",
    "email": "user@example.com",
    "idn-email": "user@example.com",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "byte": "c3RyaW5n",
    "binary": "",
    "password": "********",
}

# Distinguishes "no example" from an explicit JSON null.
_MISSING: Any = object()


def example_from_schema(spec: dict, schema: Any, *, for_request: bool = True) -> Any:
    """Return an example value for a JSON schema, or None when nothing can be said.

    `$ref`s are resolved against `spec`; a `$ref` already being expanded is left out (an omitted
    property, an empty array), so recursive schemas terminate. Request examples skip `readOnly`
    properties and response examples skip `writeOnly` ones.
    """
    value = _example(spec, schema, for_request, frozenset(), 0)
    return None if value is _MISSING else value


def _request_example(spec: dict, media: dict) -> Any:
    """Media `example`, else the first of `examples`, else one synthesised from the schema."""
    value = _explicit_example(spec, media)
    if value is _MISSING and "schema" in media:
        return _example(spec, media["schema"], True, frozenset(), 0)
    return value


def _explicit_example(spec: dict, media_or_parameter: dict) -> Any:
    """`example`, else the value of the first of `examples` (Example Objects, maybe `$ref`s)."""
    if "example" in media_or_parameter:
        return media_or_parameter["example"]
    for raw_example in (media_or_parameter.get("examples") or {}).values():
        example = _resolve(spec, raw_example)
        if isinstance(example, dict) and "value" in example:
            return example["value"]
    return _MISSING


def _example(spec: dict, schema: Any, for_request: bool, seen: frozenset[str], depth: int) -> Any:
    if not isinstance(schema, dict) or depth > MAX_EXAMPLE_DEPTH:
        return _MISSING
    stated = _stated_value(schema)
    if stated is not _MISSING:
        return stated

    if "$ref" in schema:
        ref = schema["$ref"]
        target = _pointer(spec, ref)
        if ref in seen or target is None:
            return _MISSING
        return _example(spec, target, for_request, seen | {ref}, depth + 1)

    if isinstance(schema.get("allOf"), list):
        return _all_of_example(spec, schema, for_request, seen, depth)

    for keyword in ("oneOf", "anyOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list) and branches:
            # `anyOf: [{"type": "null"}, X]` spells "X or null"; X is the useful example.
            chosen = next((b for b in branches if not _is_null_schema(b)), branches[0])
            return _example(spec, chosen, for_request, seen, depth + 1)

    schema_type = _schema_type(schema)
    if schema_type == "object":
        return _object_example(spec, schema, for_request, seen, depth)
    if schema_type == "array":
        return _array_example(spec, schema, for_request, seen, depth)
    return _scalar_example(schema, schema_type)


def _stated_value(schema: dict) -> Any:
    """A value the schema names itself: `const`, `example`, `examples`, `default`, `enum`."""
    if "const" in schema:
        return schema["const"]
    if "example" in schema:
        return schema["example"]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    if "default" in schema:
        return schema["default"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    return _MISSING


def _scalar_example(schema: dict, schema_type: str | None) -> Any:
    if schema_type == "string":
        return STRING_FORMAT_EXAMPLES.get(schema.get("format", ""), "string")
    if schema_type in ("integer", "number"):
        return _number_example(schema, schema_type)
    if schema_type == "boolean":
        return True
    if schema_type == "null":
        return None
    return _MISSING


def _all_of_example(
    spec: dict, schema: dict, for_request: bool, seen: frozenset[str], depth: int
) -> Any:
    parts = [{k: v for k, v in schema.items() if k != "allOf"}, *schema["allOf"]]
    merged: Any = _MISSING
    for part in parts:
        value = _example(spec, part, for_request, seen, depth + 1)
        if value is _MISSING:
            continue
        if isinstance(value, dict) and isinstance(merged, dict):
            merged = {**merged, **value}
        elif merged is _MISSING:
            merged = value
    return merged


def _object_example(
    spec: dict, schema: dict, for_request: bool, seen: frozenset[str], depth: int
) -> dict:
    skipped = "readOnly" if for_request else "writeOnly"
    result = {}
    for name, prop in (schema.get("properties") or {}).items():
        if isinstance(prop, dict) and prop.get(skipped):
            continue
        value = _example(spec, prop, for_request, seen, depth + 1)
        if value is not _MISSING:
            result[name] = value
    additional = schema.get("additionalProperties")
    if not result and isinstance(additional, dict) and additional:
        value = _example(spec, additional, for_request, seen, depth + 1)
        if value is not _MISSING:
            result["key"] = value
    return result


def _array_example(
    spec: dict, schema: dict, for_request: bool, seen: frozenset[str], depth: int
) -> list:
    if isinstance(schema.get("prefixItems"), list):
        values = [_example(spec, s, for_request, seen, depth + 1) for s in schema["prefixItems"]]
        return [value for value in values if value is not _MISSING]
    value = _example(spec, schema.get("items", {}), for_request, seen, depth + 1)
    return [] if value is _MISSING else [value]


def _number_example(schema: dict, schema_type: str) -> int | float:
    minimum = schema.get("minimum")
    exclusive = schema.get("exclusiveMinimum")
    if isinstance(exclusive, (int, float)) and not isinstance(exclusive, bool):
        minimum = exclusive + 1 if schema_type == "integer" else exclusive + 0.5
    if isinstance(minimum, (int, float)) and not isinstance(minimum, bool):
        return minimum
    return 0


def _schema_type(schema: dict) -> str | None:
    declared = schema.get("type")
    if isinstance(declared, list):
        declared = next((t for t in declared if t != "null"), "null" if declared else None)
    if declared is not None:
        return declared
    if "properties" in schema or "additionalProperties" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return None


def _is_null_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null" and len(schema) == 1
