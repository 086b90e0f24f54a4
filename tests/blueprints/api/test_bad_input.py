"""Bad input is never a 500 (issue 13, item 5).

Example-based tests for each case found (deep nesting, NaN and infinities, unpaired
surrogates in a body, a form field or a tool's output, odd header values), then a
property-based test that throws arbitrary bytes, JSON documents and headers at every /v1
route with every method, with and without a valid key, and finds no 500: every error is
problem+json with the documented fields.
"""

import gzip
import json
import logging
import re
import string
import urllib.parse
import uuid

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from blueprints.api.pipeline import MAX_JSON_DEPTH, InvalidJson, parse_json
from extensions import db
from models import Run, UsageEvent
from tests.helpers import auth, needs_pg

TOOL = "word-counter"
SLUG_RUN = f"/v1/public/tools/{TOOL}/run"
DISPATCH = "/v1/tools/run"
PROBLEM_FIELDS = {"type", "title", "status", "detail", "code", "request_id"}

# Every endpoint that reads a JSON body, with a body it would otherwise take.
JSON_ENDPOINTS = [
    ("POST", DISPATCH, b'{"slug": "word-counter", "input": %s}'),
    ("POST", SLUG_RUN, b'{"input": %s}'),
    ("POST", "/v1/workflows/run", b'{"workflow_id": "x", "input": %s}'),
    ("POST", "/v1/images/generate", b'{"prompt": %s}'),
    ("POST", "/v1/voice/speak", b'{"text": %s}'),
    ("POST", "/v1/video/generate", b'{"prompt": %s}'),
    ("POST", "/v1/audiobooks", b'{"text": %s}'),
    ("PUT", "/v1/webhook", b'{"url": %s}'),
]
JSON_IDS = [f"{method} {path}" for method, path, _ in JSON_ENDPOINTS]


