"""The catalogue loader: the real catalogue loads, and every kind of broken record is refused."""

import copy
from pathlib import Path
from urllib.parse import urljoin

import pytest
import yaml
from jsonschema import Draft202012Validator
from jsonschema_specifications import REGISTRY

import catalogue.loader as loader
from app import create_app
from catalogue import CATEGORIES, CatalogueError, load_catalogue
from catalogue.loader import DEFAULT_DIRECTORY, KEYWORDS
from tests.helpers import app_config

# The smallest record the loader accepts; the cases below break it one way at a time.
VALID = {
    "slug": "sample-tool",
    "name": "Sample Tool",
    "summary": "Counts words.",
    "required_plan": "pro",
    "credit_class": "fast_text",
    "queue": False,
    "engine": "text.counts",
    "primary": "text",
    "inputs": {
        "type": "object",
        "additionalProperties": False,
        "required": ["text"],
        "properties": {
            "text": {"type": "string", "minLength": 1, "maxLength": 100},
            "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast"},
        },
    },
    "output": {
        "type": "object",
        "additionalProperties": False,
        "required": ["words"],
        "properties": {"words": {"type": "integer"}},
    },
    "examples": [{"input": {"text": "two words"}, "output": {"words": 2}}],
}


def write(
    directory: Path, records: list[dict], category: str = "writing-analysis", name: str = "tools"
) -> str:
    (directory / category).mkdir(exist_ok=True)
    (directory / category / f"{name}.yaml").write_text(yaml.safe_dump(records), encoding="utf-8")
    return str(directory)


def record(**changes) -> dict:
    result = copy.deepcopy(VALID)
    result.update(changes)
    return result


def problems_of(directory: str) -> list[str]:
    with pytest.raises(CatalogueError) as caught:
        load_catalogue(directory)
    return caught.value.problems


def test_the_real_catalogue_loads_at_least_90_tools_in_11_categories():
    catalogue = load_catalogue()
    assert len(catalogue.tools) >= 90
    assert {
        "seo",
        "ocr",
        "transcription",
        "voice-audio",
        "video",
        "audiobook",
        "document-summarizing",
        "code-helpers",
        "writing-analysis",
    } <= set(catalogue.categories())


# Model-backed and heavy media engines run queued (docs/architecture/runs.md); light ones inline.
QUEUED_ENGINES = {
    "audio.edit",
    "audio.inspect",
    "images.generate",
    "llm.chat",
    "ocr.text",
    "speech.transcribe",
    "speech.synthesize",
    "video.edit",
    "video.inspect",
    "video.render",
    "vision.chat",
}


def test_the_real_catalogue_is_sorted_by_slug_and_only_heavy_tools_are_queued():
    catalogue = load_catalogue()
    assert list(catalogue.tools) == sorted(catalogue.tools)
    assert all(tool.queue is (tool.engine in QUEUED_ENGINES) for tool in catalogue)
    assert {(t.required_plan, t.credit_class, t.credits) for t in catalogue} == {
        ("pro", "fast_text", 1),
        ("pro", "premium_text", 2),
        ("pro", "audio", 5),
        ("pro", "video", 10),
        ("pro", "image", 5),
        ("creator", "image", 5),
    }


def test_the_default_catalogue_is_loaded_once_per_process():
    assert load_catalogue() is load_catalogue()


def test_a_valid_directory_loads_its_tool(tmp_path):
    catalogue = load_catalogue(write(tmp_path, [VALID]))
    assert list(catalogue.tools) == ["sample-tool"]
    assert catalogue.get("sample-tool").category == "writing-analysis"


def test_an_explicit_directory_is_read_again_on_every_call(tmp_path):
    write(tmp_path, [VALID])
    load_catalogue(str(tmp_path))
    write(tmp_path, [VALID, record(slug="second-tool")])
    assert list(load_catalogue(str(tmp_path)).tools) == ["sample-tool", "second-tool"]


