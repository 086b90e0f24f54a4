"""Per-tool request schemas in the OpenAPI document (DESIGN.md section 12).

``POST /v1/tools/run`` takes ``slug`` plus that tool's own fields, so its body is documented
as a ``oneOf`` of one schema per tool, told apart by ``slug`` (a discriminator), each with
the tool's example. Added by an apispec plugin when the path is registered.
"""

import copy

from apispec import BasePlugin

from catalogue import Catalogue, Tool

DISPATCH_PATH = "/v1/tools/run"


def component_name(tool: Tool) -> str:
    return "RunTool_" + tool.slug.replace("-", "_")


def dispatch_body(tool: Tool) -> dict:
    """The dispatcher's body for one tool: ``slug`` + its fields, ``input`` as an alias."""
    inputs = copy.deepcopy(tool.inputs)
    primary = inputs["properties"][tool.primary]
    return {
        "type": "object",
        "title": tool.name,
        "description": f"{tool.summary} `input` is an alias for `{tool.primary}`.",
        "properties": {
            "slug": {"const": tool.slug},
            "input": {**primary, "description": f"Alias for `{tool.primary}`."},
            **inputs["properties"],
        },
        "required": ["slug"],
        "oneOf": [{"required": [tool.primary]}, {"required": ["input"]}],
        "additionalProperties": False,
        "examples": [{"slug": tool.slug, **example["input"]} for example in tool.examples],
    }


class ToolSchemasPlugin(BasePlugin):
    def __init__(self, catalogue: Catalogue):
        self.catalogue = catalogue

    def init_spec(self, spec):
        self.spec = spec

    def operation_helper(self, path=None, operations=None, **kwargs):
        if path != DISPATCH_PATH or "post" not in (operations or {}):
            return
        refs, mapping = [], {}
        for tool in self.catalogue.tools.values():
            name = component_name(tool)
            if name not in self.spec.components.schemas:
                self.spec.components.schema(name, component=dispatch_body(tool))
            refs.append({"$ref": f"#/components/schemas/{name}"})
            mapping[tool.slug] = f"#/components/schemas/{name}"
        content = operations["post"]["requestBody"]["content"]["application/json"]
        content["schema"] = {
            "oneOf": refs,
            "discriminator": {"propertyName": "slug", "mapping": mapping},
        }
