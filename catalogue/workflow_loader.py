"""Read ``catalogue/workflows/*.yaml`` (one workflow a file) and check each against the tools.

A workflow is refused, naming its file, when its id is not URL-safe, reserved, repeated or
not its file's name; its input schema is not a valid JSON Schema of known keywords
(catalogue.loader.schema_problems), or not a bounded string schema its example fits; a
step names an unknown tool, an unknown or missing field, or a pointer to nothing (the
input, or a field of another step's output as that tool's output schema declares it); the
steps form a cycle; a step's output goes nowhere; or a mapped value cannot fit its field:
a file where text is wanted (or the reverse, or a media type the field does not accept),
another JSON type, a string that may be longer than the field allows (``max_chars`` bounds
it) or a list with more items than it allows (``max_items``). What depends on the values of
a run (an empty transcript, say) is checked when the step starts.
"""

from __future__ import annotations

import functools
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft202012Validator

from catalogue.loader import (
    MAX_TEXT_LENGTH,
    RESERVED_SLUGS,
    SLUG_RE,
    CatalogueError,
    load_catalogue,
    schema_problems,
)
from catalogue.tool import MAX_FILE_CHARS, Catalogue
from catalogue.workflow import (
    Step,
    Value,
    Workflow,
    WorkflowCatalogue,
    required_plan,
    split_pointer,
    step_of,
)

DEFAULT_DIRECTORY = Path(__file__).parent / "workflows"
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_STEPS = 20
STEP_ID = r"^[a-z][a-z0-9_]{0,63}$"

_VALUE_OPTIONS = {
    "max_chars": {"type": "integer", "minimum": 1},
    "max_items": {"type": "integer", "minimum": 1},
}
_FROM = {
    "type": "object",
    "additionalProperties": False,
    "required": ["from"],
    "properties": {
        "from": {"type": "string", "pattern": "^/"},
        "each": {"type": "string", "minLength": 1},
        **_VALUE_OPTIONS,
    },
}
_TEMPLATE = {
    "type": "object",
    "additionalProperties": False,
    "required": ["template"],
    "properties": {
        "template": {"type": "string", "minLength": 1},
        "max_chars": _VALUE_OPTIONS["max_chars"],
    },
}
_MAPPING_VALIDATOR = Draft202012Validator({"oneOf": [_FROM, _TEMPLATE]})
_RECORD_VALIDATOR = Draft202012Validator(
    {
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "name", "summary", "input", "example", "steps", "output"],
        "properties": {
            "id": {"type": "string"},
            "name": {"type": "string", "minLength": 1, "maxLength": 80},
            "summary": {"type": "string", "minLength": 1, "maxLength": 300},
            "input": {"type": "object"},
            "example": {"type": "string", "minLength": 1},
            "steps": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_STEPS,
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["id", "tool", "input"],
                    "properties": {
                        "id": {"type": "string", "pattern": STEP_ID},
                        "tool": {"type": "string"},
                        "input": {"type": "object", "minProperties": 1},
                    },
                },
            },
            "output": {
                "type": "object",
                "minProperties": 1,
                "propertyNames": {"pattern": STEP_ID},
                "additionalProperties": {"oneOf": [_FROM, _TEMPLATE]},
            },
        },
    }
)  # fmt: skip


class _BadPointer(Exception):
    pass


def load_workflows(
    directory: str | Path | None = None, tools: Catalogue | None = None
) -> WorkflowCatalogue:
    """Load and check every workflow against ``tools`` (default: the built-in catalogue);
    raises CatalogueError listing every problem found.

    The built-in workflows on the built-in tools are loaded once per process; any other
    directory or catalogue is read on every call.
    """
    if directory is None and tools is None:
        return _load_default()
    return _load(Path(directory or DEFAULT_DIRECTORY), tools or load_catalogue())


@functools.cache
def _load_default() -> WorkflowCatalogue:
    return _load(DEFAULT_DIRECTORY, load_catalogue())


