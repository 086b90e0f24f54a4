"""Per-tool schemas in the OpenAPI document (docs/architecture/openapi.md), added by an apispec
plugin.

- ``RunTool_<slug>``: ``POST /v1/tools/run`` takes ``slug`` plus that tool's own fields, so its
  body is a ``oneOf`` of one schema per tool, told apart by ``slug`` (a discriminator); every
  tool's example input is a named example of that body, keyed by slug.
- ``ToolOutput_<slug>``: the tool's output schema, with its example output.
- ``RunOutputByTool``: ties a run's ``output`` to its ``tool``; ``RunResult`` and
  ``RunRecord`` (the run endpoints' answers, the status and cancel answers) apply it through
  ``dependentSchemas``.

The schemas are written for client generators as well as validators: each is titled after its
tool (``AudioChannelConverterInput``, ``...Output``: generators name models by ``title``), and
no schema mixes ``properties`` with a ``oneOf`` or a one-item ``allOf`` (openapi-python-client
reads the first as ``Any`` and the second as an alias of the item, losing the model).

``GET /v1/tools/{slug}`` still answers each tool's schemas as data (``Tool.to_public``).
"""

import copy
import re
import weakref
from collections.abc import Callable

from apispec import BasePlugin
from apispec.exceptions import DuplicateComponentNameError
from apispec.ext.marshmallow.common import resolve_schema_instance

from blueprints.api.docs import STREAM_FIELD, SavedExample, result_example
from blueprints.api.schemas import RunResultSchema
from catalogue import Catalogue, Tool

DISPATCH_PATH = "/v1/tools/run"
OUTPUT_BY_TOOL = "RunOutputByTool"


def component_name(tool: Tool, kind: str = "RunTool") -> str:
    """``RunTool_<slug>`` (the dispatcher's body) or ``ToolOutput_<slug>``, ``-`` as ``_``."""
    return f"{kind}_" + tool.slug.replace("-", "_")


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def model_title(tool: Tool, kind: str) -> str:
    """``AudioChannelConverterInput`` for ``audio-channel-converter``: the class name client
    generators give the tool's ``Input`` or ``Output`` schema (they name models by title)."""
    words = re.split(r"[^A-Za-z0-9]+", tool.slug)
    return "".join(word[:1].upper() + word[1:] for word in words) + kind


def dispatch_body(tool: Tool) -> dict:
    """The dispatcher's body for one tool: ``slug`` + its fields, ``input`` as an alias.

    "``input`` or the primary field, not both" is said in the description only: the API
    enforces it (``tool_inputs``), and as a ``oneOf`` of two ``required`` lists it made
    generated clients type the whole body as ``Any``.
    """
    inputs = copy.deepcopy(tool.inputs)
    primary = inputs["properties"][tool.primary]
    return {
        "type": "object",
        "title": model_title(tool, "Input"),
        "description": f"{tool.name}: {tool.summary} Send `input` or `{tool.primary}` (`input` "
        "is its alias), not both.",
        "properties": {
            "slug": {"const": tool.slug},
            "input": {**primary, "description": f"Alias for `{tool.primary}`."},
            **inputs["properties"],
            "stream": STREAM_FIELD,
        },
        "required": ["slug"],
        "additionalProperties": False,
    }


def dispatch_example(tool: Tool) -> dict:
    """The dispatcher's body for ``tool``'s first example."""
    return {"slug": tool.slug, **copy.deepcopy(tool.examples[0]["input"])}


def output_component(tool: Tool) -> dict:
    """The tool's output schema (as ``GET /v1/tools/{slug}`` shows it) with its examples."""
    return {
        **copy.deepcopy(tool.output),
        "title": model_title(tool, "Output"),
        "examples": [copy.deepcopy(example["output"]) for example in tool.examples],
    }


def output_by_tool(tools: list[Tool]) -> dict:
    """``if tool is <slug> then output is ToolOutput_<slug> (or null)``, for every tool.

    Why not a ``oneOf`` (or ``anyOf``) of the output components on ``output``: tools share
    output shapes (many answer ``{"text": ...}``), so an output matches several branches and a
    ``oneOf`` refuses valid answers; an ``anyOf`` accepts any tool's output for any tool, which
    leaves schemathesis's response check with little to catch. Keyed by ``tool``, each answer
    is checked against exactly its own tool's schema, and runs of the plan-gated endpoints'
    tools (not in the catalogue; their endpoints document their outputs, and the status
    endpoint shows them too) are left alone. ``output`` is null until a run has succeeded.
    """
    return {
        "description": "A run's `output` is exactly its tool's output schema, the "
        "`ToolOutput_<slug>` component (`-` in the slug written `_`), or null until the run "
        "has succeeded.",
        "allOf": [
            {
                "if": {"properties": {"tool": {"const": tool.slug}}, "required": ["tool"]},
                "then": {
                    "properties": {
                        "output": {
                            "anyOf": [_ref(component_name(tool, "ToolOutput")), {"type": "null"}]
                        }
                    }
                },
            }
            for tool in tools
        ],
    }


