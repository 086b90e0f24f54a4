"""``make run`` as a new user runs it, and one tool of every engine through its HTTP API.

The working tree is copied to a temporary directory (without ``.venv``, which is linked, and
without ``instance/``, so the developer's database is never touched) and ``make run
PORT=<free port>`` is started there with none of the settings of a deployment: SQLite under
the copy's ``instance/``, no Redis, the in-process queue. The demo key is read from what it
prints. Then, for every engine the catalogue uses, one of its tools runs with its catalogue
example (a tool that makes a file where the engine has one): 200, or 202 then ``succeeded``,
and every file in the output is an absolute URL on the server that serves the file; a tool
the deployment lists as unavailable (it needs a provider) answers 503 provider_unavailable.
"""

import collections
import concurrent.futures
import json
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from catalogue import load_catalogue
from tests.helpers import stop_process_group

ROOT = Path(__file__).resolve().parent.parent
# The environment a new user's shell has: none of the settings a deployment sets.
_KEPT_ENV = ("PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TERM")
# Where an engine has several tools, the ones issue 13 named (queued tools making files).
_PREFERRED = {
    "speech.synthesize": "text-to-speech",
    "audio.edit": "audio-trimmer",
    "audio.inspect": "audio-waveform-image",
}
_KEY_LINE = re.compile(r"^(svc_\S+)$", re.MULTILINE)
_HINT_LINE = re.compile(r"make another with:\n\s+(.+)$", re.MULTILINE)

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _user_env() -> dict:
    return {name: os.environ[name] for name in _KEPT_ENV if name in os.environ}


def _copy_tree(target: Path) -> Path:
    repo = target / "repo"
    shutil.copytree(
        ROOT,
        repo,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "instance", "__pycache__", ".*_cache", ".hypothesis", "results"
        ),
        symlinks=True,
    )
    (repo / ".venv").symlink_to(ROOT / ".venv")
    return repo


class Served:
    def __init__(self, repo: Path, base: str, key: str, log: Path):
        self.repo, self.base, self.key, self.log = repo, base, key, log

    def headers(self, key: str | None = None) -> dict:
        return {"X-SVC-API-Key": key or self.key}

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    repo = _copy_tree(tmp_path_factory.mktemp("make-run"))
    env = _user_env()
    # make run sets the venv up first: with an out-of-date venv it would install packages.
    if subprocess.run(["make", "-q", "setup"], cwd=repo, env=env).returncode != 0:
        pytest.skip("the venv is not up to date: run `make setup` first")
    port = free_port()
    log = repo.parent / "make-run.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            ["make", "run", f"PORT={port}"],
            cwd=repo,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: make, flask and its threads
        )
    base = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    try:
        key = _wait_until_serving(process, base, log)
        print(f"\nmake run served in {time.monotonic() - started:.1f} s")
        yield Served(repo, base, key, log)
    finally:
        stop_process_group(process)


def _wait_until_serving(process: subprocess.Popen, base: str, log: Path) -> str:
    deadline = time.monotonic() + 180
    key = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"make run ended ({process.returncode}):\n{log.read_text()[-4000:]}")
        if key is None and (found := _KEY_LINE.search(log.read_text(errors="replace"))):
            key = found.group(1)
        if key is not None:
            try:
                if requests.get(f"{base}/v1/health", timeout=2).status_code < 500:
                    return key
            except requests.ConnectionError:
                pass
        time.sleep(0.2)
    pytest.fail(f"make run did not serve within 180 s:\n{log.read_text()[-4000:]}")