def _load(directory: Path, tools: Catalogue) -> WorkflowCatalogue:
    files = sorted(directory.glob("*.yaml"))
    if not files:
        raise CatalogueError([f"{directory}: no workflow files (*.yaml)."])
    problems: list[str] = []
    workflows: dict[str, Workflow] = {}
    for path in files:
        name = f"workflows/{path.name}"
        try:
            record = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
            problems.append(f"{name}: cannot be read: {error}")
            continue
        found = _check_record(record, path.stem, tools)
        if found:
            problems.extend(f"{name}: {problem}" for problem in found)
            continue
        if record["id"] in workflows:
            problems.append(f"{name}: the id {record['id']} is already used.")
            continue
        workflows[record["id"]] = _build(record, tools)
    if problems:
        raise CatalogueError(problems)
    return WorkflowCatalogue(workflows=dict(sorted(workflows.items())))


def _check_record(record: Any, stem: str, tools: Catalogue) -> list[str]:
    shape = [
        f"{'.'.join(str(p) for p in e.absolute_path) or 'record'}: {e.message}"
        for e in _RECORD_VALIDATOR.iter_errors(record)
    ]
    if shape:
        return shape
    problems = _check_id(record["id"], stem) + _check_input(record["input"], record["example"])
    steps = record["steps"]
    ids = [step["id"] for step in steps]
    problems += [
        f"step id {i} is used twice." for i in sorted({i for i in ids if ids.count(i) > 1})
    ]
    unknown = [step["tool"] for step in steps if step["tool"] not in tools]
    problems += [f"step uses the unknown tool {slug}." for slug in unknown]
    if problems:
        return problems
    document = _document_schema(record["input"], {s["id"]: tools.get(s["tool"]) for s in steps})
    for step in steps:
        problems += _check_step(step, document, tools, set(ids))
    for name, spec in record["output"].items():
        problems += _check_value(f"output {name}", _value(spec), None, document, set(ids), None)
    if problems:
        return problems
    return _check_graph(record)


def _check_id(workflow_id: str, stem: str) -> list[str]:
    problems = []
    if not SLUG_RE.match(workflow_id):
        problems.append(f"id must be lowercase words joined by hyphens ({SLUG_RE.pattern}).")
    if workflow_id in RESERVED_SLUGS:
        problems.append(f"id '{workflow_id}' is reserved.")
    if workflow_id != stem:
        problems.append(f"id '{workflow_id}' must be the file's name ({stem}.yaml holds {stem}).")
    return problems


def _check_input(schema: dict, example: str) -> list[str]:
    problems = schema_problems(schema, "input")
    if problems:
        return problems
    if schema.get("type") != "string":
        return ["input must be a string schema (the workflow input is one string)."]
    most = MAX_FILE_CHARS if "contentMediaType" in schema else MAX_TEXT_LENGTH
    if not 0 < schema.get("maxLength", 0) <= most:
        return [f"input needs a maxLength of at most {most}."]
    if "description" not in schema:
        return ["input needs a description."]
    return [
        f"example does not fit the input schema: {error.message}"
        for error in Draft202012Validator(schema).iter_errors(example)
    ]


def _document_schema(input_schema: dict, tools_by_step: dict) -> dict:
    """The schema of a run's document: its input and each step's output."""

    def closed(properties: dict) -> dict:
        return {"type": "object", "additionalProperties": False, "properties": properties}

    steps = {step: closed({"output": tool.output}) for step, tool in tools_by_step.items()}
    return closed({"input": input_schema, "steps": closed(steps)})


def _value(spec: Any) -> Value:
    if isinstance(spec, dict) and "from" in spec:
        options = {k: spec[k] for k in ("each", "max_chars", "max_items") if k in spec}
        return Value("from", spec["from"], **options)
    if isinstance(spec, dict) and "template" in spec:
        return Value("template", spec["template"], max_chars=spec.get("max_chars"))
    return Value("literal", spec)


def _check_step(step: dict, document: dict, tools: Catalogue, ids: set[str]) -> list[str]:
    tool = tools.get(step["tool"])
    where = f"step {step['id']} ({tool.slug})"
    properties = tool.inputs.get("properties", {})
    problems = [
        f"{where}: {tool.slug} has no input field '{name}'."
        for name in step["input"]
        if name not in properties
    ]
    problems += [
        f"{where}: the required field '{name}' is not mapped."
        for name in tool.inputs.get("required", [])
        if name not in step["input"]
    ]
    for name, spec in step["input"].items():
        if name not in properties:
            continue
        shape = [e.message for e in _MAPPING_VALIDATOR.iter_errors(spec)]
        if isinstance(spec, dict) and {"from", "template"} & set(spec) and shape:
            problems.append(f"{where}: {name}: not a valid mapping ({shape[0]}).")
            continue
        problems += _check_value(
            f"{where}: {name}", _value(spec), properties[name], document, ids, step["id"]
        )
    return problems


