"""Read ``catalogue/tools/<category>/*.yaml`` and check the whole catalogue before using it."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

import engines
from catalogue.tool import (
    CATEGORIES,
    CREDIT_CLASSES,
    MAX_FILE_CHARS,
    TOOL_PLANS,
    Catalogue,
    Tool,
    file_schema,
)

DEFAULT_DIRECTORY = Path(__file__).parent / "tools"
SLUG_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
RESERVED_SLUGS = frozenset({"run", "runs"})
# The API uses these names itself: `slug` on /tools/run, `input` as the primary field's alias.
RESERVED_FIELDS = frozenset({"slug", "input"})
MAX_TEXT_LENGTH = 100_000

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# The keywords of the JSON Schema 2020-12 vocabularies, by vocabulary: with EXTENSIONS, the
# only keys a tool's or a workflow's schema may hold (the meta-schema allows any other).
KEYWORDS = frozenset(
    {
        # core
        "$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary",
        "$comment", "$defs",
        # applicator
        "prefixItems", "items", "contains", "additionalProperties", "properties",
        "patternProperties", "dependentSchemas", "propertyNames", "if", "then", "else", "allOf",
        "anyOf", "oneOf", "not",
        # unevaluated
        "unevaluatedItems", "unevaluatedProperties",
        # validation
        "type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
        "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
        "uniqueItems", "maxContains", "minContains", "maxProperties", "minProperties", "required",
        "dependentRequired",
        # meta-data
        "title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
        # format-annotation
        "format",
        # content
        "contentEncoding", "contentMediaType", "contentSchema",
    }
)  # fmt: skip
# Keywords whose value is a schema, a list of schemas, or names mapped to schemas; the values
# of the others (``const``, ``enum``, ``default``, ``examples``...) are data.
_SUBSCHEMA = frozenset(
    {
        "items", "contains", "additionalProperties", "propertyNames", "if", "then", "else", "not",
        "unevaluatedItems", "unevaluatedProperties", "contentSchema",
    }
)  # fmt: skip
_SUBSCHEMA_LISTS = frozenset({"prefixItems", "allOf", "anyOf", "oneOf"})
_SUBSCHEMA_MAPS = frozenset({"$defs", "properties", "patternProperties", "dependentSchemas"})
# The project's own keywords and what their values must be. ``x-accept``: the media types a
# file field takes when there are several (catalogue/tool.py, the workflow loader).
_EXTENSIONS = Draft202012Validator(
    {
        "dependentRequired": {"x-accept": ["contentMediaType"]},
        "properties": {
            "x-accept": {
                "type": "array",
                "minItems": 1,
                "uniqueItems": True,
                "items": {"type": "string", "pattern": r"^[a-z]+/[^\s/]+$"},
            },
        },
    }
)
EXTENSIONS = frozenset(_EXTENSIONS.schema["properties"])

# The shape of one record; the checks that need more than a schema follow in _check_tool.
_RECORD_VALIDATOR = Draft202012Validator(
    {
        "type": "object",
        "additionalProperties": False,
        "required": [
            "slug", "name", "summary", "required_plan", "credit_class", "queue", "engine",
            "primary", "inputs", "output", "examples",
        ],
        "properties": {
            "slug": {"type": "string"},
            "name": {"type": "string", "minLength": 1, "maxLength": 80},
            "summary": {"type": "string", "minLength": 1, "maxLength": 300},
            "required_plan": {"enum": list(TOOL_PLANS)},
            "credit_class": {"enum": list(CREDIT_CLASSES)},
            "queue": {"type": "boolean"},
            "engine": {"type": "string"},
            "params": {"type": "object"},
            "primary": {"type": "string"},
            "inputs": {"type": "object"},
            "output": {"type": "object"},
            "examples": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["input", "output"],
                    "properties": {"input": {"type": "object"}, "output": {"type": "object"}},
                },
            },
        },
    }
)  # fmt: skip


class CatalogueError(Exception):
    """The catalogue has problems; ``problems`` lists each, naming the file and the slug."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def load_catalogue(directory: str | None = None) -> Catalogue:
    """Load and check every tool; raises CatalogueError listing every problem found.

    Without ``directory`` the built-in catalogue is loaded once per process; with one, that
    directory is read on every call.
    """
    if directory is None:
        return _load_default()
    return _load(Path(directory))


@functools.cache
def _load_default() -> Catalogue:
    return _load(DEFAULT_DIRECTORY)