def assert_problem(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.get_data(as_text=True)[:2000]
    assert response.mimetype == "application/problem+json"
    body = response.get_json()
    assert set(body) >= PROBLEM_FIELDS
    assert body["status"] == status and body["code"] == code
    assert body["type"].endswith(code.replace("_", "-"))
    assert body["request_id"] == response.headers["X-Request-Id"]
    return body


def post_json(client, raw, path, data: bytes, method="POST", **headers):
    return client.open(
        path,
        method=method,
        data=data,
        content_type="application/json",
        headers={**auth(raw), **headers},
    )


def nested(levels: int, kind: str = "array") -> bytes:
    if kind == "array":
        return b"[" * levels + b"]" * levels
    return b'{"a":' * levels + b"1" + b"}" * levels


@pytest.fixture
def agency(make_key):
    """An Agency key: every endpoint takes its body."""
    return make_key("agency")


# --- deep nesting --------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "template"), JSON_ENDPOINTS, ids=JSON_IDS)
def test_deep_nesting_is_400_invalid_json(client, agency, method, path, template):
    for levels in (1_000, 100_000):
        for kind in ("array", "object"):
            for body in (nested(levels, kind), template % nested(levels, kind)):
                assert len(body) < 1024 * 1024  # within the text limit: not a 413
                response = post_json(client, agency, path, body, method=method)
                problem = assert_problem(response, 400, "invalid_json")
                assert f"nested deeper than {MAX_JSON_DEPTH} levels" in problem["detail"]


def test_nesting_up_to_the_limit_is_read_and_one_more_is_refused(client, make_key):
    raw = make_key()
    # The body is one level; its field "deep" the rest.
    at_limit = b'{"slug": "word-counter", "input": "x", "deep": %s}' % nested(MAX_JSON_DEPTH - 1)
    problem = assert_problem(post_json(client, raw, DISPATCH, at_limit), 422, "validation_failed")
    assert problem["errors"] == {"deep": ["Unknown field."]}
    inside = b'{"input": %s}' % nested(MAX_JSON_DEPTH - 1, "object")
    problem = assert_problem(post_json(client, raw, SLUG_RUN, inside), 422, "validation_failed")
    assert problem["errors"] == {"text": ["Must be a string."]}
    over = b'{"slug": "word-counter", "input": "x", "deep": %s}' % nested(MAX_JSON_DEPTH)
    assert_problem(post_json(client, raw, DISPATCH, over), 400, "invalid_json")


def _mixed(levels: int) -> bytes:
    """Arrays and objects in turn, ``levels`` deep."""
    text = b"1"
    for level in range(levels):
        text = b"[%s]" % text if level % 2 else b'{"k": %s}' % text
    return text


def test_the_depth_limit_counts_arrays_and_objects_alike():
    for document in (nested(MAX_JSON_DEPTH), nested(MAX_JSON_DEPTH, "object")):
        parse_json(document)
    parse_json(_mixed(MAX_JSON_DEPTH))
    for document in (
        nested(MAX_JSON_DEPTH + 1), _mixed(MAX_JSON_DEPTH + 1), nested(1025),
        b"[" * 1100, b"[" * 5000,  # cut short: orjson ran out of room, or of depth, first
    ):  # fmt: skip
        with pytest.raises(InvalidJson, match=f"nested deeper than {MAX_JSON_DEPTH} levels"):
            parse_json(document)
    # Many brackets, little depth: looked at, and read.
    assert parse_json(b"[" + b",".join([b"[[]]"] * 300) + b"]") == [[[]]] * 300
    assert parse_json(b'["' + b"[" * 5000 + b'"]') == ["[" * 5000]
    with pytest.raises(InvalidJson):  # the deep branch is the last of many shallow ones
        parse_json(b"[" + b"[1]," * 300 + nested(MAX_JSON_DEPTH) + b"]")


def test_what_the_limit_lets_through_is_encoded_downstream():
    """A body at the limit stays within what encodes it later: orjson writes 254 levels,
    and the recorder's batch puts a run's input two levels down."""
    from services.recorder import _document

    deepest = parse_json(_mixed(MAX_JSON_DEPTH))
    assert json.loads(_document([{"input": deepest}])) == [{"input": deepest}]
    assert json.loads(orjson.dumps({"output": {"run": deepest}})) == {"output": {"run": deepest}}


def test_a_deep_body_with_an_idempotency_key_is_refused_and_the_key_stays_free(client, make_key):
    raw = make_key()
    deep = b'{"input": %s}' % nested(5_000)
    first = post_json(client, raw, SLUG_RUN, deep, **{"Idempotency-Key": "deep-1"})
    assert_problem(first, 400, "invalid_json")
    retried = post_json(client, raw, SLUG_RUN, b'{"input": "one two"}', **{"Idempotency-Key": "x"})
    assert retried.status_code == 200


# --- NaN, infinities, numbers ----------------------------------------------------------------


NOT_JSON = [
    (b"NaN", "NaN at line 1"),
    (b"Infinity", "Infinity at line 1"),
    (b"-Infinity", "-Infinity at line 1"),
    (b"1e400", "too large for a double"),
    (b"-1e400", "too large for a double"),
]


@pytest.mark.parametrize(("method", "path", "template"), JSON_ENDPOINTS, ids=JSON_IDS)
def test_nan_and_infinity_are_not_json(client, agency, method, path, template):
    for literal, named in NOT_JSON:
        response = post_json(client, agency, path, template % literal, method=method)
        problem = assert_problem(response, 400, "invalid_json")
        assert named in problem["detail"]


def test_a_wide_integer_is_read_exactly(client, make_key):
    wide = 2**70 + 1  # orjson alone would read 1.1805916207174113e+21
    body = b'{"slug": "json-formatter", "input": "[1]", "indent": %d}' % wide
    problem = assert_problem(
        post_json(client, make_key(), DISPATCH, body), 422, "validation_failed"
    )
    assert problem["errors"] == {"indent": ["Must be at most 8."]}
    assert parse_json(b"[%d, -%d, 1.5]" % (wide, wide)) == [wide, -wide, 1.5]


# --- unpaired surrogates -------------------------------------------------------------------


@pytest.mark.parametrize(("method", "path", "template"), JSON_ENDPOINTS, ids=JSON_IDS)
def test_an_unpaired_surrogate_in_a_field_is_400(client, agency, method, path, template):
    for escape in (b"\\ud800", b"\\udbff", b"\\udc00", b"\\ud800\\u0041"):
        response = post_json(client, agency, path, template % (b'"a%sb"' % escape), method=method)
        problem = assert_problem(response, 400, "invalid_json")
        assert "unpaired surrogate" in problem["detail"]
        assert escape[:6].decode() in problem["detail"]


def test_an_unpaired_surrogate_uses_no_quota_and_a_pair_is_run_and_stored(client, make_key):
    raw = make_key()
    refused = post_json(client, raw, SLUG_RUN, b'{"input": "x \\ud800 y"}')
    assert_problem(refused, 400, "invalid_json")
    assert db.session.scalar(db.select(db.func.count()).select_from(Run)) == 0
    paired = post_json(client, raw, SLUG_RUN, b'{"input": "x \\ud83d\\ude00 y"}')
    assert paired.status_code == 200, paired.get_json()
    run_id = paired.get_json()["run_id"]
    status = client.get(f"/v1/tools/run/{run_id}/status", headers=auth(raw))
    assert status.status_code == 200
    assert db.session.get(Run, run_id).input == {"text": "x \U0001f600 y"}
    who = client.get("/v1/public/whoami", headers=auth(raw)).get_json()
    assert who["usage"]["calls_today"] == 1  # the refused body counted nothing


def test_a_surrogate_key_is_refused_too(client, make_key):
    response = post_json(client, make_key(), SLUG_RUN, b'{"input": "x", "\\udfff": 1}')
    assert "unpaired surrogate" in assert_problem(response, 400, "invalid_json")["detail"]


def _multipart(fields: dict[str, bytes], boundary: str = "b0undary") -> tuple[bytes, str]:
    parts = [
        b'--%s\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n'
        % (boundary.encode(), name.encode("utf-8", "surrogatepass"), value)
        for name, value in fields.items()
    ]
    return b"".join(parts) + b"--%s--\r\n" % boundary.encode(), boundary


def _post_form(client, raw, path, fields: dict[str, bytes]):
    data, boundary = _multipart(fields)
    return client.post(
        path,
        data=data,
        content_type=f"multipart/form-data; boundary={boundary}",
        headers=auth(raw),
    )


def test_surrogate_bytes_in_a_multipart_field_are_read_as_replacement_characters(client, make_key):
    """A form field is decoded as UTF-8 with errors replaced: CESU-8 bytes of a surrogate
    (ED A0 80) are three U+FFFD, so the run is answered and stored."""
    raw = make_key()
    response = _post_form(client, raw, SLUG_RUN, {"text": b"one \xed\xa0\x80 two \xff"})
    assert response.status_code == 200, response.get_json()
    run_id = response.get_json()["run_id"]
    assert client.get(f"/v1/tools/run/{run_id}/status", headers=auth(raw)).status_code == 200
    assert db.session.get(Run, run_id).input == {"text": "one \ufffd\ufffd\ufffd two \ufffd"}


@pytest.mark.parametrize(
    "value",
    [b'"\\ud800"', b"NaN", b"Infinity", nested(1_000), nested(50_000, "object"), b"1e400"],
    ids=["surrogate", "nan", "infinity", "deep-1000", "deep-50000", "overflow"],
)
def test_a_typed_multipart_field_that_json_refuses_is_422_naming_it(client, make_key, value):
    """Fields that are not text are read as JSON; what the body would be refused for is
    left as text, and validation names the field (it was a 500 for deep nesting)."""
    response = _post_form(
        client, make_key(), "/v1/public/tools/json-formatter/run", {"json": b"[1]", "indent": value}
    )
    problem = assert_problem(response, 422, "validation_failed")
    assert problem["errors"] == {"indent": ["Must be an integer."]}


@needs_pg  # PostgreSQL refuses "\ud800" in the recorder's batch; SQLite stores it as it is
def test_an_unpaired_surrogate_in_an_output_is_stored_as_a_replacement_character(
    client, make_key, caplog
):
    """The JSON formatter reads the text "\\ud800" (a JSON string holding a lone surrogate)
    and writes it out as one: the answer carries it escaped, and the run's rows are stored
    with U+FFFD in its place instead of being dropped."""
    raw = make_key()
    body = json.dumps({"input": '"\\ud800 and \\udc00"'}).encode()
    with caplog.at_level(logging.ERROR, logger="services.recorder"):
        response = post_json(client, raw, "/v1/public/tools/json-formatter/run", body)
    assert response.status_code == 200, response.get_json()
    result = response.get_json()
    assert result["output"]["formatted"] == '"\ud800 and \udc00"'
    assert "dropped" not in caplog.text
    status = client.get(f"/v1/tools/run/{result['run_id']}/status", headers=auth(raw))
    assert status.status_code == 200
    assert status.get_json()["output"]["formatted"] == '"\ufffd and \ufffd"'
    ledger = db.select(UsageEvent).where(UsageEvent.run_id == result["run_id"])
    assert db.session.scalar(ledger) is not None


def test_the_recorder_keeps_pairs_and_escaped_backslashes():
    from services.recorder import _document

    values = [{"a": "\ud800", "b": "\ud83d\ude00", "c": "\\ud800", "d": "\\\ud800", "n": 2**70}]
    assert json.loads(_document(values)) == [
        {"a": "\ufffd", "b": "\U0001f600", "c": "\\ud800", "d": "\\\ufffd", "n": 2**70}
    ]
    assert json.loads(_document([{"a": "\udc00\ud800\udc00\ud800"}])) == [
        {"a": "\ufffd\U00010000\ufffd"}
    ]


# --- what else orjson reads differently from the stdlib --------------------------------------


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b'["\xff"]', "not UTF-8 (byte 0xff at offset 2)"),
        (b'["\xed\xa0\x80"]', "not UTF-8 (byte 0xed at offset 2)"),
        ('{"input": "x"}'.encode("utf-16"), "send it as UTF-8"),
        ('{"input": "x"}'.encode("utf-32-le"), "send it as UTF-8"),
        (b'{"input": ', "unexpected end of data: line 1 column 11 (char 10)"),
        (b'{"input": "x",}', "trailing comma"),
        (b"[" + b"9" * 5000 + b"]", "too large for a double"),
        # A body cut short after many opened arrays: orjson said "failed to allocate memory".
        (b"[" * 300, "Expecting value: line 1 column 301 (char 300)"),
        (b"[1," * 600, "Expecting value: line 1 column 1801 (char 1800)"),
        (b"[" * 700 + b"x", "Expecting value: line 1 column 701 (char 700)"),
    ],
)
def test_refusals_say_why(data, said):
    with pytest.raises(InvalidJson, match="^The body is not valid JSON: ") as refused:
        parse_json(data)
    assert said in str(refused.value)


