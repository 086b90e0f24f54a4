"""The site assistant's answers: retrieval, then one of three ways to answer.

- ``unknown``: the evidence is below the threshold (no document names the question exactly,
  and its best BM25 score or best cosine is too low): "I don't know" with the nearest tools,
  and no model call.
- ``model``: an OpenAI-compatible provider is configured (``AI_BASE_URL``): its text model
  (``AI_MODEL_CHAT``) writes the answer from the numbered documents retrieved, citing them
  only as ``[n]`` markers. The server turns each marker into a link to document n; a marker
  outside the documents is dropped; URLs and Markdown links the model writes are removed, and
  the text is shown escaped. The embedded SmolLM2 model is never used here (too weak to
  answer): a provider that fails gives the retrieval answer instead.
- ``retrieval``: without a provider, the best tools and workflows with one line each, and
  the docs sections when the question is about the API.

Services add and flush; the view commits.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from flask import current_app
from limits import parse

from engines.base import EngineError, ProviderUnavailable
from engines.models import providers
from extensions import db, limiter
from models.assistant import AssistantAnswer
from models.base import new_uuid
from services.assistant import current_index
from services.assistant.documents import Document
from services.assistant.retriever import Result

log = logging.getLogger(__name__)

# The evidence threshold, calibrated on tests/services/assistant_golden.yaml and off-topic
# questions (the weather, football, jokes): every golden question's best cosine was 0.25 or
# more and its best BM25 score 2.4 or more; the off-topic ones' cosines were 0.21 at most
# (or they matched no word at all).
MIN_COSINE = 0.24
MIN_BM25 = 0.5
# Documents retrieved for an answer, and tools an answer lists.
RETRIEVED = 6
LISTED_TOOLS = 5
LISTED_DOCS = 3
# What the model is shown of each document, and may write.
DOCUMENT_CHARS = 700
MAX_ANSWER_TOKENS = 400
_MARKER = re.compile(r"\[(\d{1,3})\]")
_MARKDOWN_LINK = re.compile(r"\[([^\]\n]*)\]\([^)\n]*\)")
_URL = re.compile(r"\b(?:https?://|www\.)\S+", re.IGNORECASE)
_SYSTEM = (
    "You are the help assistant of SVC, a site of AI tools and multi-step workflows that can "
    "also be called over a JSON API. Answer the visitor's question using only the numbered "
    "documents. After each statement, cite the documents it comes from with their markers, "
    "such as [1] or [2]. Never write URLs, links or Markdown. If the documents do not answer "
    "the question, say so in one sentence. Answer in at most 120 words."
)


class QuestionRefused(Exception):
    """The question cannot be asked: too long, empty, or the visitor asked too many."""

    def __init__(self, status: int, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


@dataclass(frozen=True)
class Source:
    number: int
    document: Document
    score: float

    @property
    def title(self) -> str:
        return self.document.title

    @property
    def url(self) -> str:
        return self.document.url

    @property
    def line(self) -> str:
        return self.document.line


@dataclass(frozen=True)
class Segment:
    """A piece of a paragraph: text, or a citation of a source."""

    text: str = ""
    source: Source | None = None


@dataclass
class Answer:
    id: str
    question: str
    mode: str  # model, retrieval, unknown
    intro: str = ""
    paragraphs: list[list[Segment]] = field(default_factory=list)
    tools: list[Source] = field(default_factory=list)  # listed with their line
    docs: list[Source] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)  # what was retrieved, numbered
    docs_first: bool = False  # a question about the API or the site: docs before tools
    duration_ms: float = 0.0

    def as_text(self) -> str:
        """The answer as stored: plain text, citations as [n]."""
        lines = [self.intro] if self.intro else []
        for paragraph in self.paragraphs:
            lines.append(
                "".join(s.text if s.source is None else f"[{s.source.number}]" for s in paragraph)
            )
        lines += [f"- {s.title}: {s.line} ({s.url})" for s in self.tools + self.docs]
        return "\n".join(lines)


def check_question(question: str) -> str:
    """The question, stripped; QuestionRefused (422) when empty or too long."""
    question = " ".join(question.split())
    limit = current_app.config["ASSISTANT_MAX_QUESTION_CHARS"]
    if not question:
        raise QuestionRefused(422, "Type a question first.")
    if len(question) > limit:
        raise QuestionRefused(
            422,
            f"Your question is {len(question)} characters long; ask in at most {limit}, "
            "for example “which tool turns a podcast into show notes?”.",
        )
    return question


def spend_question(visitor_id: str, address: str) -> None:
    """Count a question against the visitor's and the address's limits; QuestionRefused
    (429) past either."""
    config = current_app.config
    checks = (
        (config["ASSISTANT_VISITOR_LIMIT"], f"visitor:{visitor_id}"),
        (config["ASSISTANT_ADDRESS_LIMIT"], f"address:{address}"),
    )
    for limit, identity in checks:
        item = parse(limit)
        if not limiter.limiter.hit(item, "assistant", identity):
            reset_at, _ = limiter.limiter.get_window_stats(item, "assistant", identity)
            retry_after = max(1, math.ceil(reset_at - time.time()))
            minutes = max(1, math.ceil(retry_after / 60))
            raise QuestionRefused(
                429,
                "You have asked a lot of questions in a short time. Take a breath and ask "
                f"again in {minutes} minute{'s' if minutes != 1 else ''}; meanwhile the "
                "tools page has a search.",
                retry_after,
            )


def has_evidence(result: Result) -> bool:
    return result.exact or (result.best_cosine >= MIN_COSINE and result.best_bm25 >= MIN_BM25)


def retrieve(question: str) -> tuple[Result, list[Source]]:
    result = current_index().search(question, limit=RETRIEVED)
    sources = [Source(n, hit.document, hit.score) for n, hit in enumerate(result.hits, 1)]
    return result, sources


def answer(question: str, *, answer_id: str | None = None) -> Answer:
    """Retrieve, then answer as the module says (a provider's failure falls back to the
    retrieval answer)."""
    started = time.perf_counter()
    return answer_from(question, *retrieve(question), answer_id=answer_id, started=started)


def will_ask_the_model(result: Result) -> bool:
    """Whether the answer to ``result`` is to be written by the provider's model."""
    return has_evidence(result) and providers.configured()