def _check_value(
    where: str, value: Value, target: dict | None, document: dict, ids: set, own: str | None
) -> list[str]:
    """Problems of one mapped value; ``target`` is the field's schema (None: no field)."""
    if value.kind == "literal":
        if target is None:
            return [f"{where}: must be a mapping ({{from: ...}} or {{template: ...}})."]
        return [
            f"{where}: {e.message}" for e in Draft202012Validator(target).iter_errors(value.source)
        ]
    sources = []
    for pointer in value.pointers:
        step = step_of(pointer)
        if step == own:
            return [f"{where}: {pointer} points into the step itself."]
        if step is not None and step not in ids:
            return [f"{where}: {pointer} names no step of this workflow."]
        try:
            sources.append(_schema_at(document, pointer))
        except _BadPointer as bad:
            return [f"{where}: {bad}"]
    if value.kind == "template":
        files = [p for p, s in zip(value.pointers, sources, strict=True) if _is_file(s)]
        if files:
            return [f"{where}: {files[0]} is a file; a template takes its url field."]
        if not value.pointers:
            return [f"{where}: the template has no {{/pointer}}; write the text as a literal."]
        sources = [{"type": "string"}]
    if target is None:
        return []
    if value.each is not None:
        return _check_each(where, value, sources[0], target)
    return _check_fit(
        where, value.source if value.kind == "from" else "the template", sources[0], target, value
    )


def _check_each(where: str, value: Value, source: dict, target: dict) -> list[str]:
    item = target.get("items", {}) if target.get("type") == "array" else {}
    field = item.get("properties", {}).get(value.each)
    if field is None:
        return [f"{where}: the field takes no list of objects with '{value.each}'."]
    types = _types(source)
    if types is not None and "array" not in types:
        return [f"{where}: {value.source} is not a list (each needs one)."]
    problems = _check_items(where, value, source, target)
    return problems + _check_fit(
        f"{where}[].{value.each}", value.source, source.get("items", {}), field, value
    )


def _check_fit(where: str, source_name: str, source: dict, target: dict, value: Value) -> list[str]:
    if "contentMediaType" in target:
        if not _is_file(source):
            return [f"{where}: the field takes a file and {source_name} is not one."]
        accepted = target.get("x-accept") or [target["contentMediaType"]]
        # The workflow input may accept several types: each must suit the field.
        offered = source.get("x-accept") or [source["contentMediaType"]]
        unfit = [m for m in offered if not any(fnmatch(m, a) or fnmatch(a, m) for a in accepted)]
        if unfit:
            return [f"{where}: {source_name} is {unfit[0]}; the field takes {', '.join(accepted)}."]
        return []
    if _is_file(source):
        return [f"{where}: {source_name} is a file; point at its url field for text."]
    have, want = _types(source), _types(target)
    if have is not None and want is not None and not _overlap(have - {"null"} or have, want):
        return [
            f"{where}: {source_name} is {'/'.join(sorted(have))}; "
            f"the field takes {'/'.join(sorted(want))}."
        ]
    problems = []
    if "maxLength" in target and (want is None or "string" in want):
        bounds = [b for b in (value.max_chars, _max_length(source)) if b is not None]
        if not bounds or min(bounds) > target["maxLength"]:
            problems.append(
                f"{where}: {source_name} may be longer than the field's {target['maxLength']} "
                f"characters; bound it with max_chars."
            )
    return problems + _check_items(where, value, source, target)


def _check_items(where: str, value: Value, source: dict, target: dict) -> list[str]:
    if "maxItems" not in target:
        return []
    bound = value.max_items or source.get("maxItems")
    if bound is None or bound > target["maxItems"]:
        return [
            f"{where}: the list may have more than the field's {target['maxItems']} items; "
            "bound it with max_items."
        ]
    return []