def test_a_utf8_byte_order_mark_is_ignored(client, make_key):
    response = post_json(client, make_key(), SLUG_RUN, b'\xef\xbb\xbf{"input": "one two"}')
    assert response.status_code == 200


def test_a_compressed_body_is_415_naming_its_coding_and_uses_no_quota(client, make_key):
    """A gzip body was read as it came and refused as JSON that is not UTF-8 (byte 0x1f)."""
    raw = make_key()
    body = b'{"input": "one two"}'
    for coding, data in (("gzip", gzip.compress(body)), ("br", body), ("GZIP, identity", body)):
        response = post_json(client, raw, SLUG_RUN, data, **{"Content-Encoding": coding})
        assert response.status_code == 415, response.get_data()
        problem = response.get_json()
        assert problem["code"] == "unsupported_media_type"
        assert f"Content-Encoding: {coding}," in problem["detail"]
        assert response.headers["Accept-Encoding"] == "identity"
    for coding in ("identity", " Identity "):
        response = post_json(client, raw, SLUG_RUN, body, **{"Content-Encoding": coding})
        assert response.status_code == 200
    usage = client.get("/v1/public/whoami", headers=auth(raw)).get_json()
    assert usage["usage"]["calls_today"] == 2


# --- headers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prefer",
    [
        "wait=\xb2",
        "wait=\xb9\xb3",
        "wait=" + "9" * 5000,
        "wait=-1",
        "wait=1.5",
        "\xff=\xff",
        "," * 9000,
    ],
)
def test_an_odd_prefer_is_ignored(client, make_key, prefer):
    response = client.post(
        SLUG_RUN,
        json={"input": "one two"},
        headers=auth(make_key()),
        environ_overrides={"HTTP_PREFER": prefer},
    )
    assert response.status_code == 200
    assert "Preference-Applied" not in response.headers