def category_examples(catalogue: Catalogue, runnable: Callable[[Tool], bool]) -> list[SavedExample]:
    """One dispatcher request per category (its first tool by slug that is ``runnable``, else
    its first, with its example input), answered by the example output: the Postman
    collection's "Tools by category"."""
    examples = []
    for category in catalogue.categories():
        tools = catalogue.filter(category=category)
        tool = next((tool for tool in tools if runnable(tool)), tools[0])
        examples.append(
            SavedExample(
                name=f"{category}: {tool.name}",
                body=dispatch_example(tool),
                description=f"{tool.summary} Plan: {tool.required_plan}. "
                f"More {category} tools: GET /v1/tools?category={category}.",
                response=result_example(tool),
            )
        )
    return examples


def _examples_first(tools: list[Tool], slug: str | None) -> list[Tool]:
    """``tools`` with the tool named ``slug`` first: the example Postman and Swagger UI show."""
    return sorted(tools, key=lambda tool: tool.slug != slug)


_COMPONENTS: dict[int, tuple[weakref.ref, dict[str, dict]]] = {}


def tool_components(catalogue: Catalogue) -> dict[str, dict]:
    """Every tool's dispatcher body and output component, and ``RunOutputByTool``, by
    component name: made once per catalogue, shared by the apps of a process (read only)."""
    known = _COMPONENTS.get(id(catalogue))
    if known is not None and known[0]() is catalogue:
        return known[1]
    tools = list(catalogue)
    components: dict[str, dict] = {}
    for tool in tools:
        components[component_name(tool)] = dispatch_body(tool)
        components[component_name(tool, "ToolOutput")] = output_component(tool)
    components[OUTPUT_BY_TOOL] = output_by_tool(tools)
    key = id(catalogue)
    _COMPONENTS[key] = (weakref.ref(catalogue, lambda _ref: _COMPONENTS.pop(key, None)), components)
    return components


class ToolSchemasPlugin(BasePlugin):
    def __init__(self, catalogue: Catalogue):
        self.catalogue = catalogue

    def init_spec(self, spec):
        self.spec = spec
        # Made once per catalogue and set as they are: apispec's own way (a deep copy of
        # each, then a walk resolving references they do not have) made these 925 schemas
        # two fifths of every create_app().
        for name, component in tool_components(self.catalogue).items():
            if name in spec.components.schemas:
                raise DuplicateComponentNameError(f"{name} is registered twice")
            spec.components.schemas[name] = component

    def schema_helper(self, name, definition, schema=None, **kwargs):
        """``RunResult`` and ``RunRecord`` (a subclass) apply ``RunOutputByTool`` when
        ``tool`` is there (always: it is required). ``dependentSchemas`` checks answers as an
        ``allOf`` would, and generators that do not know it leave the models whole."""
        if schema is not None and isinstance(resolve_schema_instance(schema), RunResultSchema):
            return {"dependentSchemas": {"tool": _ref(OUTPUT_BY_TOOL)}}
        return None

    def operation_helper(self, path=None, operations=None, **kwargs):
        if path != DISPATCH_PATH or "post" not in (operations or {}):
            return
        tools = list(self.catalogue)
        content = operations["post"]["requestBody"]["content"]["application/json"]
        # A media type has `example` or `examples`, not both: the single one goes first.
        shown_first = (content.pop("example", None) or {}).get("slug")
        content["schema"] = {
            "oneOf": [_ref(component_name(tool)) for tool in tools],
            "discriminator": {
                "propertyName": "slug",
                "mapping": {
                    tool.slug: f"#/components/schemas/{component_name(tool)}" for tool in tools
                },
            },
        }
        content["examples"] = {
            tool.slug: {"summary": tool.name, "value": dispatch_example(tool)}
            for tool in _examples_first(tools, shown_first)
        }
