"""YAML, XML, TOML, INI and .env conversions, and the convert.data engine (tables: tabular.py)."""

from __future__ import annotations

import json
import re
from typing import Any

from engines.base import ChoiceEngine, EngineError
from engines.convert._helpers import (
    MAX_DEPTH,
    MAX_NODES,
    _bounded,
    _check_size,
    _dump_json,
    _parse_json,
    _plain,
)
from engines.convert.tabular import (
    _csv_to_json,
    _csv_to_markdown,
    _format_markdown_table,
    _html_table_to_csv,
    _infer_scalar,
    _json_to_csv,
)


def _yaml_error(error: Exception) -> EngineError:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or getattr(error, "context", None) or str(error)
    if mark is None:
        return EngineError(f"The YAML is invalid: {problem}.")
    return EngineError(
        f"The YAML is invalid: line {mark.line + 1}, column {mark.column + 1}: {problem}."
    )


def _json_to_yaml(inputs: dict[str, Any]) -> dict[str, Any]:
    import yaml

    value = _parse_json(inputs["json"])
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    text = yaml.dump(
        value,
        Dumper=dumper,
        sort_keys=inputs["sort_keys"],
        allow_unicode=True,
        default_flow_style=False,
        indent=inputs["indent"],
        width=100,
    )
    return {"yaml": _bounded(text)}


def _yaml_to_json(inputs: dict[str, Any]) -> dict[str, Any]:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        documents = list(yaml.load_all(inputs["yaml"], Loader=loader))
    except yaml.YAMLError as error:
        raise _yaml_error(error) from None
    except RecursionError:
        raise EngineError(f"The YAML is nested more than {MAX_DEPTH} levels deep.") from None
    if not documents:
        raise EngineError("The YAML holds no document.")
    _check_size(documents, "The YAML")
    value = _plain(documents[0] if len(documents) == 1 else documents)
    return {"json": _dump_json(value, inputs["indent"]), "documents": len(documents)}


def _parse_xml(text: str, keep_comments: bool = False) -> Any:
    """Parse XML into an ElementTree element; DOCTYPE (and so entity definitions) refused.

    expat is driven directly so that no DTD is ever processed (no entity expansion bombs, no
    external entities), and element prefixes stay as written (``ns:tag``).
    """
    import xml.etree.ElementTree as ET
    from xml.parsers import expat

    builder = ET.TreeBuilder(insert_comments=keep_comments)
    parser = expat.ParserCreate()
    parser.buffer_text = True
    depth = 0
    elements = 0

    def start(name: str, attributes: dict[str, str]) -> None:
        nonlocal depth, elements
        depth += 1
        elements += 1
        if depth > MAX_DEPTH:
            raise EngineError(f"The XML is nested more than {MAX_DEPTH} levels deep.")
        if elements > MAX_NODES:
            raise EngineError(f"The XML has more than {MAX_NODES:,} elements.")
        builder.start(name, attributes)

    def end(name: str) -> None:
        nonlocal depth
        depth -= 1
        builder.end(name)

    def refuse_doctype(*_args: Any) -> None:
        raise EngineError(
            "DOCTYPE declarations are not accepted (they can define entities); remove the "
            "<!DOCTYPE ...> part."
        )

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = builder.data
    if keep_comments:
        parser.CommentHandler = builder.comment
    parser.StartDoctypeDeclHandler = refuse_doctype
    parser.EntityDeclHandler = refuse_doctype
    try:
        parser.Parse(text, True)
    except expat.ExpatError as error:
        raise EngineError(
            f"The XML is invalid: line {error.lineno}, column {error.offset + 1}: "
            f"{expat.ErrorString(error.code)}."
        ) from None
    return builder.close()


def _element_to_json(element: Any, prefix: str) -> Any:
    """An element as JSON: attributes as ``<prefix>name``, text as ``#text``, repeats as lists.

    An element with neither attributes nor children is its text (null when empty).
    """
    result: dict[str, Any] = {f"{prefix}{name}": value for name, value in element.attrib.items()}
    groups: dict[str, list[Any]] = {}
    texts = [element.text or ""]
    for child in element:
        texts.append(child.tail or "")
        groups.setdefault(child.tag, []).append(_element_to_json(child, prefix))
    for tag, values in groups.items():
        if tag in result:
            raise EngineError(
                f"<{element.tag}> has an attribute and a child both named '{tag}'; use an "
                "attribute prefix such as @."
            )
        result[tag] = values[0] if len(values) == 1 else values
    text = " ".join(part.strip() for part in texts if part.strip())
    if not result:
        return text or None
    if text:
        result["#text"] = text
    return result