def _with_input(name: str, spec: dict) -> dict:
    broken = record()
    broken["inputs"]["properties"][name] = spec
    return broken


def _invalid_schema() -> dict:
    broken = record()
    broken["inputs"]["properties"]["text"]["type"] = "text"
    return broken


def _bad_example_output() -> dict:
    return record(examples=[{"input": {"text": "two words"}, "output": {"words": "two"}}])


def _primary_not_required() -> dict:
    broken = record()
    broken["inputs"]["required"] = []
    return broken


@pytest.mark.parametrize(
    "broken, problem",
    [
        (record(slug="Bad_Slug"), "Bad_Slug: slug must be lowercase words joined by hyphens "
         "(^[a-z0-9]+(?:-[a-z0-9]+)*$)."),
        (record(slug="runs"), "runs: slug 'runs' is reserved."),
        (record(slug="run"), "run: slug 'run' is reserved."),
        (_with_input("input", {"type": "string", "maxLength": 10, "default": ""}),
         "sample-tool: input field 'input' uses a reserved name."),
        (_with_input("slug", {"type": "string", "maxLength": 10, "default": ""}),
         "sample-tool: input field 'slug' uses a reserved name."),
        (_with_input("tone", {"type": "string", "enum": ["formal", "casual"]}),
         "sample-tool: optional input field 'tone' has no default."),
        (_with_input("note", {"type": "string", "default": ""}),
         "sample-tool: string input 'note' has no maxLength."),
        (_with_input("note", {"type": "string", "maxLength": 100001, "default": ""}),
         "sample-tool: string input 'note' allows more than 100000 characters."),
        (_with_input("count", {"type": "integer", "minimum": 1, "default": 0}),
         "sample-tool: default of input field 'count' is invalid: 0 is less than the minimum "
         "of 1"),
        (record(engine="no.such"), "sample-tool: unknown engine 'no.such'."),
        (record(engine="seo.headings"), "sample-tool: params do not suit engine seo.headings: "
         "'max_h1_chars' is a required property"),
        (_primary_not_required(), "sample-tool: inputs.required must be exactly ['text']."),
        (_invalid_schema(), "sample-tool: inputs is not a valid JSON Schema at "
         "'/properties/text/type': 'text' is not valid under any of the given schemas"),
        (_bad_example_output(), "sample-tool: example 1 output does not match output (words): "
         "'two' is not of type 'integer'"),
        (record(examples=[]), "sample-tool: examples: [] should be non-empty"),
        (record(required_plan="starter"), "sample-tool: required_plan: 'starter' is not one of "
         "['pro', 'creator', 'business', 'agency']"),
        (record(credit_class="cheap"), "sample-tool: credit_class: 'cheap' is not one of "
         "['fast_text', 'premium_text', 'image', 'audio', 'video']"),
    ],
    ids=[
        "bad-slug", "reserved-runs", "reserved-run", "field-named-input", "field-named-slug",
        "optional-without-default", "string-without-maxlength", "string-too-long",
        "invalid-default", "unknown-engine", "params-not-for-engine",
        "primary-not-required", "invalid-schema", "example-output-mismatch", "no-example",
        "bad-plan", "bad-credit-class",
    ],
)  # fmt: skip
def test_a_broken_record_is_refused_naming_file_and_slug(tmp_path, broken, problem):
    assert problems_of(write(tmp_path, [broken])) == [f"writing-analysis/tools.yaml: {problem}"]


def test_a_primary_that_is_not_an_input_field_is_refused(tmp_path):
    assert problems_of(write(tmp_path, [record(primary="body")])) == [
        "writing-analysis/tools.yaml: sample-tool: primary field 'body' is not an input property.",
        "writing-analysis/tools.yaml: sample-tool: inputs.required must be exactly ['body'].",
        "writing-analysis/tools.yaml: sample-tool: optional input field 'text' has no default.",
    ]


