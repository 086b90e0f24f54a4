"""The workflow catalogue: the built-in workflows, and every refusal of the loader."""

import textwrap

import pytest

import catalogue.workflow_loader as workflow_loader
from app import create_app
from catalogue import CatalogueError, load_catalogue, load_workflows
from catalogue.workflow import MissingValue, Value, cut
from tests.helpers import app_config

WORKFLOW = """\
id: sample
name: Sample
summary: A topic becomes a post, then a thread.
input: {type: string, maxLength: 300, description: The topic.}
example: Composting at home
steps:
- id: post
  tool: blog-post-writer
  input:
    topic: {from: /input}
- id: thread
  tool: tweet-thread-writer
  input:
    source: {from: /steps/post/output/text, max_chars: 8000}
output:
  thread: {from: /steps/thread/output/tweets}
"""


def load(tmp_path, text: str = WORKFLOW, name: str = "sample.yaml"):
    (tmp_path / name).write_text(textwrap.dedent(text))
    return load_workflows(tmp_path)


def problems(tmp_path, text: str, name: str = "sample.yaml") -> list[str]:
    with pytest.raises(CatalogueError) as refused:
        load(tmp_path, text, name)
    return refused.value.problems


# --- the built-in workflows --------------------------------------------------------------


def test_there_are_at_least_twelve_workflows_each_with_steps_schema_and_example():
    workflows = list(load_workflows())
    assert len(workflows) >= 12
    for workflow in workflows:
        assert workflow.input["type"] == "string" and workflow.input["maxLength"] > 0
        assert workflow.validate(workflow.example) == {}
        assert len(workflow.steps) >= 3
        assert any(step.depends_on for step in workflow.steps), workflow.id


def test_every_step_tool_exists_and_every_workflow_has_parallel_steps():
    tools = load_catalogue()
    for workflow in load_workflows():
        assert all(step.tool in tools for step in workflow.steps)
        # Independent steps: at least two steps wait on exactly the same steps.
        waits = [step.depends_on for step in workflow.steps]
        assert any(waits.count(deps) > 1 for deps in waits), workflow.id


def test_the_content_creator_is_topic_then_post_then_image_social_and_newsletter():
    workflow = load_workflows().get("content-creator")
    steps = {step.id: step for step in workflow.steps}
    assert steps["post"].tool == "blog-post-writer" and steps["post"].depends_on == ()
    parallel = {s.tool for s in workflow.steps if s.depends_on == ("post",)}
    assert parallel == {
        "blog-header-illustration",
        "tweet-thread-writer",
        "linkedin-post-writer",
        "newsletter-intro-writer",
    }
    # The image step needs the creator plan, so the whole workflow does.
    assert workflow.required_plan == "creator"
    assert workflow.credits == 2 + 5 + 1 + 1 + 1


def test_the_public_form_lists_steps_schemas_and_the_example():
    public = load_workflows().get("podcast-repurposer").to_public()
    assert public["input_schema"]["contentMediaType"] == "audio/*"
    assert public["steps"][0] == {"id": "transcript", "tool": "audio-transcriber", "depends_on": []}
    assert public["output_schema"]["required"] == [
        "transcript",
        "show_notes",
        "clips",
        "quotes",
        "tweets",
    ]
    assert public["example"]["input"].startswith("https://")


# --- mapped values -----------------------------------------------------------------------


def test_values_resolve_pointers_templates_lists_and_cuts():
    document = {
        "input": "topic",
        "steps": {"a": {"output": {"items": ["one two three", "four"], "n": 3, "x/y": 1}}},
    }
    assert Value("from", "/input").resolve(document) == "topic"
    assert Value("from", "/steps/a/output/items/1").resolve(document) == "four"
    assert Value("from", "/steps/a/output/x~1y").resolve(document) == 1
    assert Value("from", "/steps/a/output/items", each="text", max_chars=7).resolve(document) == [
        {"text": "one two"},
        {"text": "four"},
    ]
    assert Value("from", "/steps/a/output/items", max_items=1).resolve(document) == [
        "one two three"
    ]
    template = Value("template", "{/input}: {/steps/a/output/items} ({/steps/a/output/n})")
    assert template.resolve(document) == "topic: one two three, four (3)"
    assert Value("literal", {"a": [1]}).resolve(document) == {"a": [1]}
    with pytest.raises(MissingValue, match="/steps/a/output/items/5"):
        Value("from", "/steps/a/output/items/5").resolve(document)


def test_cut_prefers_a_word_boundary_near_the_limit():
    assert cut("alpha beta gamma", 12) == "alpha beta"
    assert cut("abcdefghij", 4) == "abcd"
    assert cut("short", 10) == "short"


# --- refusals ----------------------------------------------------------------------------


def test_a_valid_file_loads(tmp_path):
    workflows = load(tmp_path)
    workflow = workflows.get("sample")
    assert [s.depends_on for s in workflow.steps] == [(), ("post",)]
    assert workflow.required_plan == "pro" and workflow.credits == 3


def test_a_cycle_is_refused(tmp_path):
    text = WORKFLOW.replace("topic: {from: /input}", "topic: {from: /steps/thread/output/tweets/0}")
    assert problems(tmp_path, text) == [
        "workflows/sample.yaml: the steps form a cycle: post → thread → post."
    ]


