"""The site in a real browser: the embedded default as ``make run`` starts it, driven by
Playwright through Debian's chromium (``make browser``).

One server for the session (``site``): ``flask --app app db upgrade`` then ``flask --app app
run`` with ``APP_ENV=development``, on a SQLite file of its own under pytest's tmp dir and
without Redis (the in-process queue), in the environment a new user's shell has, with the
address cap raised (``WEB_ADDRESS_DAILY_CAP``) so that the suite's runs, all from 127.0.0.1,
are counted per visitor and device only. Each test gets a fresh browser context (``visitor``:
its own cookies and a user agent of its own, so a new device with its own five free runs),
which watches every page it opens for console errors, uncaught exceptions and CSP violations.

Without chromium (``SVC_CHROMIUM`` names another binary) or Playwright the tests skip;
with ``CI=true`` the session refuses to start instead, as tests/helpers.py does for
PostgreSQL and Redis. ``SITE_SCREENSHOTS=<folder>`` adds screenshots of every page
(test_pages.py).
"""

from __future__ import annotations

import itertools
import os
import re
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests

from tests.fakes.mailbox import Mailbox
from tests.helpers import IN_CI, ROOT, stop_process_group

CHROMIUM = os.environ.get("SVC_CHROMIUM", "/usr/bin/chromium")
# The environment a new user's shell has (none of a deployment's settings; test_make_run.py).
_KEPT_ENV = ("PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TERM")
# Well above every run the suite starts from 127.0.0.1 in a day (a test checking the cap
# would start a server of its own with a low one).
ADDRESS_CAP = 1000
FREE_RUNS = 5


def _playwright_missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
        from axe_playwright_python.sync_playwright import Axe  # noqa: F401
    except ImportError as missing:
        return f"Playwright or axe-playwright-python is not installed ({missing})"
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        return f"chromium is not installed at {CHROMIUM} (make browser)"
    return None


MISSING = _playwright_missing()

if IN_CI and MISSING:
    raise pytest.UsageError(f"CI needs the browser tests: {MISSING}; refusing to skip them.")


def pytest_collection_modifyitems(config, items):
    if MISSING:
        skip = pytest.mark.skip(reason=MISSING)
        here = Path(__file__).parent
        for item in items:
            if here in Path(item.path).parents:
                item.add_marker(skip)


# --------------------------------------------------------------------------- the server


