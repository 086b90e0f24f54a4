"""``Idempotency-Key`` on the POSTs that start runs: the first answer kept and replayed."""

from flask import current_app, request

from blueprints.api.pipeline.bodies import validation_failed
from blueprints.api.pipeline.keys import current_key, settle_limit
from blueprints.api.problems import Problem, problem_response
from services import idempotency

# --- Idempotency-Key on POSTs that start runs ---------------------------------------------

IDEMPOTENCY_HEADER = "Idempotency-Key"
_IDEMPOTENCY_ENVIRON = "HTTP_IDEMPOTENCY_KEY"
# Answers worth replaying: the run was started (or refused for its own input). Anything else
# (a 401, a 429, a 503...) leaves the key free, so the same request can simply be retried.
_REPLAYABLE = {200, 202, 422}


def respond_idempotently(produce, events=None):
    """``produce()`` the answer, or replay the first answer to a repeated request with the
    same ``Idempotency-Key`` (422 for the key on another request, 409 while in flight).

    A streamed answer (a run's events, ``"stream": true``) is not kept: its run is. The key is
    settled as soon as the run is admitted, and a repeated request gets ``events(run_id)``,
    that run's events from its start: a client whose stream broke retries the request and
    picks up the same run, which ran once."""
    key = request._get_current_object().environ.get(_IDEMPOTENCY_ENVIRON)
    if key is None:
        return produce()
    settle_limit()  # a caller over its limit claims no key
    if not 1 <= len(key) <= 255 or not key.isprintable():
        raise validation_failed({IDEMPOTENCY_HEADER: ["Must be 1 to 255 printable characters."]})
    context = current_key()
    print_ = idempotency.fingerprint(request.method, request.path, request.get_data())
    slot = idempotency.claim(context.key_id, key, print_)
    if slot.state == "conflict":
        raise Problem(
            422,
            "idempotency_key_reused",
            "This Idempotency-Key was used for a different request in the last 24 hours.",
        )
    if slot.state == "in_flight":
        raise Problem(
            409,
            "idempotency_in_flight",
            "A request with this Idempotency-Key is still being processed; retry shortly.",
            headers={"Retry-After": 1},
        )
    if slot.state == "replay":
        stored = slot.stored
        if "events_of" in stored and events is not None:
            response = events(stored["events_of"])
        else:
            response = current_app.response_class(
                stored["body"], status=stored["status"], mimetype=stored["mimetype"]
            )
        for name, value in stored["headers"].items():
            response.headers[name] = value
        response.headers["Idempotent-Replayed"] = "true"
        return response
    try:
        response = current_app.make_response(produce())
    except Problem as problem:
        kept = None
        if problem.status in _REPLAYABLE:
            answer = problem_response(problem)
            kept = _keepable(answer)
        idempotency.complete(context.key_id, key, print_, kept)
        raise
    except BaseException:  # an error, or the request given up on: the key is free again
        idempotency.complete(context.key_id, key, print_, None)
        raise
    kept = _keepable(response) if response.status_code in _REPLAYABLE else None
    idempotency.complete(context.key_id, key, print_, kept)
    return response


def _keepable(response) -> dict:
    followed = getattr(response, "events_of", None)
    if followed is not None:  # read as it streams, never held here
        return {"status": response.status_code, "events_of": followed, "headers": {}}
    headers = {
        name: response.headers[name]
        for name in ("Location", "Preference-Applied")
        if name in response.headers
    }
    return {
        "status": response.status_code,
        "mimetype": response.mimetype,
        "body": response.get_data(as_text=True),
        "headers": headers,
    }