@pytest.mark.parametrize(
    ("key", "status"),
    [("caf\xe9-\xff", 200), ("x" * 255, 200), ("x" * 256, 422), ("\x01", 422), ("a\x85b", 422)],
)
def test_odd_idempotency_keys(client, make_key, key, status):
    response = client.post(
        SLUG_RUN,
        json={"input": "one two"},
        headers=auth(make_key()),
        environ_overrides={"HTTP_IDEMPOTENCY_KEY": key},
    )
    assert response.status_code == status
    if status == 422:
        assert_problem(response, 422, "validation_failed")


@pytest.mark.parametrize("incoming", ["abc\n", "abc\r\nSet-Cookie: x=1", "\xe9", "a" * 129, ""])
def test_an_odd_request_id_is_replaced(client, incoming):
    response = client.get("/v1/health", environ_overrides={"HTTP_X_REQUEST_ID": incoming})
    assert response.status_code == 200
    assert len(response.headers["X-Request-Id"]) == 32
    assert "Set-Cookie" not in response.headers


@pytest.mark.parametrize(
    "length", ["9" * 5000, "99999999999999999999", "abc", "-1", "\xb2", "1e3", " 12", ""]
)
def test_an_odd_content_length_is_not_a_500(client, make_key, length):
    response = client.post(
        SLUG_RUN,
        data=b'{"input": "one two"}',
        content_type="application/json",
        headers=auth(make_key()),
        environ_overrides={"CONTENT_LENGTH": length},
    )
    assert response.status_code in {200, 400, 413, 422}, response.get_data(as_text=True)
    if response.status_code != 200:
        assert response.mimetype == "application/problem+json"