def _xml_to_json(inputs: dict[str, Any]) -> dict[str, Any]:
    root = _parse_xml(inputs["xml"])
    value = {root.tag: _element_to_json(root, inputs["attribute_prefix"])}
    return {"json": _dump_json(value, inputs["indent"]), "root": root.tag}


_XML_NAME_RE = re.compile(r"[^\W\d][\w.-]*(?::[^\W\d][\w.-]*)?")


def _xml_name(name: str) -> str:
    if not _XML_NAME_RE.fullmatch(name) or name.lower().startswith("xml"):
        raise EngineError(f"'{name}' cannot be an XML element or attribute name; rename the key.")
    return name


def _xml_text(value: Any) -> str:
    if isinstance(value, dict | list):
        raise EngineError("Attributes and #text must be plain values, not objects or arrays.")
    return "" if value is None else value if isinstance(value, str) else json.dumps(value)


def _add_xml(parent: Any, tag: str, value: Any, prefix: str) -> None:
    """Append ``value`` under ``parent`` as <tag> elements (one per item of a list)."""
    import xml.etree.ElementTree as ET

    if isinstance(value, list):
        for item in value:
            _add_xml(parent, tag, item, prefix)
        return
    element = ET.SubElement(parent, _xml_name(tag))
    _fill_xml(element, value, prefix)


def _fill_xml(element: Any, value: Any, prefix: str) -> None:
    if not isinstance(value, dict):
        element.text = _xml_text(value) or None
        return
    for key, item in value.items():
        if key == "#text":
            element.text = _xml_text(item) or None
        elif prefix and key.startswith(prefix):
            element.set(_xml_name(key[len(prefix) :]), _xml_text(item))
        else:
            _add_xml(element, key, item, prefix)


def _serialize_xml(root: Any, indent: int, declaration: bool) -> str:
    import xml.etree.ElementTree as ET

    if indent:
        ET.indent(root, space=" " * indent)
    text = ET.tostring(root, encoding="unicode")
    if declaration:
        text = '<?xml version="1.0" encoding="UTF-8"?>\n' + text
    return _bounded(text)


def _json_to_xml(inputs: dict[str, Any]) -> dict[str, Any]:
    import xml.etree.ElementTree as ET

    value = _parse_json(inputs["json"])
    prefix = inputs["attribute_prefix"]
    single = (
        isinstance(value, dict)
        and len(value) == 1
        and not isinstance(next(iter(value.values())), list)
        and not (prefix and next(iter(value)).startswith(prefix))
        and next(iter(value)) != "#text"
    )
    if single:
        tag, content = next(iter(value.items()))
    else:
        tag, content = inputs["root"], value
    root = ET.Element(_xml_name(tag))
    if isinstance(content, list):
        for item in content:
            _add_xml(root, "item", item, prefix)
    else:
        _fill_xml(root, content, prefix)
    xml = _serialize_xml(root, inputs["indent"], inputs["declaration"])
    return {"xml": xml, "root": root.tag}


def _strip_whitespace_text(root: Any) -> None:
    for element in root.iter():
        if element.text is not None and not element.text.strip() and len(element):
            element.text = None
        if element.tail is not None and not element.tail.strip():
            element.tail = None


def _format_xml(inputs: dict[str, Any]) -> dict[str, Any]:
    root = _parse_xml(inputs["xml"], keep_comments=not inputs["strip_comments"])
    _strip_whitespace_text(root)
    xml = _serialize_xml(root, inputs["indent"], inputs["declaration"])
    return {"xml": xml, "elements": sum(1 for e in root.iter() if isinstance(e.tag, str))}


