"""Every deterministic catalogue tool run through the API on its own example.

``POST /v1/tools/run`` on one embedded app (SQLite, no Redis), with one key per plan: each
tool answers 200 with exactly its example output (files compared by type, size and name, as
tests/engines/test_registry.py does) that also validates against its output schema. Model-backed,
provider and media tools are run through the API by the tests/catalogue files named below.
"""

import itertools

import pytest
from jsonschema import Draft202012Validator

from catalogue import load_catalogue
from extensions import db
from services import accounts, keys
from tests.catalogue.test_media_tools import MEDIA_TOOLS
from tests.catalogue.test_model_tools import MODEL_TOOLS
from tests.catalogue.test_provider_image_tools import GENERATORS, VISION
from tests.engines.test_registry import DETERMINISTIC_SLUGS, ILLUSTRATIVE_ENGINES, _as_file
from tests.helpers import auth, embedded_app_at

DISPATCH = "/v1/tools/run"
# One key runs every tool of its plan: no per-minute or daily limit gets in the way.
UNLIMITED = 10_000_000


@pytest.fixture(scope="module")
def every_tool_app(tmp_path_factory):
    with embedded_app_at(tmp_path_factory.mktemp("every") / "runs.db") as app:
        yield app


_emails = itertools.count(1)


@pytest.fixture(scope="module")
def key_for(every_tool_app):
    """``key_for(plan)``: a raw key of an account on ``plan``, made once per plan."""
    made: dict[str, str] = {}

    def key(plan: str) -> str:
        if plan not in made:
            with every_tool_app.app_context():
                account = accounts.create_account(f"every{next(_emails)}@example.com", plan)
                api_key, made[plan] = keys.create_key(account, "every tool")
                api_key.per_minute_override = UNLIMITED
                api_key.daily_override = UNLIMITED
                db.session.commit()
        return made[plan]

    return key


def test_deterministic_tools_are_those_of_every_engine_but_the_illustrative_ones():
    engines = {load_catalogue().get(slug).engine for slug in DETERMINISTIC_SLUGS}
    assert engines and not engines & ILLUSTRATIVE_ENGINES
    assert len(DETERMINISTIC_SLUGS) >= 150


@pytest.mark.parametrize("slug", DETERMINISTIC_SLUGS)
def test_every_deterministic_tool_answers_its_example_through_the_api(
    every_tool_app, key_for, slug
):
    tool = load_catalogue().get(slug)
    example = tool.examples[0]
    response = every_tool_app.test_client().post(
        DISPATCH,
        headers={**auth(key_for(tool.required_plan)), "Prefer": "wait=60"},
        json={"slug": slug, **example["input"]},
    )

    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert (body["tool"], body["status"], body["sandbox"]) == (slug, "succeeded", False)
    assert _as_file(body["output"]) == _as_file(example["output"])
    Draft202012Validator(tool.output).validate(body["output"])


def test_every_catalogue_tool_is_run_through_the_api_by_one_of_four_files():
    run_here = set(DETERMINISTIC_SLUGS)
    run_elsewhere = {
        "tests/catalogue/test_model_tools.py": set(MODEL_TOOLS),
        "tests/catalogue/test_media_tools.py": set(MEDIA_TOOLS),
        "tests/catalogue/test_provider_image_tools.py": set(GENERATORS) | set(VISION),
    }
    covered = run_here.union(*run_elsewhere.values())
    assert sorted(set(load_catalogue().tools) - covered) == []
