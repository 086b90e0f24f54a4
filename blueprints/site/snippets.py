"""The "API" panel of a tool page: the same run as curl, Python and JavaScript calls, for
exactly the inputs in the form, the key shown as a placeholder."""

from __future__ import annotations

import json
import pprint
import shlex
from typing import Any

from blueprints.site.forms import FormField
from catalogue import Tool

KEY_PLACEHOLDER = "$SVC_API_KEY"


def snippets(
    tool: Tool, fields: list[FormField], inputs: dict[str, Any], base_url: str
) -> dict[str, str]:
    """``{"curl": ..., "python": ..., "javascript": ...}`` for a run of ``tool`` with
    ``inputs`` (typed values; a file field is sent as a file the caller names)."""
    url = f"{base_url.rstrip('/')}/v1/public/tools/{tool.slug}/run"
    files = [spec.name for spec in fields if spec.kind == "file"]
    body = {name: value for name, value in inputs.items() if name not in files}
    if files:
        return _multipart(url, body, files)
    text = json.dumps(body, indent=2, ensure_ascii=False)
    return {
        "curl": (
            f"curl -X POST {shlex.quote(url)} \\\n"
            f'  -H "X-SVC-API-Key: {KEY_PLACEHOLDER}" \\\n'
            '  -H "Content-Type: application/json" \\\n'
            f"  -d {shlex.quote(json.dumps(body, ensure_ascii=False))}"
        ),
        "python": (
            "import os\n\nimport requests\n\n"
            "response = requests.post(\n"
            f"    {url!r},\n"
            '    headers={"X-SVC-API-Key": os.environ["SVC_API_KEY"]},\n'
            f"    json={_python(body, 4)},\n"
            "    timeout=120,\n"
            ")\nresponse.raise_for_status()\n"
            'print(response.json()["output"])'
        ),
        "javascript": (
            f"const response = await fetch({json.dumps(url)}, {{\n"
            '  method: "POST",\n'
            "  headers: {\n"
            '    "X-SVC-API-Key": process.env.SVC_API_KEY,\n'
            '    "Content-Type": "application/json",\n'
            "  },\n"
            f"  body: JSON.stringify({_indent(text, 2)}),\n"
            "});\n"
            "if (!response.ok) throw new Error(await response.text());\n"
            "console.log((await response.json()).output);"
        ),
    }


def _multipart(url: str, body: dict, files: list[str]) -> dict[str, str]:
    """A tool that takes files: a multipart form, each file field naming a local file."""
    fields = {
        name: value if isinstance(value, str) else json.dumps(value) for name, value in body.items()
    }
    curl_fields = "".join(f" \\\n  -F {shlex.quote(f'{k}={v}')}" for k, v in fields.items())
    curl_files = "".join(f" \\\n  -F {shlex.quote(f'{name}=@{name}.file')}" for name in files)
    python_files = ", ".join(f'"{name}": open("{name}.file", "rb")' for name in files)
    js_fields = "".join(
        f"form.append({json.dumps(k)}, {json.dumps(v)});\n" for k, v in fields.items()
    )
    js_files = "".join(
        f'form.append("{name}", new Blob([await fs.readFile("{name}.file")]), "{name}.file");\n'
        for name in files
    )
    return {
        "curl": f"curl -X POST {shlex.quote(url)} \\\n"
        f'  -H "X-SVC-API-Key: {KEY_PLACEHOLDER}"{curl_fields}{curl_files}',
        "python": (
            "import os\n\nimport requests\n\n"
            "response = requests.post(\n"
            f"    {url!r},\n"
            '    headers={"X-SVC-API-Key": os.environ["SVC_API_KEY"]},\n'
            f"    data={_python(fields, 4)},\n"
            f"    files={{{python_files}}},\n"
            "    timeout=300,\n"
            ")\nresponse.raise_for_status()\n"
            'print(response.json()["output"])'
        ),
        "javascript": (
            'import fs from "node:fs/promises";\n\n'
            "const form = new FormData();\n"
            f"{js_fields}{js_files}"
            f"const response = await fetch({json.dumps(url)}, {{\n"
            '  method: "POST",\n'
            '  headers: { "X-SVC-API-Key": process.env.SVC_API_KEY },\n'
            "  body: form,\n"
            "});\n"
            "if (!response.ok) throw new Error(await response.text());\n"
            "console.log((await response.json()).output);"
        ),
    }


def _python(value: Any, indent: int) -> str:
    """``value`` (JSON-like) as a Python literal, laid out for reading."""
    return _indent(pprint.pformat(value, width=88 - indent, sort_dicts=False), indent)


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return text.replace("\n", "\n" + pad)