def _toml_to_json(inputs: dict[str, Any]) -> dict[str, Any]:
    import tomllib

    try:
        value = tomllib.loads(inputs["toml"])
    except tomllib.TOMLDecodeError as error:
        raise EngineError(f"The TOML is invalid: {error}.") from None
    except RecursionError:
        raise EngineError(f"The TOML is nested more than {MAX_DEPTH} levels deep.") from None
    _check_size(value, "The TOML")
    return {"json": _dump_json(_plain(value), inputs["indent"]), "keys": list(value)}


def _ini_to_json(inputs: dict[str, Any]) -> dict[str, Any]:
    import configparser

    parser = configparser.ConfigParser(interpolation=None, strict=True)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keep the key case
    try:
        parser.read_string(inputs["ini"])
    except configparser.MissingSectionHeaderError as error:
        raise EngineError(
            f"Line {error.lineno}: {error.line.strip()!r} comes before any [section] header."
        ) from None
    except configparser.ParsingError as error:
        line, text = error.errors[0]
        raise EngineError(f"Line {line}: {text.strip()!r} is not a key = value line.") from None
    except (configparser.DuplicateSectionError, configparser.DuplicateOptionError) as error:
        raise EngineError(f"{error.message}.") from None
    convert = _infer_scalar if inputs["infer_types"] else (lambda value: value)
    data: dict[str, Any] = {}
    if parser.defaults():
        data[parser.default_section] = {k: convert(v) for k, v in parser.defaults().items()}
    for section in parser.sections():
        data[section] = {key: convert(value) for key, value in parser[section].items()}
    return {"json": _dump_json(data, inputs["indent"]), "sections": parser.sections()}


_ENV_LINE_RE = re.compile(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*)")
_ENV_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "$": "$"}
_ENV_REFERENCE_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.]*)(?::?-([^}]*))?\}|\$([A-Za-z_]\w*)")


def _env_value(raw: str, number: int) -> tuple[str, bool]:
    """The value of one .env line and whether ``${VAR}`` references in it may expand."""
    if raw[:1] in ("'", '"'):
        quote = raw[0]
        end = 1
        while end < len(raw) and raw[end] != quote:
            end += 2 if quote == '"' and raw[end] == "\\" else 1
        if end >= len(raw):
            raise EngineError(f"Line {number}: the {quote} quote is not closed on this line.")
        rest = raw[end + 1 :].strip()
        if rest and not rest.startswith("#"):
            raise EngineError(f"Line {number}: unexpected text after the closing quote.")
        body = raw[1:end]
        if quote == "'":
            return body, False
        return re.sub(r"\\(.)", lambda m: _ENV_ESCAPES.get(m[1], "\\" + m[1]), body), True
    return re.split(r"\s+#", raw, maxsplit=1)[0].strip(), True


def _env_to_json(inputs: dict[str, Any]) -> dict[str, Any]:
    variables: dict[str, str] = {}
    duplicates: list[str] = []
    for number, line in enumerate(inputs["env"].splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _ENV_LINE_RE.fullmatch(line)
        if not match:
            raise EngineError(f"Line {number}: expected NAME=value, got {line.strip()[:40]!r}.")
        name = match[1]
        value, expandable = _env_value(match[2].strip(), number)
        if expandable and inputs["expand"]:
            value = _ENV_REFERENCE_RE.sub(
                lambda m: variables.get(m[1] or m[3], m[2] or ""),
                value,
            )
        if name in variables and name not in duplicates:
            duplicates.append(name)
        variables[name] = value
    return {
        "json": _dump_json(variables, inputs["indent"]),
        "variables": len(variables),
        "duplicates": duplicates,
    }


class DataConvertEngine(ChoiceEngine):
    """Converts between data formats: JSON, YAML, CSV, XML, TOML, INI, .env, Markdown tables."""

    name = "convert.data"
    jobs = {
        "json-to-yaml": _json_to_yaml,
        "yaml-to-json": _yaml_to_json,
        "json-to-csv": _json_to_csv,
        "csv-to-json": _csv_to_json,
        "xml-to-json": _xml_to_json,
        "json-to-xml": _json_to_xml,
        "xml-format": _format_xml,
        "toml-to-json": _toml_to_json,
        "ini-to-json": _ini_to_json,
        "env-to-json": _env_to_json,
        "csv-to-markdown": _csv_to_markdown,
        "markdown-table-format": _format_markdown_table,
        "html-table-to-csv": _html_table_to_csv,
    }