@pytest.mark.parametrize(
    ("content_type", "status"),
    [
        ("application/json; charset=utf-16", 200),
        ("multipart/form-data", 422),  # no boundary: an empty form
        ("multipart/form-data; boundary=\xe9\xff", 422),
        ("multipart/form-data; boundary=" + "b" * 5000, 422),
        ("text/plain", 415),
        ("\xff/\xfe", 415),
        ("application/json;;;===", 200),
        (";", 200),  # no media type: read as JSON
    ],
)
def test_odd_content_types(client, make_key, content_type, status):
    response = client.post(
        SLUG_RUN,
        data=b'{"input": "one two"}',
        headers=auth(make_key()),
        environ_overrides={"CONTENT_TYPE": content_type},
    )
    assert response.status_code == status, response.get_data(as_text=True)


@pytest.mark.parametrize("header", ["HTTP_X_SVC_API_KEY", "HTTP_AUTHORIZATION"])
@pytest.mark.parametrize("value", ["svc_" + "\xe9" * 40, "Bearer " + "x" * 100_000, "\x00", " "])
def test_odd_keys_are_401(client, header, value):
    response = client.get("/v1/public/whoami", environ_overrides={header: value})
    assert_problem(response, 401, "invalid_api_key")


# --- property-based: every /v1 route, every method -----------------------------------------