def test_an_unknown_tool_is_refused(tmp_path):
    text = WORKFLOW.replace("tool: tweet-thread-writer", "tool: tweet-thread-wrtier")
    assert problems(tmp_path, text) == [
        "workflows/sample.yaml: step uses the unknown tool tweet-thread-wrtier."
    ]


@pytest.mark.parametrize(
    ("mapping", "problem"),
    [
        (
            "{from: /steps/post/output/body, max_chars: 8000}",
            "/steps/post/output/body: /steps/post/output has no field 'body' (it has text).",
        ),
        (
            "{from: /steps/missing/output/text, max_chars: 8000}",
            "/steps/missing/output/text names no step of this workflow.",
        ),
        ("{from: /steps/thread/output/tweets}", "points into the step itself."),
        ("{from: steps/post, max_chars: 8000}", "not a valid mapping"),
        (
            "{from: /steps/post/output/text}",
            "may be longer than the field's 8000 characters; bound it with max_chars.",
        ),
        ("{from: /input/0, max_chars: 10}", "/input is a string, not an object or a list."),
        ("{template: 'no pointer here'}", "the template has no {/pointer}"),
        ("42", "42 is not of type 'string'"),
    ],
)
def test_a_bad_mapping_is_refused_with_its_reason(tmp_path, mapping, problem):
    text = WORKFLOW.replace("{from: /steps/post/output/text, max_chars: 8000}", mapping)
    found = problems(tmp_path, text)
    assert len(found) == 1 and found[0].startswith(
        "workflows/sample.yaml: step thread (tweet-thread-writer): source"
    )
    assert problem in found[0]


def test_a_list_where_text_is_wanted_is_refused(tmp_path):
    text = WORKFLOW.replace(
        "{from: /steps/post/output/text, max_chars: 8000}", "{from: /steps/thread/output/tweets}"
    ).replace("- id: thread", "- id: thread2\n  tool: tweet-thread-writer\n  input:\n    source: "
              "{from: /steps/thread/output/tweets}\n- id: thread")  # fmt: skip
    found = problems(tmp_path, text)
    assert "/steps/thread/output/tweets is array; the field takes string." in found[0]


def test_files_and_text_do_not_mix(tmp_path):
    text = """\
    id: sample
    name: Sample
    summary: Speech, then its transcript.
    input: {type: string, maxLength: 5000, description: Text to speak.}
    example: Hello there
    steps:
    - id: speech
      tool: text-to-speech
      input:
        text: {from: /input}
    - id: transcript
      tool: audio-transcriber
      input:
        audio: {from: /steps/speech/output/duration_s}
    - id: image
      tool: image-grayscale-converter
      input:
        image: {from: /steps/speech/output/audio}
    - id: notes
      tool: tweet-thread-writer
      input:
        source: {from: /steps/speech/output/audio}
    output:
      a: {from: /steps/transcript/output/text}
      b: {from: /steps/image/output/image}
      c: {from: /steps/notes/output/tweets}
    """
    found = problems(tmp_path, text)
    assert any(
        "audio: the field takes a file and /steps/speech/output/duration_s" in p for p in found
    )
    assert any(
        "image: /steps/speech/output/audio is audio/mpeg; the field takes image/" in p
        for p in found
    )
    assert any(
        "source: /steps/speech/output/audio is a file; point at its url field" in p for p in found
    )


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (("id: sample", "id: Sample"), "id must be lowercase words joined by hyphens"),
        (("id: sample", "id: other"), "id 'other' must be the file's name"),
        (("example: Composting at home", "example: ''"), "example: '' should be non-empty"),
        (("maxLength: 300", "maxLength: 2000"), "may be longer than the field's 1000 characters"),
        (("input: {type: string, ", "input: {type: integer, "), "input must be a string schema"),
        (("description: The topic.}", "description: The topic, in a few words.}"),
         "input has an unknown keyword at '/in a few words.'"),
        (("  thread: {from: /steps/thread/output/tweets}", "  p: {from: /steps/post/output/text}"),
         "step thread's output is used by no step and not in the output."),
        (("    topic: {from: /input}", "    tone: friendly"), "field 'topic' is not mapped."),
        (("    topic: {from: /input}", "    topic: {from: /input}\n    colour: red"),
         "blog-post-writer has no input field 'colour'."),
    ],
)  # fmt: skip
def test_a_broken_workflow_is_refused_naming_the_problem(tmp_path, change, problem):
    found = problems(tmp_path, WORKFLOW.replace(*change))
    assert any(problem in p for p in found), found
    assert all(p.startswith("workflows/sample.yaml: ") for p in found)


def test_a_repeated_step_id_is_refused(tmp_path):
    found = problems(tmp_path, WORKFLOW.replace("- id: thread", "- id: post"))
    assert "workflows/sample.yaml: step id post is used twice." in found


def test_a_broken_workflow_refuses_start_up(tmp_path, monkeypatch):
    (tmp_path / "sample.yaml").write_text(WORKFLOW.replace("tweet-thread-writer", "nope"))
    monkeypatch.setattr(workflow_loader, "DEFAULT_DIRECTORY", tmp_path)
    workflow_loader._load_default.cache_clear()
    try:
        with pytest.raises(CatalogueError, match="unknown tool nope"):
            create_app(app_config(SQLALCHEMY_DATABASE_URI="sqlite://", REDIS_URL=None))
    finally:
        workflow_loader._load_default.cache_clear()
