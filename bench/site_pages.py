"""The targets of ``bench/site.py``'s pages, as a visitor's browser asks for them: the
site's settings (the address cap out of reach), a browser's headers and cookies, the tool
page's form token, the measured requests and their checks, and the load generators that give
each run request a new device (a user agent of its own).
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from dataclasses import dataclass
from urllib.parse import urlencode

from bench.harness import SAMPLE_TEXT, Answer, SetupFailed, product_env
from bench.loadgen import Measurement, PythonLoad, Request, Wrk, lua_string

TOOL = "word-counter"
SEARCH = "image"
SESSION_COOKIE = "svc_session"  # config.py's SESSION_COOKIE_NAME
# A browser's user agent; each run request adds a part of its own (a new device).
USER_AGENT = "Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0"
# Ratio to bare Flask that each page should keep (the targets; the run has none).
TARGETS = {"tools": 0.10, "search": 0.30, "tool": 0.30, "tool-back": 0.30}
LABELS = {
    "bare": "bare Flask GET /hello",
    "tools": "GET /tools/ (full page)",
    "search": f"GET /tools/?q={SEARCH} (htmx)",
    "tool": f"GET /tools/{TOOL}/ (first visit)",
    "tool-back": f"GET /tools/{TOOL}/ (returning)",
    "run": f"POST /tools/{TOOL}/ (a run)",
}


@dataclass
class SiteRequest(Request):
    """A request a load generator repeats; ``new_device`` gives each one a user agent of
    its own (the device counter hashes the address with it)."""

    new_device: bool = False


def site_env(args) -> dict[str, str]:
    """The environment of every product command and server."""
    # Every run comes from 127.0.0.1: the address's cap (20 a day) must never bind.
    return product_env(args.database_url, args.redis_url, WEB_ADDRESS_DAILY_CAP="1000000000")


def browser(**more: str) -> dict[str, str]:
    """A browser's headers, and ``more``."""
    return {"User-Agent": USER_AGENT, "Accept-Language": "en-GB,en;q=0.8", **more}


def cookies_set(answer: Answer) -> dict[str, str]:
    """The cookies an answer sets."""
    return dict(c.split(";", 1)[0].split("=", 1) for c in answer.headers.get("set-cookie", []))


def cookie_header(cookies: dict[str, str]) -> str:
    return "; ".join(f"{name}={value}" for name, value in sorted(cookies.items()))


def form_token(port: int) -> tuple[str, dict[str, str]]:
    """The tool page's CSRF token and the cookies of a visitor who has run a tool: the
    session (which the token belongs to) from a first visit, and ``svc_visitor``, which the
    site gives with a visitor's first run. GET the page once, then run the tool once."""
    answer = Request("GET", f"/tools/{TOOL}/", browser()).send(port)
    token = re.search(r'name="csrf_token" value="([^"]+)"', answer.text)
    cookies = cookies_set(answer)
    if answer.status != 200 or not token or SESSION_COOKIE not in cookies:
        raise SetupFailed(
            f"GET /tools/{TOOL}/ gave no form token and session (status {answer.status}, "
            f"cookies {answer.headers.get('set-cookie')}):\n{answer.text[:2000]}"
        )
    form = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie_header(cookies)}
    body = urlencode({"csrf_token": token.group(1), "website": "", "text": SAMPLE_TEXT})
    answer = Request("POST", f"/tools/{TOOL}/", browser(**form), body).send(port)
    cookies.update(cookies_set(answer))
    if answer.status != 200 or "svc_visitor" not in cookies:
        raise SetupFailed(
            f"a first run gave no visitor cookie (status {answer.status}, cookies "
            f"{answer.headers.get('set-cookie')}):\n{answer.text[:2000]}"
        )
    return token.group(1), cookies