def test_a_duplicate_slug_is_refused_naming_both_files(tmp_path):
    write(tmp_path, [VALID], category="seo")
    write(tmp_path, [VALID], category="writing-analysis")
    assert problems_of(str(tmp_path)) == [
        "writing-analysis/tools.yaml: sample-tool: slug already used in seo/tools.yaml."
    ]


def test_a_file_named_after_an_unknown_category_is_refused(tmp_path):
    assert problems_of(write(tmp_path, [VALID], category="gossip")) == [
        "gossip/tools.yaml: sample-tool: unknown category 'gossip' (the folder name): use one of "
        + ", ".join(CATEGORIES)
        + "."
    ]


def test_every_problem_of_every_tool_is_listed_at_once(tmp_path):
    write(tmp_path, [record(slug="runs", engine="no.such"), record(slug="Other")])
    with pytest.raises(CatalogueError) as caught:
        load_catalogue(str(tmp_path))
    message = str(caught.value)
    assert message.splitlines() == [
        "writing-analysis/tools.yaml: runs: slug 'runs' is reserved.",
        "writing-analysis/tools.yaml: runs: unknown engine 'no.such'.",
        "writing-analysis/tools.yaml: Other: slug must be lowercase words joined by hyphens "
        "(^[a-z0-9]+(?:-[a-z0-9]+)*$).",
    ]


def test_an_unknown_key_in_a_record_is_refused(tmp_path):
    assert problems_of(write(tmp_path, [record(tags=["x"])])) == [
        "writing-analysis/tools.yaml: sample-tool: record: Additional properties are not allowed "
        "('tags' was unexpected)"
    ]


def test_a_file_that_is_not_a_list_is_refused(tmp_path):
    (tmp_path / "seo").mkdir()
    (tmp_path / "seo" / "tools.yaml").write_text("slug: lonely\n", encoding="utf-8")
    assert problems_of(str(tmp_path)) == ["seo/tools.yaml: must hold a list of tools."]


def test_a_directory_without_tool_files_is_refused(tmp_path):
    assert problems_of(str(tmp_path)) == [f"{tmp_path}: no tool files (<category>/*.yaml)."]


def test_a_category_may_span_several_files(tmp_path):
    write(tmp_path, [VALID], name="local")
    write(tmp_path, [record(slug="other-tool")], name="model")
    catalogue = load_catalogue(str(tmp_path))
    assert [tool.category for tool in catalogue] == ["writing-analysis", "writing-analysis"]


def test_a_tool_file_outside_a_category_folder_is_refused(tmp_path):
    write(tmp_path, [VALID])
    (tmp_path / "seo.yaml").write_text(yaml.safe_dump([VALID]), encoding="utf-8")
    assert problems_of(str(tmp_path)) == [
        "seo.yaml: tool files belong in a category folder (<category>/seo.yaml)."
    ]


UNKNOWN = (
    "neither JSON Schema 2020-12 nor x-accept (a description cut at a comma by a YAML flow "
    "mapping? Quote it)."
)


def _with_output(name: str, spec: dict) -> dict:
    broken = record()
    broken["output"]["properties"][name] = spec
    return broken


def _output_required_not_a_list() -> dict:
    broken = record()
    broken["output"]["required"] = "words"
    return broken


FILE = {"type": "string", "contentMediaType": "image/*", "maxLength": 1000, "default": ""}