def _load(directory: Path) -> Catalogue:
    problems: list[str] = []
    tools: dict[str, Tool] = {}
    # A folder per category; a category's tools may be split over several files.
    files = sorted(directory.glob("*/*.yaml"))
    problems.extend(
        f"{path.name}: tool files belong in a category folder (<category>/{path.name})."
        for path in sorted(directory.glob("*.yaml"))
    )
    if not files and not problems:
        raise CatalogueError([f"{directory}: no tool files (<category>/*.yaml)."])
    found_in: dict[str, str] = {}
    for path in files:
        name = _name(path)
        for tool, tool_problems in _read_file(path):
            problems.extend(tool_problems)
            if tool is None:
                continue
            if tool.slug in tools:
                problems.append(f"{name}: {tool.slug}: slug already used in {found_in[tool.slug]}.")
                continue
            tools[tool.slug] = tool
            found_in[tool.slug] = name
    if problems:
        raise CatalogueError(problems)
    return Catalogue(tools=dict(sorted(tools.items())))


def _name(path: Path) -> str:
    """A tool file as problems name it: ``<category>/<file>.yaml``."""
    return f"{path.parent.name}/{path.name}"


def _read_file(path: Path) -> list[tuple[Tool | None, list[str]]]:
    name = _name(path)
    try:
        records = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        return [(None, [f"{name}: cannot be read: {error}"])]
    if not isinstance(records, list):
        return [(None, [f"{name}: must hold a list of tools."])]
    category = path.parent.name
    results: list[tuple[Tool | None, list[str]]] = []
    for index, record in enumerate(records):
        slug = record.get("slug") if isinstance(record, dict) else None
        where = f"{name}: {slug if isinstance(slug, str) else f'tool #{index + 1}'}"
        if isinstance(record, dict) and isinstance(record.get("output"), dict):
            record = {**record, "output": expand_files(record["output"])}
        problems = [f"{where}: {p}" for p in _check_record(record, category)]
        tool = None if problems else _build(record, category)
        results.append((tool, problems))
    return results


def _build(record: dict[str, Any], category: str) -> Tool:
    return Tool(
        slug=record["slug"],
        name=record["name"],
        category=category,
        summary=record["summary"],
        required_plan=record["required_plan"],
        credit_class=record["credit_class"],
        inputs=record["inputs"],
        primary=record["primary"],
        output=record["output"],
        engine=record["engine"],
        params=record.get("params", {}),
        queue=record["queue"],
        examples=record["examples"],
    )


def _check_record(record: Any, category: str) -> list[str]:
    shape = [
        f"{'.'.join(str(p) for p in e.absolute_path) or 'record'}: {e.message}"
        for e in _RECORD_VALIDATOR.iter_errors(record)
    ]
    if shape:
        return shape
    problems = []
    slug = record["slug"]
    if not SLUG_RE.match(slug):
        problems.append(f"slug must be lowercase words joined by hyphens ({SLUG_RE.pattern}).")
    if slug in RESERVED_SLUGS:
        problems.append(f"slug '{slug}' is reserved.")
    if category not in CATEGORIES:
        problems.append(
            f"unknown category '{category}' (the folder name): use one of {', '.join(CATEGORIES)}."
        )
    found = [p for key in ("inputs", "output") for p in schema_problems(record[key], key)]
    schemas_valid = not found
    problems.extend(found)
    problems.extend(_check_engine(record))
    if schemas_valid:
        problems.extend(_check_inputs(record["inputs"], record["primary"]))
        problems.extend(_check_output(record["output"]))
        problems.extend(_check_examples(record))
    return problems


def schema_problems(schema: Any, name: str) -> list[str]:
    """Problems of the JSON Schema ``name``: the 2020-12 meta-schema's first, then every key
    that is no keyword (a description cut at a comma in a YAML flow mapping leaves one, which
    the meta-schema allows), each at its JSON pointer."""
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        where = _at(_pointer("", error.absolute_path))
        return [f"{name} is not a valid JSON Schema {where}: {error.message}"]
    return list(_keyword_problems(schema, "", name))


def _keyword_problems(schema: Any, pointer: str, name: str) -> Iterator[str]:
    if not isinstance(schema, dict):
        return  # true or false
    for error in _EXTENSIONS.iter_errors(schema):
        where = _at(_pointer(pointer, error.absolute_path))
        yield f"{name} has an invalid extension {where}: {error.message}"
    for key, value in schema.items():
        at = _pointer(pointer, [key])
        if key in _SUBSCHEMA:
            yield from _keyword_problems(value, at, name)
        elif key in _SUBSCHEMA_LISTS:
            for index, item in enumerate(value):
                yield from _keyword_problems(item, _pointer(at, [index]), name)
        elif key in _SUBSCHEMA_MAPS:
            for field, item in value.items():
                yield from _keyword_problems(item, _pointer(at, [field]), name)
        elif key not in KEYWORDS and key not in EXTENSIONS:
            yield (
                f"{name} has an unknown keyword {_at(at)}, neither JSON Schema 2020-12 nor "
                f"{', '.join(sorted(EXTENSIONS))} (a description cut at a comma by a YAML flow "
                "mapping? Quote it)."
            )


