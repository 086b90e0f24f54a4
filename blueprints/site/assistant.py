"""The site assistant's pages: ``/assistant?q=`` answers on a whole page (no JavaScript
needed), ``/assistant/stream?q=`` streams the same answer as server-sent events for
static/js/assistant.js, and ``/assistant/answers/<id>/vote`` stores a thumbs up or down.

Answers are rendered here, escaped by Jinja: the model's text is never HTML, and only the
server's links to retrieved documents are links (services/assistant/answers.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from flask import (
    Response,
    abort,
    get_template_attribute,
    make_response,
    redirect,
    render_template,
    request,
    stream_with_context,
)
from flask_wtf.csrf import generate_csrf
from markupsafe import Markup

from blueprints.site.routes import bp
from blueprints.site.visitor import current_visitor, remember_visitor
from extensions import db
from models.base import new_uuid
from services.assistant import answers
from services.assistant.answers import QuestionRefused

EXAMPLES = (
    "Which tool turns a podcast into show notes?",
    "How do I verify a webhook?",
    "Make my photo smaller for my website",
    "How many runs a day can I do for free?",
)


def answer_parts(found: answers.Answer) -> list[Markup]:
    """The answer's parts as HTML, in order: the intro, each paragraph, the links."""
    paragraph = get_template_attribute("site/assistant/_answer.html", "paragraph")
    links = get_template_attribute("site/assistant/_answer.html", "links")
    parts = [Markup("<p>{}</p>").format(found.intro)] if found.intro else []
    parts += [paragraph(segments) for segments in found.paragraphs]
    if found.mode == "model":
        if found.tools:
            parts.append(links(found.tools, "Sources"))
    else:
        lists = []
        if found.tools:
            heading = "Nearest tools" if found.mode == "unknown" else "Tools"
            lists.append(links(found.tools, heading))
        if found.docs:
            docs = links(found.docs, "Documentation")
            lists.insert(0 if found.docs_first else len(lists), docs)
        parts += lists
    return [Markup(str(part).strip()) for part in parts]


def _ask(question: str) -> tuple[str, str]:
    """The question checked and counted against the visitor's limits; (question, the
    visitor's hash). Raises QuestionRefused."""
    question = answers.check_question(question)
    visitor = current_visitor().visitor
    remember_visitor()
    answers.spend_question(visitor.id, visitor.address)
    return question, answers.visitor_hash(visitor.id)


def _refused(refused: QuestionRefused, question: str):
    page = render_template(
        "site/assistant/page.html", question=question, error=refused.message, examples=EXAMPLES
    )
    response = make_response(page, refused.status)
    if refused.retry_after:
        response.headers["Retry-After"] = str(refused.retry_after)
    return response


@bp.get("/assistant")
def assistant():
    """Ask the assistant: the form, or the whole answer to ``q``."""
    raw = request.args.get("q")
    if raw is None or (not raw.strip() and "q" not in request.args):
        return render_template(
            "site/assistant/page.html",
            question="",
            examples=EXAMPLES,
            voted=request.args.get("voted") == "1",
        )
    try:
        question, visitor = _ask(raw)
    except QuestionRefused as refused:
        return _refused(refused, raw[:2000])
    found = answers.answer(question)
    answers.record(found, visitor)
    db.session.commit()
    return render_template(
        "site/assistant/page.html",
        question=question,
        answer=found,
        parts=answer_parts(found),
        csrf=generate_csrf(),
        examples=EXAMPLES,
    )


def _event(name: str, data: str) -> str:
    lines = data.splitlines() or [""]
    return f"event: {name}\n" + "".join(f"data: {line}\n" for line in lines) + "\n"


@bp.get("/assistant/stream")
def assistant_stream():
    """The answer to ``q`` as server-sent events: ``status`` (text), then ``chunk`` events
    (HTML: paragraphs, a model's as it writes them, then the list of links), then ``done``
    (HTML: the vote form); a refused question is one ``refused`` event (HTML) with status
    422 or 429."""
    raw = request.args.get("q", "")
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    try:
        question, visitor = _ask(raw)
    except QuestionRefused as refused:
        message = render_template("site/assistant/_refused.html", message=refused.message)
        if refused.retry_after:
            headers["Retry-After"] = str(refused.retry_after)
        return Response(
            _event("refused", message),
            status=refused.status,
            mimetype="text/event-stream",
            headers=headers,
        )
    csrf = generate_csrf()  # now: the session cannot be saved once the body streams
    answer_id = new_uuid()

    def events() -> Iterator[str]:
        yield _event("status", "Searching the tools and the docs…")
        result, sources = answers.retrieve(question)
        if answers.will_ask_the_model(result):
            yield _event("status", f"Writing an answer from the {len(sources)} pages found…")
        paragraph = get_template_attribute("site/assistant/_answer.html", "paragraph")
        sent = 0
        for part in answers.answer_stream(question, result, sources, answer_id=answer_id):
            if isinstance(part, answers.Answer):
                found = part
            else:  # a paragraph of the model's, as it is written
                yield _event("chunk", str(paragraph(part)).strip())
                sent += 1
        answers.record(found, visitor)
        db.session.commit()
        # The rest: the model's paragraphs were sent (a model answer has no intro).
        for html in answer_parts(found)[sent if found.mode == "model" else 0 :]:
            yield _event("chunk", html)
        footer = get_template_attribute("site/assistant/_answer.html", "answer_footer")
        yield _event("done", str(footer(found, csrf)).strip())

    return Response(
        stream_with_context(events()),
        mimetype="text/event-stream",
        headers=headers,
    )


@bp.post("/assistant/answers/<answer_id>/vote")
def vote_answer(answer_id: str):
    """Thumbs up or down on one of the visitor's answers."""
    value = {"up": 1, "down": -1}.get(request.form.get("vote", ""))
    if value is None:
        abort(422)
    visitor = answers.visitor_hash(current_visitor().visitor.id)
    if answers.vote(answer_id, visitor, value) is None:
        abort(404)
    db.session.commit()
    if request.headers.get("X-Requested-With") == "fetch":
        return render_template("site/assistant/_voted.html")
    return redirect("/assistant?voted=1", code=303)