def answer_from(
    question: str,
    result: Result,
    sources: list[Source],
    *,
    answer_id: str | None = None,
    started: float | None = None,
) -> Answer:
    """The answer to ``question`` from what ``retrieve`` found."""
    started = time.perf_counter() if started is None else started
    found = Answer(answer_id or new_uuid(), question, "retrieval", sources=sources)
    if not has_evidence(result):
        _unknown(found)
    elif providers.configured():
        try:
            _written_by_model(found)
        except (EngineError, ProviderUnavailable) as error:  # logged by kind: never secrets
            log.warning(
                "The assistant's model call failed (%s): answering from retrieval",
                type(error).__name__,
            )
            _from_retrieval(found)
    else:
        _from_retrieval(found)
    found.duration_ms = (time.perf_counter() - started) * 1000
    return found


def answer_stream(
    question: str, result: Result, sources: list[Source], *, answer_id: str | None = None
) -> Iterator[list[Segment] | Answer]:
    """The answer as it is written: with a provider (and evidence), each paragraph of the
    model's text once it is complete (cited and cleaned as ``cited_paragraphs`` says), then
    the whole Answer; otherwise the Answer alone. A provider that fails before its first
    paragraph gives the retrieval answer; one that fails later keeps what it wrote."""
    started = time.perf_counter()
    if not will_ask_the_model(result):
        yield answer_from(question, result, sources, answer_id=answer_id, started=started)
        return
    found = Answer(answer_id or new_uuid(), question, "model", sources=sources)
    pending = ""
    try:
        for piece in providers.chat_stream(
            _messages(found), temperature=0.2, max_tokens=MAX_ANSWER_TOKENS
        ):
            pending += piece
            *complete, pending = re.split(r"\n\s*\n", pending)
            for block in complete:
                for paragraph in cited_paragraphs(block, sources):
                    found.paragraphs.append(paragraph)
                    yield paragraph
        for paragraph in cited_paragraphs(pending, sources):
            found.paragraphs.append(paragraph)
            yield paragraph
    except (EngineError, ProviderUnavailable) as error:  # logged by kind: never secrets
        log.warning("The assistant's model stream failed (%s)", type(error).__name__)
    if not found.paragraphs:
        found.mode = "retrieval"
        _from_retrieval(found)
    else:
        cited = {s.source.number for p in found.paragraphs for s in p if s.source is not None}
        found.tools = [s for s in found.sources if s.number in cited]
    found.duration_ms = (time.perf_counter() - started) * 1000
    yield found