@dataclass
class Site:
    url: str
    database: Path
    log: Path
    # The mails the server sends (its MAIL_URL): a real SMTP server in this process.
    mailbox: Mailbox
    env: dict

    def flask(self, *args: str) -> str:
        """Run ``flask --app app ARGS`` in the server's environment (an operator's command,
        such as ``accounts set-plan``); its output."""
        done = subprocess.run(
            [str(Path(sys.executable).with_name("flask")), "--app", "app", *args],
            cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, f"flask {' '.join(args)}: {done.stdout}{done.stderr}"
        return done.stdout

    def query(self, sql: str, *params) -> list[tuple]:
        """Rows of a read of the server's database."""
        with sqlite3.connect(f"file:{self.database}?mode=ro", uri=True, timeout=10) as db:
            return db.execute(sql, params).fetchall()

    def execute(self, sql: str, *params) -> None:
        """A write to the server's database (a test moving a moment into the past)."""
        with sqlite3.connect(self.database, timeout=10) as db:
            db.execute(sql, params)

    def web_runs(self) -> int:
        """Rows of the site's runs in the server's database (read-only)."""
        with sqlite3.connect(f"file:{self.database}?mode=ro", uri=True, timeout=10) as db:
            return db.execute("select count(*) from runs where source='web'").fetchone()[0]

    def settled_web_runs(self, expected: int | None = None, timeout: float = 5.0) -> int:
        """The count of web runs once it stops moving (inline runs' rows are written in
        batches a moment after their answer), or once it reaches ``expected``."""
        deadline = time.monotonic() + timeout
        last = self.web_runs()
        while time.monotonic() < deadline:
            time.sleep(0.2)
            now = self.web_runs()
            if (expected is not None and now == expected) or (expected is None and now == last):
                return now
            last = now
        return last

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def served_site(folder: Path, **settings: str) -> Iterator[Site]:
    """The embedded default as ``make run`` starts it (``flask db upgrade`` then ``flask
    run``, ``APP_ENV=development``, a SQLite file under ``folder``, no Redis), its mails
    sent to a real SMTP server in this process; ``settings``: more of its environment."""
    mailbox = Mailbox()
    database = folder / "site.db"
    port = free_port()
    env = {name: os.environ[name] for name in _KEPT_ENV if name in os.environ}
    env.update(
        APP_ENV="development",
        # What `make run` sets from its PORT: links and file URLs on the served address.
        PUBLIC_BASE_URL=f"http://127.0.0.1:{port}",
        DATABASE_URL=f"sqlite:///{database}",
        WEB_ADDRESS_DAILY_CAP=str(ADDRESS_CAP),
        MAIL_URL=mailbox.url,
        # Every browser test that signs someone up does it from this one address.
        SIGNUP_ADDRESS_LIMIT="1000/hour",
        **settings,
    )
    flask = str(Path(sys.executable).with_name("flask"))
    upgrade = subprocess.run(
        [flask, "--app", "app", "db", "upgrade"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    if upgrade.returncode != 0:
        mailbox.stop()
        pytest.fail(f"flask db upgrade failed:\n{upgrade.stdout}\n{upgrade.stderr}"[-3000:])
    log = folder / "server.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [flask, "--app", "app", "run", "--port", str(port)],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, stopped as one
        )  # fmt: skip
    served = Site(f"http://127.0.0.1:{port}", database, log, mailbox, env)
    try:
        _wait_until_serving(process, served)
        yield served
    finally:
        stop_process_group(process)
        mailbox.stop()


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Site:
    with served_site(tmp_path_factory.mktemp("site")) as served:
        yield served


def _wait_until_serving(process: subprocess.Popen, served: Site) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"flask run ended ({process.returncode}):\n{served.log_tail()}")
        try:
            if requests.get(served.url + "/", timeout=5).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    pytest.fail(f"the site did not answer / within 90 s:\n{served.log_tail()}")


# --------------------------------------------------------------------------- the browser


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM)
        yield launched
        launched.close()


# Reported by the browser for answers the test asked for (a 404 page, a refused run).
_RESOURCE_ERROR = re.compile(
    r"^Failed to load resource: the server responded with a status of (\d+)"
)
# Run in every page before its own scripts: a CSP violation is reported on the console even
# where the browser would not say so itself (securitypolicyviolation is the standard event).
_CSP_LISTENER = """
document.addEventListener("securitypolicyviolation", (event) => {
  console.error(`CSP violation: ${event.violatedDirective} refused ${event.blockedURI || "inline"}`
    + ` (${event.sourceFile || location.href}:${event.lineNumber})`);
});
"""
_user_agents = itertools.count(1)


@dataclass
class Problem:
    url: str
    kind: str
    text: str

    def __str__(self) -> str:
        return f"{self.url}: {self.kind}: {self.text}"


@dataclass
class Visitor:
    """A browser context of its own (a new visitor and device) and its first page, with what
    went wrong on any page it opened."""

    context: Any
    page: Any
    user_agent: str
    site: Site
    problems: list[Problem] = field(default_factory=list)
    # Answers the test expects to fail, as (status, path): the browser logs them as console
    # errors ("Failed to load resource"), which are otherwise problems.
    expected: set[tuple[int, str]] = field(default_factory=set)

    def watch(self, page) -> None:
        page.on("console", lambda message: self._console(page, message))
        page.on("pageerror", lambda error: self._add(page, "pageerror", str(error)))

    def _console(self, page, message) -> None:
        if message.type not in ("error", "assert"):
            return
        found = _RESOURCE_ERROR.match(message.text)
        if found:
            path = urlsplit(message.location.get("url", "")).path
            if (int(found.group(1)), path) in self.expected:
                return
        self._add(page, f"console.{message.type}", message.text)

    def _add(self, page, kind: str, text: str) -> None:
        self.problems.append(Problem(page.url, kind, text))

    def expect_failure(self, status: int, path: str) -> None:
        """The test asks for an answer ``status`` at ``path``: not a problem."""
        self.expected.add((status, path))

    def goto(self, path: str, status: int = 200):
        response = self.page.goto(self.site.url + path)
        assert response is not None and response.status == status, (
            f"{path}: {response.status if response else 'no answer'}, expected {status}"
        )
        return response

    def close(self) -> None:
        """Close the context; fail the test if any of its pages went wrong."""
        self.context.close()
        if self.problems:
            report = "\n".join(map(str, self.problems))
            pytest.fail(f"pages logged errors:\n{report}", pytrace=False)