# Endpoints that start work (a run, a workflow, a delivery): the keys used are sandbox keys,
# so no provider or model runs, and ``wait=0`` is added to any Prefer, so a queued run is
# answered 202 at once (no worker runs here).
STARTS_WORK = {
    "tools.RunBySlug",
    "tools.RunDispatch",
    "workflows.WorkflowRunStart",
    "images.ImagesGenerate",
    "voice.VoiceSpeak",
    "video.VideoGenerate",
    "audiobooks.Audiobooks",
    "webhook.Redeliver",
    "webhook.WebhookTest",
}
EXTRA_METHODS = ("PATCH", "DELETE", "TRACE")  # a 405 where the route does not take them
FUZZED_HEADERS = (
    "HTTP_X_SVC_API_KEY",
    "HTTP_AUTHORIZATION",
    "HTTP_PREFER",
    "HTTP_IDEMPOTENCY_KEY",
    "HTTP_X_REQUEST_ID",
    "CONTENT_TYPE",
    "CONTENT_LENGTH",
    "HTTP_ACCEPT",
    "HTTP_HOST",
    "HTTP_TRANSFER_ENCODING",
    "HTTP_COOKIE",
    "HTTP_ORIGIN",
    "HTTP_X_FORWARDED_FOR",
)
SLUGS = ["word-counter", "json-formatter", "text-summarizer", "run", "runs", "no-such-tool"]

latin1 = st.text(st.characters(max_codepoint=255), max_size=40)
header_values = st.one_of(
    latin1,
    st.sampled_from(["", " ", "\xb2", "wait=\xb2", "respond-async", "9" * 5000, "-1"]),
    st.builds(
        lambda c, n: c * n, st.sampled_from(["x", "\xff", ",", "=", ";"]), st.integers(1, 20_000)
    ),
)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),  # wider than 64 bits too
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
    st.sampled_from(["one two three", "", " ", "\x00", "\U0001f600", "\ufeff"]),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
# Text JSON has no value for, or that its readers differ on, spliced into a document.
odd_tokens = st.sampled_from(
    [
        b"NaN", b"Infinity", b"-Infinity", b"nan", b"inf", b"1e400", b"-1e999", b"1" * 400,
        b"-" + b"9" * 5000, b"9" * 30, b'"\\ud800"', b'"\\udc00x"', b'"x\\ud800\\u0041"',
        b'"\\ud83d\\ude00"', b'"\\u0000"', b'"\xed\xa0\x80"', b'"\xff"', b"[" * 200,
        b"]", b"{", b"\xef\xbb\xbf", b"\x00", b"", b"'x'", b"0x10", b"+1", b".5", b"01",
    ]
)  # fmt: skip