def _unknown(found: Answer) -> None:
    found.mode = "unknown"
    found.intro = (
        "I don't know: nothing here matches that question well. These are the nearest tools; "
        "the tools page lists everything."
    )
    found.tools = [s for s in found.sources if s.document.kind in ("tool", "workflow")][:3]


def _from_retrieval(found: Answer) -> None:
    found.mode = "retrieval"
    tools = [s for s in found.sources if s.document.kind in ("tool", "workflow")]
    docs = [s for s in found.sources if s.document.kind in ("docs", "changelog")]
    # A question about the API or the site: its best match is a docs section.
    about_docs = bool(found.sources) and found.sources[0].document.kind in ("docs", "changelog")
    found.tools = tools[: (2 if about_docs else LISTED_TOOLS)]
    # Otherwise a docs section is listed only when it ranks among the best three.
    found.docs = docs[:LISTED_DOCS] if about_docs else [s for s in docs if s.number <= 3][:1]
    found.docs_first = about_docs
    found.intro = (
        "These parts of the documentation answer it best:"
        if about_docs
        else "These tools fit best:"
    )


def _messages(found: Answer) -> list[dict]:
    """The model's prompt: the rules, then the numbered documents and the question."""
    listed = "\n\n".join(
        f"[{s.number}] {s.title} ({s.document.kind})\n{s.document.text[:DOCUMENT_CHARS]}"
        for s in found.sources
    )
    return [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": f"Documents:\n\n{listed}\n\nQuestion: {found.question}"},
    ]


def _written_by_model(found: Answer) -> None:
    text = providers.chat(_messages(found), temperature=0.2, max_tokens=MAX_ANSWER_TOKENS)
    paragraphs = cited_paragraphs(text, found.sources)
    if not paragraphs:
        raise EngineError("The model wrote no answer.")
    found.mode = "model"
    found.paragraphs = paragraphs
    cited = {s.source.number for p in paragraphs for s in p if s.source is not None}
    found.tools = [s for s in found.sources if s.number in cited]


def cited_paragraphs(text: str, sources: list[Source]) -> list[list[Segment]]:
    """The model's text as paragraphs of text and citations: ``[n]`` of a retrieved source
    becomes a citation, any other marker is dropped, URLs and Markdown links are removed."""
    by_number = {s.number: s for s in sources}
    text = _MARKDOWN_LINK.sub(lambda m: m.group(1), text)
    text = _URL.sub("", text)
    paragraphs = []
    for block in re.split(r"\n\s*\n", text.strip()):
        segments: list[Segment] = []
        for i, piece in enumerate(_MARKER.split(block)):
            if i % 2 == 0:
                if piece:
                    segments.append(Segment(text=piece.replace("\n", " ")))
            elif (source := by_number.get(int(piece))) is not None:
                segments.append(Segment(source=source))
        if any(s.source is not None or s.text.strip() for s in segments):
            paragraphs.append(segments)
    return paragraphs


# --- the record of answers ---------------------------------------------------------------


def visitor_hash(visitor_id: str) -> str:
    """A salted hash of the visitor's cookie id: stored with answers, never the id."""
    secret = str(current_app.config["SECRET_KEY"]).encode()
    return hmac.new(secret, f"assistant:{visitor_id}".encode(), hashlib.sha256).hexdigest()


def record(found: Answer, visitor: str) -> AssistantAnswer:
    row = AssistantAnswer(
        id=found.id,
        question=found.question[:1000],
        retrieved=[{"id": s.document.id, "score": round(s.score, 6)} for s in found.sources],
        mode=found.mode,
        answer=found.as_text(),
        visitor=visitor,
    )
    db.session.add(row)
    db.session.flush()
    return row


def vote(answer_id: str, visitor: str, value: int) -> AssistantAnswer | None:
    """Set the visitor's vote (1 or -1) on their answer; None when it is not theirs."""
    row = db.session.get(AssistantAnswer, answer_id)
    if row is None or row.visitor is None or not hmac.compare_digest(row.visitor, visitor):
        return None
    row.vote = value
    db.session.flush()
    return row
