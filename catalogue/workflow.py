"""A workflow as data (``Workflow``): a DAG of tool steps whose inputs are mapped values.

A mapped value (``Value``) is one of:

- a literal: any YAML value that is not a mapping with ``from`` or ``template``;
- ``{from: POINTER}``: a JSON pointer into the run's document ``{"input": <the workflow
  input>, "steps": {<step id>: {"output": <that step's output>}}}``, so ``/input`` or
  ``/steps/post/output/text`` (``/steps/img/output/images/0`` indexes a list). Options:
  ``max_chars`` cuts a string (at a word boundary), ``max_items`` keeps the first items of a
  list, ``each: FIELD`` turns a list of values into a list of ``{FIELD: value}`` objects
  (``max_chars`` then cuts each value);
- ``{template: "text {/pointer} text"}``: a string with pointers in braces, rendered as text
  (lists joined by ", ", objects as JSON); ``max_chars`` cuts the result.

A step depends on the steps its values point into; a step starts once they all succeeded.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator

from catalogue.tool import TOOL_PLANS, Catalogue, _field_errors

PLACEHOLDER = re.compile(r"\{(/[^{}]*)\}")
_PLAN_RANK = {plan: rank for rank, plan in enumerate(TOOL_PLANS)}


class MissingValue(Exception):
    """A pointer names nothing in the run's document (a missing field or list item)."""

    def __init__(self, pointer: str):
        super().__init__(f"{pointer} has no value")
        self.pointer = pointer


def split_pointer(pointer: str) -> list[str]:
    """The unescaped segments of a JSON pointer (RFC 6901): "/a~1b/0" → ["a/b", "0"]."""
    if not pointer.startswith("/"):
        raise ValueError(f"{pointer!r} is not a JSON pointer (it must start with /)")
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/")]


def step_of(pointer: str) -> str | None:
    """The step a pointer reads from, or None for the workflow input."""
    parts = split_pointer(pointer)
    return parts[1] if parts[0] == "steps" and len(parts) > 1 else None


def lookup(document: Any, pointer: str) -> Any:
    """The value at ``pointer`` in ``document``; raises MissingValue."""
    value = document
    for part in split_pointer(pointer):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            raise MissingValue(pointer)
    return value


def cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, cut at a word boundary when one is near."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ")
    return (head[:space] if space >= limit * 0.8 else head).rstrip()


def as_text(value: Any) -> str:
    """A value rendered into a template: lists joined by ", ", objects as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(not isinstance(item, dict | list) for item in value):
        return ", ".join(as_text(item) for item in value)
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
    return json.dumps(value)


@dataclass(frozen=True)
class Value:
    """One mapped value (see the module docstring); ``kind`` is literal, from or template."""

    kind: str
    source: Any
    each: str | None = None
    max_chars: int | None = None
    max_items: int | None = None

    @property
    def pointers(self) -> list[str]:
        if self.kind == "from":
            return [self.source]
        if self.kind == "template":
            return PLACEHOLDER.findall(self.source)
        return []

    def resolve(self, document: dict) -> Any:
        """The value for one run; raises MissingValue."""
        if self.kind == "literal":
            return copy.deepcopy(self.source)
        if self.kind == "template":
            text = PLACEHOLDER.sub(lambda m: as_text(lookup(document, m.group(1))), self.source)
            return cut(text, self.max_chars) if self.max_chars else text
        value = copy.deepcopy(lookup(document, self.source))
        if isinstance(value, list) and self.max_items is not None:
            value = value[: self.max_items]
        if self.each is not None:
            items = value if isinstance(value, list) else [value]
            return [{self.each: self._cut(item)} for item in items]
        return self._cut(value)

    def _cut(self, value: Any) -> Any:
        if self.max_chars is not None and isinstance(value, str):
            return cut(value, self.max_chars)
        return value


@dataclass(frozen=True)
class Step:
    id: str
    tool: str
    inputs: dict[str, Value]
    depends_on: tuple[str, ...]

    def resolve(self, document: dict) -> dict[str, Any]:
        """The tool's inputs for one run; raises MissingValue."""
        return {name: value.resolve(document) for name, value in self.inputs.items()}


@dataclass(frozen=True)
class Workflow:
    """One workflow. Build it through ``load_workflows``, which checks it against the tools."""

    id: str
    name: str
    summary: str
    input: dict[str, Any]
    example: str
    steps: tuple[Step, ...]
    output: dict[str, Value]
    required_plan: str
    credits: int
    output_schema: dict[str, Any]
    _steps: dict[str, Step] = field(init=False, repr=False)
    _validator: Draft202012Validator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_steps", {step.id: step for step in self.steps})
        object.__setattr__(self, "_validator", Draft202012Validator(self.input))

    def validate(self, value: Any) -> dict[str, list[str]]:
        """Field errors of a workflow input (all under ``input``); empty when it fits."""
        messages: list[str] = []
        for error in self._validator.iter_errors(value):
            messages += [m for _, m in _field_errors(error) if m not in messages]
        return {"input": messages} if messages else {}

    @property
    def binary_input(self) -> bool:
        """Whether the input is a file (a URL or a data: URI)."""
        return "contentMediaType" in self.input

    @property
    def final_step(self) -> Step:
        """The step whose tool a ``workflow.completed`` event names: the last one listed."""
        return self.steps[-1]

    def step(self, step_id: str) -> Step:
        return self._steps[step_id]

    def roots(self) -> list[Step]:
        """The steps that depend on none: they start with the run."""
        return [step for step in self.steps if not step.depends_on]

    def resolve_output(self, document: dict) -> dict[str, Any]:
        """The run's final output; raises MissingValue."""
        return {name: value.resolve(document) for name, value in self.output.items()}

    def to_public(self) -> dict[str, Any]:
        """The workflow as the API lists it (a fresh JSON-able dict)."""
        return {
            "id": self.id,
            "name": self.name,
            "summary": self.summary,
            "required_plan": self.required_plan,
            "credits": self.credits,
            "input_schema": copy.deepcopy(self.input),
            "output_schema": copy.deepcopy(self.output_schema),
            "steps": [
                {"id": step.id, "tool": step.tool, "depends_on": list(step.depends_on)}
                for step in self.steps
            ],
            "example": {"input": self.example},
        }


def required_plan(tools: Catalogue, slugs: list[str]) -> str:
    """The highest plan any of the tools needs."""
    return max((tools.get(slug).required_plan for slug in slugs), key=_PLAN_RANK.__getitem__)


@dataclass(frozen=True)
class WorkflowCatalogue:
    """Every workflow, by id (sorted)."""

    workflows: dict[str, Workflow]

    def get(self, workflow_id: str) -> Workflow | None:
        return self.workflows.get(workflow_id)

    def __len__(self) -> int:
        return len(self.workflows)

    def __iter__(self):
        return iter(self.workflows.values())