def new_user_agent(label: str = "") -> str:
    """A user agent of its own: the device counter hashes it, so each is a new device."""
    return (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        f"Chrome/140.0 Safari/537.36 svc-site-tests/{next(_user_agents)}-{label}-"
        + uuid.uuid4().hex[:8]
    )


def open_visitor(browser, site: Site, label: str = "", **options) -> Visitor:
    user_agent = new_user_agent(label)
    context = browser.new_context(user_agent=user_agent, **options)
    context.set_default_timeout(15_000)
    context.add_init_script(_CSP_LISTENER)
    page = context.new_page()
    visitor = Visitor(context, page, user_agent, site)
    visitor.watch(page)
    context.on("page", visitor.watch)
    return visitor


@pytest.fixture
def visitor(browser, site, request):
    """A new visitor (its own context, cookies and device); the test fails if any page it
    opened logged an error, threw, or broke the CSP."""
    opened = open_visitor(browser, site, request.node.name.removeprefix("test_")[:40])
    yield opened
    opened.close()


@pytest.fixture
def open_new_visitor(browser, site):
    """For tests that need visitors with options (a viewport, a colour scheme) or more than
    one: each is closed after the test, and checked as ``visitor`` is."""
    opened: list[Visitor] = []

    def make(label: str = "", **options) -> Visitor:
        opened.append(open_visitor(browser, site, label, **options))
        return opened[-1]

    yield make
    for one in opened:
        one.close()


@pytest.fixture(scope="session")
def png(tmp_path_factory) -> Path:
    """A 200 x 120 PNG with shapes on it (made with Pillow)."""
    from PIL import Image, ImageDraw

    path = tmp_path_factory.mktemp("images") / "picture.png"
    image = Image.new("RGB", (200, 120), (240, 240, 235))
    draw = ImageDraw.Draw(image)
    draw.rectangle((20, 20, 90, 100), fill=(200, 40, 40))
    draw.ellipse((110, 20, 180, 90), fill=(30, 90, 200))
    image.save(path)
    return path


# --------------------------------------------------------------------------- accounts

PASSWORD = "browser tests passphrase"
_signups = itertools.count(1)


@dataclass
class User:
    email: str
    password: str


def sign_up(visitor: Visitor, email: str, password: str = PASSWORD) -> User:
    """Sign up through the site's own pages, confirm the address from the mail's link and
    sign in: ``visitor`` ends signed in, on its account's dashboard."""
    page = visitor.page
    visitor.goto("/account/signup")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Create account").click()
    page.get_by_role("heading", name="Check your mail").wait_for()
    mail = visitor.site.mailbox.wait_for(email, "Confirm your email")
    (link,) = [link for link in mail.links if "/account/verify/" in link]
    page.goto(link)
    page.get_by_text("Your email address is confirmed").wait_for()
    sign_in(visitor, email, password)
    return User(email, password)


def sign_in(visitor: Visitor, email: str, password: str = PASSWORD) -> None:
    page = visitor.page
    if not page.url.endswith("/account/login"):
        visitor.goto("/account/login")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/account/**")


@pytest.fixture
def signed_up_user(site):
    """``signed_up_user(visitor, plan="pro")``: a new user signed up and signed in through the
    site's pages (the mail's link followed), its account moved to ``plan`` by the operator's
    command; returns its email and password."""

    def make(visitor: Visitor, plan: str = "pro") -> User:
        email = f"person{next(_signups)}-{uuid.uuid4().hex[:6]}@example.com"
        user = sign_up(visitor, email)
        if plan != "free":
            site.flask("accounts", "set-plan", email, plan)
        return user

    return make