@st.composite
def json_documents(draw, fields: list[str]) -> bytes:
    """A JSON document as bytes: a plausible body, a deep one, or one with odd tokens."""
    kind = draw(st.sampled_from(["run", "plausible", "any", "deep", "spliced"]))
    if kind == "deep":
        levels = draw(st.integers(MAX_JSON_DEPTH - 2, 120_000))
        opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}"), (b'[{"a":', b"}]")]))
        inner = opener * levels + b"1" + closer * levels
        return b'{"input": %s}' % inner if draw(st.booleans()) else inner
    if kind == "any":
        return json.dumps(draw(json_values), ensure_ascii=draw(st.booleans())).encode(
            "utf-8", "surrogatepass"
        )
    if kind == "run":  # a run the endpoints take, with any text
        body = {"slug": draw(st.sampled_from(SLUGS)), "input": draw(st.text() | json_scalars)}
    else:
        body = {
            draw(st.sampled_from(fields)): draw(json_values | st.sampled_from(SLUGS))
            for _ in range(draw(st.integers(0, 3)))
        }
    text = json.dumps(body, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass")
    if kind in ("run", "plausible") or not text.endswith(b"}"):
        return text
    token = draw(odd_tokens)
    joiner = b", " if len(text) > 2 else b""
    return (
        text[:-1]
        + joiner
        + b'"%s": %s}' % (draw(st.sampled_from(fields)).encode("utf-8", "surrogatepass"), token)
    )


def multipart_bodies(fields: list[str]):
    values = st.binary(max_size=40) | st.sampled_from(
        [b"one two", b'"\\ud800"', b"NaN", nested(2_000), b"\xed\xa0\x80", b"[1, 2]"]
    )
    return st.dictionaries(st.sampled_from(fields), values, max_size=3).map(_multipart)


FIELDS = [
    "slug", "input", "text", "json", "indent", "workflow_id", "url", "rotate_secret", "prompt",
    "voice", "format", "status", "limit", "cursor", "unknown", "\ud800", "",
]  # fmt: skip


@pytest.fixture
def fuzz(app, client, make_key):
    """The routes and methods to try, the keys to try them with, and ids to fill paths."""
    unlimited = {"per_minute_override": 10**6}
    pro = make_key("pro", sandbox=True, **unlimited)
    agency = make_key("agency", sandbox=True, **unlimited)
    # The valid keys three times over the others: most requests get past the key.
    keys = [pro, agency] * 3 + [None, "svc_" + "A" * 40, make_key("free", **unlimited)]
    run = client.post(SLUG_RUN, json={"input": "one two"}, headers=auth(pro)).get_json()
    # Each rule with its methods, the ones it serves six times over the others.
    routes = [
        (rule, sorted(rule.methods - {"HEAD", "OPTIONS"}) * 6 + ["HEAD", "OPTIONS", *EXTRA_METHODS])
        for rule in app.url_map.iter_rules()
        if rule.rule.startswith("/v1")
    ]
    workflow = next(iter(app.extensions["workflows"].workflows))
    return {
        "routes": routes,
        # The routes that read a body, for the tests of bodies (and now and then any other).
        "body_routes": [
            (rule, [method for method in methods if method in {"POST", "PUT"}])
            for rule, methods in routes
            if rule.methods & {"POST", "PUT"}
        ],
        "keys": keys,
        "run_id": run["run_id"],
        "workflow": workflow,
    }


def _path(draw, rule, fuzz) -> str:
    """The rule's path with each variable a plausible value or random text or bytes."""
    values = {}
    for name, converter in rule._converters.items():
        plausible = {
            "ToolSlugConverter": [*SLUGS, fuzz["workflow"]],
            "UUIDConverter": [fuzz["run_id"], str(uuid.uuid4())],
        }.get(type(converter).__name__, ["f_" + "a" * 20])
        value = draw(
            st.sampled_from(plausible)
            | st.sampled_from(plausible)
            | st.text(max_size=20)
            | st.binary(max_size=12)
        )
        if isinstance(value, str):
            value = value.encode("utf-8", "surrogatepass")
        values[name] = urllib.parse.quote(value, safe="")
    return _VARIABLE.sub(lambda variable: values[variable[1]], rule.rule)


_VARIABLE = re.compile(r"<(?:[^:>]+:)?([^>]+)>")


def check(response, method: str, path: str = "") -> None:
    status = response.status_code
    detail = response.get_data(as_text=True)[:500]
    assert status != 500, detail
    assert status < 500 or status == 503, detail
    assert response.headers.get("X-Request-Id")
    if status < 400:
        return
    if path == "/v1/mcp" and response.mimetype == "application/json":
        # The MCP endpoint's own refusals are JSON-RPC errors (docs/api/mcp.md).
        if method != "HEAD":
            error = json.loads(response.get_data())["error"]
            assert isinstance(error["code"], int) and error["message"], error
        return
    assert response.mimetype == "application/problem+json", (status, detail)
    if method == "HEAD":
        return
    body = json.loads(response.get_data())
    assert set(body) >= PROBLEM_FIELDS, body
    assert body["status"] == status
    if "Idempotent-Replayed" not in response.headers:  # a replay is the first answer's body
        assert body["request_id"] == response.headers["X-Request-Id"]
    assert body["type"].endswith(body["code"].replace("_", "-"))
    assert isinstance(body["title"], str) and isinstance(body["detail"], str) and body["detail"]
    if status == 503:
        assert body["code"] in {"service_unavailable", "provider_unavailable"}


def _send(client, fuzz, draw, *, body: bytes | None, content_type: str | None, environ=None):
    routes = fuzz["routes"]
    if body is not None and draw(st.integers(0, 9)) < 8:
        routes = fuzz["body_routes"]
    rule, methods = draw(st.sampled_from(routes))
    method = draw(st.sampled_from(methods))
    key = draw(st.sampled_from(fuzz["keys"]))
    environ = dict(environ or {})
    if key is not None and "HTTP_X_SVC_API_KEY" not in environ:
        environ["HTTP_X_SVC_API_KEY"] = key
    if rule.endpoint in STARTS_WORK:
        environ["HTTP_PREFER"] = environ.get("HTTP_PREFER", "") + ", wait=0"
    query = draw(st.none() | latin1 | st.sampled_from(["category=seo", "limit=0&cursor=%ff"]))
    if query is not None:
        environ["QUERY_STRING"] = query
    if content_type is not None:  # as a server passes it on (the test client checks it)
        environ["CONTENT_TYPE"] = content_type
    path = _path(draw, rule, fuzz)
    response = client.open(path, method=method, data=body, environ_overrides=environ)
    check(response, method, path)
    code = response.get_json(silent=True) if response.status_code >= 400 else None
    event(f"{response.status_code} {code.get('code') if isinstance(code, dict) else ''}")
    return response


FUZZ_SETTINGS = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
CONTENT_TYPES = st.sampled_from(
    [
        "application/json",
        "application/json; charset=latin-1",
        "application/problem+json",
        "multipart/form-data",
        "multipart/form-data; boundary=b0undary",
        "application/x-www-form-urlencoded",
        "text/plain",
        "",
    ]
) | st.text(string.printable, max_size=30)


@FUZZ_SETTINGS
@given(data=st.data())
def test_arbitrary_bytes_are_never_a_500(client, fuzz, data):
    body = data.draw(st.binary(max_size=2000) | multipart_bodies(FIELDS).map(lambda m: m[0]))
    _send(client, fuzz, data.draw, body=body, content_type=data.draw(CONTENT_TYPES))


@FUZZ_SETTINGS
@given(data=st.data())
def test_arbitrary_json_is_never_a_500(client, fuzz, data, caplog):
    if data.draw(st.booleans()):
        form, boundary = data.draw(multipart_bodies(FIELDS))
        body, content_type = form, f"multipart/form-data; boundary={boundary}"
    else:
        body = data.draw(json_documents(FIELDS))
        content_type = data.draw(st.sampled_from(["application/json", "application/ld+json"]))
    with caplog.at_level(logging.ERROR, logger="services.recorder"):
        _send(client, fuzz, data.draw, body=body, content_type=content_type)
    # Whatever was answered was stored: no run's rows were refused by the database.
    assert "dropped the rows" not in caplog.text


@FUZZ_SETTINGS
@given(data=st.data())
def test_arbitrary_headers_are_never_a_500(client, fuzz, data):
    environ = data.draw(st.dictionaries(st.sampled_from(FUZZED_HEADERS), header_values, max_size=4))
    body = data.draw(st.none() | json_documents(FIELDS))
    _send(client, fuzz, data.draw, body=body, content_type=None, environ=environ)