def _makes_file(schema) -> bool:
    if isinstance(schema, dict):
        return "contentMediaType" in schema or any(_makes_file(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_makes_file(item) for item in schema)
    return False


def _one_tool_per_engine() -> list:
    """For every engine of the catalogue, the tool to try: the one named in ``_PREFERRED``;
    else one the demo key's plan (Pro) can run if any; for the text model (slow on the
    embedded SmolLM2) the one asking the fewest tokens; for the others one making a file if
    any, queued if any, with the shortest example."""
    by_engine = collections.defaultdict(list)
    for tool in load_catalogue():
        by_engine[tool.engine].append(tool)
    chosen = []
    for engine, tools in sorted(by_engine.items()):
        preferred = [tool for tool in tools if tool.slug == _PREFERRED.get(engine)]
        if engine == "llm.chat":
            tools = sorted(
                tools,
                key=lambda tool: (
                    tool.required_plan != "pro",
                    tool.params.get("max_tokens", 800),
                    tool.params.get("format", "text") != "text",
                ),
            )
        else:
            tools = sorted(
                tools,
                key=lambda tool: (
                    tool.required_plan != "pro",
                    not _makes_file(tool.output),
                    not tool.queue,
                    len(json.dumps(tool.examples[0]["input"])),
                ),
            )
        chosen.append((preferred or tools)[0])
    # The slowest first (the text model, then the other queued tools): the queue's two
    # threads work on them while the light tools run inline.
    return sorted(chosen, key=lambda tool: (tool.engine != "llm.chat", not tool.queue))


def _flask(served: Served, command: str) -> str:
    """``flask --app app <command>`` in the copy, as the docs have a user type it; its
    output."""
    done = subprocess.run(
        f"APP_ENV=development .venv/bin/flask --app app {command}",
        shell=True,
        cwd=served.repo,
        env=_user_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _keys_by_plan(served: Served, plans: set[str]) -> dict[str, str]:
    """A key for each plan of ``plans``: the demo key for Pro, a new account's for others."""
    keys = {"pro": served.key}
    for plan in plans - {"pro"}:
        email = f"{plan}@example.com"
        _flask(served, f"accounts create {email} --plan {plan}")
        keys[plan] = _flask(served, f"keys create {email}").strip().splitlines()[-1]
    return keys


def _files(output):
    """The file objects in a tool's output."""
    if isinstance(output, dict):
        if {"id", "url", "content_type", "size"} <= output.keys():
            yield output
            return
        for value in output.values():
            yield from _files(value)
    elif isinstance(output, list):
        for item in output:
            yield from _files(item)


def _run_one(served: Served, tool, key: str) -> tuple[str, str | None, float]:
    """Run ``tool`` with its example on the server; (slug, problem or None, seconds)."""
    started = time.monotonic()
    slug = tool.slug
    public = requests.get(f"{served.base}/v1/tools/{slug}", timeout=10).json()
    response = requests.post(
        f"{served.base}/v1/tools/run",
        headers={**served.headers(key), "Prefer": "wait=60"},
        json={"slug": slug, **tool.examples[0]["input"]},
        timeout=90,
    )
    body = response.json()
    if not public["available"]:
        if response.status_code != 503 or body.get("code") != "provider_unavailable":
            return slug, f"unavailable, but answered {response.status_code} {body}", 0
        return slug, None, time.monotonic() - started
    if response.status_code == 202:
        status_url = f"{served.base}{response.headers['Location']}"
        deadline = time.monotonic() + 120
        while body.get("status") not in ("succeeded", "failed", "canceled"):
            if time.monotonic() > deadline:
                return slug, f"still {body.get('status')} after 120 s", 0
            time.sleep(0.5)
            body = requests.get(status_url, headers=served.headers(key), timeout=10).json()
        if body["status"] != "succeeded":
            return slug, f"202 then {body['status']}: {body.get('error')}", 0
    elif response.status_code != 200:
        return slug, f"{response.status_code} {body}", 0
    for file in _files(body["output"]):
        url = urlsplit(file["url"])
        # On PUBLIC_BASE_URL, which `make run` sets to http://localhost:<its PORT>.
        if url.scheme != "http" or url.netloc != f"localhost:{urlsplit(served.base).port}":
            return slug, f"a file URL not on {served.base}: {file['url']}", 0
        fetched = requests.get(file["url"], timeout=30)
        if fetched.status_code != 200 or len(fetched.content) != file["size"]:
            return slug, f"{file['url']} answered {fetched.status_code}", 0
        if fetched.headers["Content-Type"].split(";")[0] != file["content_type"].split(";")[0]:
            return slug, f"{file['url']} served as {fetched.headers['Content-Type']}", 0
    return slug, None, time.monotonic() - started


def test_one_tool_of_every_engine_runs_through_make_run(served):
    tools = _one_tool_per_engine()
    assert len(tools) >= 50  # every engine of the catalogue, not a handful
    makers = [tool.slug for tool in tools if tool.queue and _makes_file(tool.output)]
    assert {"text-to-speech", "audio-trimmer", "audio-waveform-image"} <= set(makers)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        # The demo key's tools start at once; keys for the other plans are made meanwhile.
        runs = [
            pool.submit(_run_one, served, tool, served.key)
            for tool in tools
            if tool.required_plan == "pro"
        ]
        keys = _keys_by_plan(served, {tool.required_plan for tool in tools})
        runs += [
            pool.submit(_run_one, served, tool, keys[tool.required_plan])
            for tool in tools
            if tool.required_plan != "pro"
        ]
        results = [run.result() for run in runs]
    slowest = sorted(results, key=lambda result: -result[2])[:5]
    print(f"\n{len(results)} tools, one per engine; the slowest (s):")
    for slug, _problem, seconds in slowest:
        print(f"  {slug}: {seconds:.1f}")
    problems = [f"{slug}: {problem}" for slug, problem, _ in results if problem]
    assert not problems, "\n".join(problems) + "\n--- make run's log:\n" + served.log_tail()


def test_the_second_key_hint_works_as_printed(served):
    # `make run` again prints the hint: the demo account exists.
    again = _flask(served, "accounts demo")
    hint = _HINT_LINE.search(again)
    assert hint, again
    assert hint.group(1) == (
        "APP_ENV=development .venv/bin/flask --app app keys create demo@example.com --name another"
    )
    # Typed as printed, in the shell that ran `make run` (no APP_ENV, no venv activated).
    created = subprocess.run(
        hint.group(1),
        shell=True,
        cwd=served.repo,
        env=_user_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    assert key.startswith("svc_") and key != served.key
    whoami = requests.get(f"{served.base}/v1/public/whoami", headers=served.headers(key))
    assert whoami.status_code == 200 and whoami.json()["plan"]["name"] == "pro"