@pytest.mark.parametrize(
    "broken, problem",
    [
        (_with_input("size", {"type": "string", "maxLength": 10, "default": "",
                              "description": "Readable in powers of 1024 (KiB", "MiB...).": None}),
         f"inputs has an unknown keyword at '/properties/size/MiB...).', {UNKNOWN}"),
        (_with_output("sizes", {"type": "array", "items": {"anyOf": [
            {"type": "string"}, {"type": "null", "description": "For /31", "/32 ~": None}
         ]}}),
         f"output has an unknown keyword at '/properties/sizes/items/anyOf/1/~132 ~0', {UNKNOWN}"),
        (_with_input("level", {"type": "integer", "default": 1, "x-widget": "slider"}),
         f"inputs has an unknown keyword at '/properties/level/x-widget', {UNKNOWN}"),
        (_with_output("old", {"type": "object", "definitions": {"part": {"type": "string"}}}),
         f"output has an unknown keyword at '/properties/old/definitions', {UNKNOWN}"),
        (_with_input("note", {"type": "string", "maxLength": 10, "default": "",
                              "x-accept": ["text/plain"]}),
         "inputs has an invalid extension at '/properties/note': 'contentMediaType' is a "
         "dependency of 'x-accept'"),
        (_with_input("picture", {**FILE, "x-accept": "image/png"}),
         "inputs has an invalid extension at '/properties/picture/x-accept': 'image/png' is not "
         "of type 'array'"),
        (_with_input("picture", {**FILE, "x-accept": ["image/png", "PNG files"]}),
         "inputs has an invalid extension at '/properties/picture/x-accept/1': 'PNG files' does "
         "not match '^[a-z]+/[^\\\\s/]+$'"),
        (_output_required_not_a_list(),
         "output is not a valid JSON Schema at '/required': 'words' is not of type 'array'"),
    ],
    ids=[
        "cut-description", "cut-description-deep-escaped", "unknown-extension",
        "older-draft-keyword", "x-accept-without-media-type", "x-accept-not-a-list",
        "x-accept-not-media-types", "fails-the-meta-schema",
    ],
)  # fmt: skip
def test_a_schema_with_a_bad_keyword_is_refused_naming_where(tmp_path, broken, problem):
    assert problems_of(write(tmp_path, [broken])) == [
        f"writing-analysis/tools.yaml: sample-tool: {problem}"
    ]


def test_extensions_names_and_data_that_look_like_keywords_are_accepted(tmp_path):
    accepting = _with_input("picture", {**FILE, "x-accept": ["image/png", "image/jpeg"]})
    accepting["output"]["properties"]["parts"] = {
        "type": "object",
        "properties": {"MiB...).": {"type": "integer"}, "description": {"type": "string"}},
        "patternProperties": {"^x-": {"type": "string"}},
        "default": {"MiB...).": 1, "x-widget": "slider"},
        "examples": [{"Column 2...": None}],
        "enum": [{"MiB...).": 1}, {"x-widget": "slider", "MiB...).": 1}],
    }
    tool = load_catalogue(write(tmp_path, [accepting])).get("sample-tool")
    assert tool.binary_inputs == {"picture": ("image/png", "image/jpeg")}


def test_the_keywords_are_those_of_the_2020_12_vocabularies():
    meta = Draft202012Validator.META_SCHEMA
    vocabularies = [REGISTRY.contents(urljoin(meta["$id"], part["$ref"])) for part in meta["allOf"]]
    assert {keyword for vocabulary in vocabularies for keyword in vocabulary["properties"]} == (
        KEYWORDS
    )


def test_a_real_tool_file_with_a_cut_description_refuses_start_up(tmp_path, monkeypatch):
    real = (DEFAULT_DIRECTORY / "code-helpers" / "converters.yaml").read_text(encoding="utf-8")
    quoted = 'description: "Readable in powers of 1024 (KiB, MiB...)."'
    assert real.count(quoted) == 1
    (tmp_path / "code-helpers").mkdir()
    (tmp_path / "code-helpers" / "converters.yaml").write_text(
        real.replace(quoted, quoted.replace('"', "")), encoding="utf-8"
    )
    monkeypatch.setattr(loader, "_load_default", lambda: loader._load(tmp_path))
    with pytest.raises(CatalogueError) as refused:
        create_app(app_config(SQLALCHEMY_DATABASE_URI="sqlite://", REDIS_URL=None))
    assert refused.value.problems == [
        "code-helpers/converters.yaml: byte-size-converter: output has an unknown keyword at "
        f"'/properties/binary/MiB...).', {UNKNOWN}"
    ]
