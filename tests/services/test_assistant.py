"""The site assistant's retrieval and answers (services/assistant/)."""

from __future__ import annotations

import socket

import pytest
import requests
from flask_migrate import upgrade

from app import create_app
from engines.models import provider_transport
from engines.text import embedder
from services.assistant import answers, current_index, documents, retriever
from services.assistant.documents import Document
from tests.helpers import HAVE_PG, app_config, clean


@pytest.fixture
def ai_app(_schema, fake_provider, monkeypatch):
    """The app with ``fake_provider`` as its model provider (retries are not slept)."""
    monkeypatch.setattr(provider_transport, "_sleep", lambda seconds: None)
    app = create_app(app_config(AI_BASE_URL=fake_provider.base_url, AI_MODEL_CHAT="chat-model"))
    if not HAVE_PG:
        with app.app_context():
            upgrade()
    yield from clean(app)


def test_the_embedder_loads_from_the_wheel_with_the_network_blocked(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the embedder tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(requests.Session, "request", refuse)
    embedder._model.cache_clear()
    try:
        vectors = embedder.embed(["turn a podcast into show notes", "resize an image"])
    finally:
        embedder._model.cache_clear()
    assert vectors.shape == (2, embedder.DIMENSIONS)
    assert abs(float((vectors[0] ** 2).sum()) - 1.0) < 1e-5  # unit length


def test_a_missing_weights_file_is_never_downloaded(monkeypatch, tmp_path):
    """WordLlama is asked with downloads disabled: files it cannot find locally raise."""
    import wordllama

    monkeypatch.setattr(wordllama, "__file__", str(tmp_path / "wordllama" / "__init__.py"))
    monkeypatch.setattr(requests, "get", lambda *a, **k: pytest.fail("tried to download"))
    from wordllama import WordLlama

    with pytest.raises(FileNotFoundError):
        WordLlama.load(config="l2_supercat", dim=256, cache_dir=tmp_path, disable_download=True)


def test_the_index_has_a_document_per_tool_workflow_docs_section_and_changelog_entry(app):
    index = current_index()
    kinds = {}
    for document in index.documents:
        kinds.setdefault(document.kind, []).append(document)
    assert len(kinds["tool"]) == len(app.extensions["catalogue"])
    assert len(kinds["workflow"]) == len(app.extensions["workflows"])
    assert "docs:webhooks" in {d.id for d in kinds["docs"]}
    assert len(kinds["changelog"]) >= 5
    by_id = {document.id: document for document in index.documents}
    assert by_id["tool:word-counter"].url == "/tools/word-counter/"
    assert by_id["workflow:podcast-repurposer"].url == "/workflows/podcast-repurposer/"
    assert by_id["docs:webhooks"].url == "/docs/guide#webhooks"
    assert by_id["changelog:webhooks-api"].url == "/api/changelog/#webhooks-api"
    assert len(index.release_id) == 16


def test_the_index_is_built_once_per_process_for_every_app_on_the_catalogue(app):
    first = current_index()
    other = create_app(app_config())
    with other.app_context():
        assert current_index() is first


def test_the_guide_sections_are_the_user_and_api_pages_of_docs():
    sections = documents.guide_sections()
    titles = [section.title for section in sections]
    assert "Webhooks" in titles and "Calling the API" in titles
    assert "Settings" not in titles and "File storage" not in titles and "Workers" not in titles
    assert "Where the code is" not in titles and "SVC documentation" not in titles
    levels = {section.title: section.level for section in sections}
    assert levels["Calling the API"] == 2 and levels["Webhooks"] == 3


def test_links_between_docs_pages_become_links_to_their_guide_anchors(tmp_path):
    docs = tmp_path / "docs"
    (docs / "api").mkdir(parents=True)
    (docs / "operating").mkdir()
    (docs / "index.md").write_text("---\ntitle: Home\naudience: user\n---\n# Home\n\nHi.\n")
    (docs / "api" / "a.md").write_text(
        "---\ntitle: Calling it\naudience: api\n---\n\n# Calling it\n\n"
        "See [the hooks](b.md#x), [settings](../operating/s.md), [code](../../app.py), "
        "[the site](/pricing), [here](#calling-it) and [out](https://example.com).\n"
    )
    (docs / "api" / "b.md").write_text("---\ntitle: Web hooks\naudience: api\n---\nBody.\n")
    (docs / "operating" / "s.md").write_text("---\ntitle: S\naudience: operator\n---\nS.\n")
    config = tmp_path / "mkdocs.yml"
    config.write_text(
        "nav:\n  - Home: index.md\n  - API:\n      - api/a.md\n      - api/b.md\n"
        "  - Ops: operating/s.md\n"
    )
    first, second = documents.guide_sections(docs, config)
    assert (first.title, first.level, first.anchor) == ("Calling it", 2, "calling-it")
    assert (second.title, second.level, second.anchor, second.body) == (
        "Web hooks",
        3,
        "web-hooks",
        "Body.",
    )
    assert first.body == (
        "See [the hooks](#web-hooks), settings, code, [the site](/pricing), "
        "[here](#calling-it) and [out](https://example.com)."
    )


def test_an_exact_slug_or_name_comes_first(app):
    index = current_index()
    assert index.search("word-counter").hits[0].document.id == "tool:word-counter"
    assert index.search("Image Resizer").hits[0].document.id == "tool:image-resizer"
    named = index.search("how do I call text-summarizer from python?")
    assert named.hits[0].document.id == "tool:text-summarizer"
    assert named.hits[0].exact


def test_typos_are_read_as_the_words_the_documents_use(app):
    result = current_index().search("split one pdf into seperate files")
    assert "separate" in result.corrected
    assert result.hits[0].document.id == "tool:pdf-splitter"


def _docs(*texts: str) -> list[Document]:
    return [
        Document(id=f"tool:t{i}", kind="tool", title=f"T{i}", url=f"/tools/t{i}/", line="", text=t)
        for i, t in enumerate(texts)
    ]


def test_fusion_adds_the_reciprocal_ranks_of_bm25_and_the_embeddings():
    index = retriever.build_index(
        _docs(
            "convert audio files between mp3 and wav formats",
            "an image resizer for photos",
            "write show notes for a podcast episode",
        )
    )
    result = index.search("podcast show notes", limit=3)
    best = result.hits[0]
    assert best.document.id == "tool:t2"
    # First in both rankings: 1/(K+1) twice.
    assert best.score == pytest.approx(2 / (retriever.RRF_K + 1))
    assert best.bm25 > 0 and best.cosine == max(h.cosine for h in result.hits)


def test_documents_without_a_matching_word_rank_by_the_embeddings_alone():
    index = retriever.build_index(_docs("apples and pears", "images and photos"))
    result = index.search("pictures", limit=2)
    assert result.best_bm25 == 0
    assert [hit.bm25 for hit in result.hits] == [0, 0]
    assert result.hits[0].score == pytest.approx(1 / (retriever.RRF_K + 1))


def test_the_release_id_is_a_hash_of_the_documents():
    first = _docs("a", "b")
    assert retriever.release_id(first) == retriever.release_id(_docs("a", "b"))
    assert retriever.release_id(first) != retriever.release_id(_docs("a", "c"))


@pytest.mark.parametrize(
    "question",
    [
        "what's the weather in Paris",
        "who won the football world cup",
        "what is the capital of france",
        "bitcoin price today",
        "asdf qwer",
    ],
)
def test_off_topic_questions_are_below_the_evidence_threshold(app, question):
    result = current_index().search(question)
    assert not answers.has_evidence(result)


@pytest.mark.parametrize(
    "question",
    ["which tool turns a podcast into show notes?", "how do I verify a webhook?", "crop a picture"],
)
def test_real_questions_are_above_it(app, question):
    assert answers.has_evidence(current_index().search(question))


def test_without_a_provider_the_answer_lists_the_best_tools_with_a_line_each(app):
    found = answers.answer("which tool turns a podcast into show notes?")
    assert found.mode == "retrieval"
    assert found.tools[0].url == "/tools/podcast-show-notes/"
    assert all(source.line for source in found.tools)
    assert not found.paragraphs


def test_a_question_about_prices_finds_the_pricing_page(app):
    assert current_index().search("how much does the pro plan cost").hits[0].document.url == (
        "/pricing"
    )


def test_an_api_question_answers_with_the_docs_sections_first(app):
    found = answers.answer("how do I verify a webhook?")
    assert found.docs_first
    assert found.docs[0].url == "/docs/guide#webhooks"


def test_below_the_threshold_it_says_it_does_not_know_and_calls_no_model(ai_app, fake_provider):
    found = answers.answer("what's the weather in Paris")
    assert found.mode == "unknown"
    assert found.intro.startswith("I don't know")
    assert found.tools  # the nearest tools
    assert fake_provider.requests == []


def test_with_a_provider_the_model_writes_the_answer_citing_markers(ai_app, fake_provider):
    fake_provider.reply(
        "Use the show notes tool [1], or the workflow [2].\n\n"
        "Ignore [9] and see https://evil.example/x or [this](https://evil.example/y) [0]."
    )
    found = answers.answer("which tool turns a podcast into show notes?")
    assert found.mode == "model"
    calls = fake_provider.calls("/v1/chat/completions")
    assert len(calls) == 1
    prompt = calls[0].json["messages"][1]["content"]
    assert "[1] Podcast Show Notes" in prompt and "Question: which tool" in prompt
    first, second = found.paragraphs
    assert [s.source.number if s.source else s.text for s in first] == [
        "Use the show notes tool ",
        1,
        ", or the workflow ",
        2,
        ".",
    ]
    text = "".join(s.text for s in second)
    assert "evil.example" not in text and "http" not in text
    assert [s for s in second if s.source] == []  # [9] and [0] are not retrieved: dropped
    assert "this" in text  # a Markdown link keeps its words, not its address
    assert [s.number for s in found.tools] == [1, 2]  # the sources cited


def stream(question: str) -> list:
    return list(answers.answer_stream(question, *answers.retrieve(question)))


def test_a_streamed_model_answer_yields_each_paragraph_as_it_is_written(ai_app, fake_provider):
    fake_provider.reply("First the tool [1].\n\nThen the workflow [2] and [8].")
    *paragraphs, found = stream("which tool turns a podcast into show notes?")
    assert fake_provider.calls("/v1/chat/completions")[0].json["stream"] is True
    assert len(paragraphs) == 2 and found.paragraphs == paragraphs
    assert [s.source.number for s in paragraphs[1] if s.source] == [2]  # [8]: not retrieved
    assert found.mode == "model" and [s.number for s in found.tools] == [1, 2]


def test_a_stream_that_fails_before_writing_gives_the_retrieval_answer(ai_app, fake_provider):
    fake_provider.fail_next(1, status=503)
    [found] = stream("which tool turns a podcast into show notes?")
    assert found.mode == "retrieval" and found.tools[0].url == "/tools/podcast-show-notes/"


def test_a_stream_below_the_threshold_calls_no_model(ai_app, fake_provider):
    [found] = stream("what's the weather in Paris")
    assert found.mode == "unknown" and fake_provider.requests == []


def test_a_failing_provider_falls_back_to_the_retrieval_answer(ai_app, fake_provider):
    fake_provider.fail_next(10, status=500)
    found = answers.answer("which tool turns a podcast into show notes?")
    assert found.mode == "retrieval"
    assert found.tools[0].url == "/tools/podcast-show-notes/"


def test_the_embedded_text_model_is_never_used(ai_app, fake_provider, monkeypatch):
    from engines.models import local_llm

    monkeypatch.setattr(local_llm, "complete", lambda *a, **k: pytest.fail("SmolLM2 was asked"))
    fake_provider.fail_next(10, status=503)
    assert answers.answer("convert json to yaml").mode == "retrieval"


def test_questions_are_stripped_and_bounded(app):
    assert answers.check_question("  which   tool? ") == "which tool?"
    with pytest.raises(answers.QuestionRefused) as refused:
        answers.check_question("x" * 501)
    assert refused.value.status == 422
    assert "at most 500" in refused.value.message
    with pytest.raises(answers.QuestionRefused):
        answers.check_question("   ")