def site_requests(token: str, cookies: dict[str, str]) -> dict[str, SiteRequest]:
    """The measured requests of the site."""
    run_body = urlencode({"csrf_token": token, "website": "", "text": SAMPLE_TEXT})
    returning = cookie_header(cookies)
    return {
        "tools": SiteRequest("GET", "/tools/", browser()),
        "search": SiteRequest("GET", f"/tools/?q={SEARCH}", browser(**{"HX-Request": "true"})),
        "tool": SiteRequest("GET", f"/tools/{TOOL}/", browser()),
        "tool-back": SiteRequest("GET", f"/tools/{TOOL}/", browser(Cookie=returning)),
        "run": SiteRequest(
            "POST",
            f"/tools/{TOOL}/",
            browser(
                **{
                    "Content-Type": "application/x-www-form-urlencoded",
                    # The session the form's token belongs to; no visitor cookie: a new
                    # visitor, on a new device (new_device) each time.
                    "Cookie": f"{SESSION_COOKIE}={cookies[SESSION_COOKIE]}",
                    "HX-Request": "true",
                    "HX-Current-URL": f"http://127.0.0.1/tools/{TOOL}/",
                }
            ),
            run_body,
            new_device=True,
        ),
    }


def with_agent(request: Request, agent: str) -> Request:
    """``request`` with another user agent."""
    return Request(request.method, request.path, {**request.headers, "User-Agent": agent},
                   request.body)  # fmt: skip


def verify(port: int, target: str, request: SiteRequest) -> None:
    """Check that ``target`` answers what a visitor gets before measuring it (for the run:
    several in a row, each from a new device, all run)."""
    wanted, unwanted = {
        "bare": ('{"hello": "world"}', None),
        "tools": ('id="tool-results"', None),
        "search": (f"matching “{SEARCH}”", "<html"),
        "tool": ('id="run-form"', None),
        "tool-back": ('id="run-form"', None),
        "run": ("<h2>Result</h2>", "run-refused"),
    }[target]
    for attempt in range(1, 8 if request.new_device else 2):
        sent = request
        if request.new_device:
            sent = with_agent(request, f"{USER_AGENT} bench-verify/{uuid.uuid4().hex}")
        answer = sent.send(port)
        text = json.dumps(answer.json()) if target == "bare" else answer.text
        problem = None
        if answer.status != 200:
            problem = f"status {answer.status}"
        elif wanted not in text:
            problem = f"{wanted!r} is not in the answer"
        elif unwanted and unwanted in text:
            problem = f"{unwanted!r} is in the answer"
        if problem:
            raise SetupFailed(
                f"{request.method} {request.path} is wrong before measuring (request "
                f"{attempt}: {problem}):\n{text[:3000]}"
            )


# --------------------------------------------------------------------------- load generators

# Each request a user agent of its own: the run's prefix (new every wrk run), the thread's
# number and a count.
WRK_NEW_DEVICE = """
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
local sent = 0
function request()
  sent = sent + 1
  wrk.headers["User-Agent"] = {prefix} .. tid .. "-" .. sent
  return wrk.format()
end
"""


class SiteWrk(Wrk):
    """wrk as bench/loadgen.py runs it, plus a new user agent per request where asked."""

    def script(self, request: Request) -> str:
        script = super().script(request)
        if not getattr(request, "new_device", False):
            return script
        prefix = lua_string(f"{USER_AGENT} bench/{uuid.uuid4().hex[:12]}-")
        return script + WRK_NEW_DEVICE.replace("{prefix}", prefix)


class SitePythonLoad(PythonLoad):
    """The Python fallback, with a new user agent per request where asked."""

    def run(self, port: int, request: Request, seconds: float, connections: int) -> Measurement:
        if not getattr(request, "new_device", False):
            return super().run(port, request, seconds, connections)
        prefix = f"{USER_AGENT} bench/{uuid.uuid4().hex[:12]}-"
        counter = iter(range(10**9))
        lock = threading.Lock()

        class Headers(dict):
            def items(self):  # http.client reads the headers through items()
                with lock:
                    number = next(counter)
                return [*super().items(), ("User-Agent", f"{prefix}{number}")]

        headers = Headers({k: v for k, v in request.headers.items() if k != "User-Agent"})
        varied = Request(request.method, request.path, headers, request.body)
        return super().run(port, varied, seconds, connections)


class Counting:
    """A load generator that adds up the requests of one target (warm-up included)."""

    def __init__(self, loadgen):
        self.loadgen, self.requests = loadgen, 0
        self.name = loadgen.name

    def run(self, port: int, request: Request, seconds: float, connections: int) -> Measurement:
        measured = self.loadgen.run(port, request, seconds, connections)
        if getattr(request, "new_device", False):
            self.requests += measured.requests
        return measured