def _at(pointer: str) -> str:
    return f"at '{pointer}'" if pointer else "at the top"


def _pointer(base: str, parts: Any) -> str:
    """``base`` followed by ``parts`` as a JSON pointer (RFC 6901)."""
    escaped = (str(part).replace("~", "~0").replace("/", "~1") for part in parts)
    return base + "".join(f"/{part}" for part in escaped)


def _check_engine(record: dict[str, Any]) -> list[str]:
    try:
        engine = engines.get_engine(record["engine"])
    except KeyError:
        return [f"unknown engine '{record['engine']}'."]
    validator = Draft202012Validator(engine.params_schema)
    return [
        f"params do not suit engine {engine.name}: {error.message}"
        for error in validator.iter_errors(record.get("params", {}))
    ]


def _check_inputs(inputs: dict[str, Any], primary: str) -> list[str]:
    problems = []
    if inputs.get("type") != "object" or inputs.get("additionalProperties") is not False:
        problems.append("inputs must be of type object with additionalProperties: false.")
    properties = inputs.get("properties", {})
    for name in sorted(RESERVED_FIELDS & set(properties)):
        problems.append(f"input field '{name}' uses a reserved name.")
    if primary not in properties:
        problems.append(f"primary field '{primary}' is not an input property.")
    if inputs.get("required", []) != [primary]:
        problems.append(f"inputs.required must be exactly ['{primary}'].")
    for name, spec in properties.items():
        if name != primary and "default" not in spec:
            problems.append(f"optional input field '{name}' has no default.")
        if "default" in spec:
            for error in Draft202012Validator(spec).iter_errors(spec["default"]):
                problems.append(f"default of input field '{name}' is invalid: {error.message}")
        problems.extend(_check_strings(spec, name))
    return problems


def _check_strings(spec: Any, where: str) -> list[str]:
    """Every free-text string in the inputs must be bounded, so requests stay cheap."""
    if not isinstance(spec, dict):
        return []
    problems = []
    types = spec.get("type")
    is_string = types == "string" or (isinstance(types, list) and "string" in types)
    if is_string and "enum" not in spec and "const" not in spec:
        limit = spec.get("maxLength")
        most = MAX_FILE_CHARS if "contentMediaType" in spec else MAX_TEXT_LENGTH
        if limit is None:
            problems.append(f"string input '{where}' has no maxLength.")
        elif limit > most:
            problems.append(f"string input '{where}' allows more than {most} characters.")
    for key in ("items", "additionalProperties"):
        problems.extend(_check_strings(spec.get(key), f"{where}.{key}"))
    for name, sub in spec.get("properties", {}).items():
        problems.extend(_check_strings(sub, f"{where}.{name}"))
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for index, sub in enumerate(spec.get(key, [])):
            problems.extend(_check_strings(sub, f"{where}.{key}.{index}"))
    return problems


def expand_files(schema: Any) -> Any:
    """Output properties written as ``{contentMediaType: ...}`` become the stored-file schema."""
    if isinstance(schema, list):
        return [expand_files(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "contentMediaType" in schema and "type" not in schema:
        return {**file_schema(schema["contentMediaType"]), **schema, "type": "object"}
    return {key: expand_files(value) for key, value in schema.items()}


def _check_output(output: dict[str, Any]) -> list[str]:
    if output.get("type") != "object" or output.get("additionalProperties") is not False:
        return ["output must be of type object with additionalProperties: false."]
    return []


def _check_examples(record: dict[str, Any]) -> list[str]:
    problems = []
    inputs = Draft202012Validator(record["inputs"])
    output = Draft202012Validator(record["output"])
    for index, example in enumerate(record["examples"], start=1):
        for error in inputs.iter_errors(example["input"]):
            where = ".".join(str(p) for p in error.absolute_path) or "input"
            problems.append(
                f"example {index} input does not match inputs ({where}): {error.message}"
            )
        for error in output.iter_errors(example["output"]):
            where = ".".join(str(p) for p in error.absolute_path) or "output"
            problems.append(
                f"example {index} output does not match output ({where}): {error.message}"
            )
    return problems