def _schema_at(schema: dict, pointer: str) -> dict:
    """The schema of the value at ``pointer``; {} where the schema says nothing more."""
    try:
        parts = split_pointer(pointer)
    except ValueError as error:
        raise _BadPointer(str(error)) from None
    walked = ""
    for part in parts:
        types = _types(schema) or set()
        if "object" in types or "properties" in schema:
            properties = schema.get("properties", {})
            if part in properties:
                schema = properties[part]
            elif schema.get("additionalProperties") is False:
                known = ", ".join(sorted(properties)) or "nothing"
                raise _BadPointer(
                    f"{pointer}: {walked or '/'} has no field '{part}' (it has {known})."
                )
            else:
                return {}
        elif "array" in types:
            if not part.isdigit():
                raise _BadPointer(f"{pointer}: {walked} is a list; index it with a number.")
            schema = schema.get("items", {})
        elif types:
            raise _BadPointer(
                f"{pointer}: {walked} is a {'/'.join(sorted(types))}, not an object or a list."
            )
        else:
            return {}
        walked += f"/{part}"
    return schema


def _is_file(schema: dict) -> bool:
    return "contentMediaType" in schema


def _types(schema: dict) -> set[str] | None:
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return set(declared)
    if "enum" in schema:
        return {_json_type(item) for item in schema["enum"]}
    if "const" in schema:
        return {_json_type(schema["const"])}
    return None


def _json_type(value: Any) -> str:
    names = {
        bool: "boolean",
        int: "integer",
        float: "number",
        str: "string",
        list: "array",
        dict: "object",
    }
    return "null" if value is None else names.get(type(value), "string")


def _overlap(have: set[str], want: set[str]) -> bool:
    return bool(have & want) or ("integer" in have and "number" in want)


def _max_length(schema: dict) -> int | None:
    if "maxLength" in schema:
        return schema["maxLength"]
    if "enum" in schema and all(isinstance(item, str) for item in schema["enum"]):
        return max(len(item) for item in schema["enum"])
    if isinstance(schema.get("const"), str):
        return len(schema["const"])
    return None


def _check_graph(record: dict) -> list[str]:
    """The steps must form a DAG, and each step's output must be used."""
    depends = {step["id"]: _depends_on(step) for step in record["steps"]}
    cycle = _find_cycle(depends)
    if cycle:
        return [f"the steps form a cycle: {' → '.join(cycle)}."]
    used = {dep for deps in depends.values() for dep in deps}
    used |= {step_of(p) for spec in record["output"].values() for p in _value(spec).pointers}
    return [
        f"step {step}'s output is used by no step and not in the output."
        for step in depends
        if step not in used
    ]


def _depends_on(step: dict) -> tuple[str, ...]:
    found: list[str] = []
    for spec in step["input"].values():
        for pointer in _value(spec).pointers:
            name = step_of(pointer)
            if name is not None and name not in found:
                found.append(name)
    return tuple(found)


def _find_cycle(depends: dict[str, tuple[str, ...]]) -> list[str] | None:
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for dep in depends.get(node, ()):
            if state.get(dep) == "open":
                return path[path.index(dep) :] + [dep]
            if dep not in state and (cycle := visit(dep)):
                return cycle
        state[node] = "done"
        path.pop()
        return None

    for node in depends:
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def _build(record: dict, tools: Catalogue) -> Workflow:
    steps = tuple(
        Step(
            id=step["id"],
            tool=step["tool"],
            inputs={name: _value(spec) for name, spec in step["input"].items()},
            depends_on=_depends_on(step),
        )
        for step in record["steps"]
    )
    output = {name: _value(spec) for name, spec in record["output"].items()}
    document = _document_schema(record["input"], {s.id: tools.get(s.tool) for s in steps})
    slugs = [step.tool for step in steps]
    return Workflow(
        id=record["id"],
        name=record["name"],
        summary=record["summary"],
        input=record["input"],
        example=record["example"],
        steps=steps,
        output=output,
        required_plan=required_plan(tools, slugs),
        credits=sum(tools.get(slug).credits for slug in slugs),
        output_schema=_output_schema(output, document),
    )


def _output_schema(output: dict[str, Value], document: dict) -> dict:
    properties = {}
    for name, value in output.items():
        if value.kind == "template":
            properties[name] = {"type": "string"}
        elif value.each is not None:
            item = _schema_at(document, value.source).get("items", {})
            properties[name] = {
                "type": "array",
                "items": {"type": "object", "properties": {value.each: item}},
            }
        else:
            properties[name] = _schema_at(document, value.source)
    return {
        "type": "object",
        "additionalProperties": False,
        "required": list(output),
        "properties": properties,
    }
