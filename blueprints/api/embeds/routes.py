"""The agency's embeddable widgets (docs/architecture/agency.md): list, create, read,
change and delete them. Free and Starter keys get 403, paid plans below Agency 402; another
account's widget is not found (404), never forbidden. A widget made here runs through the
key that made it."""

from flask.views import MethodView
from flask_smorest import Blueprint

from blueprints.api.docs import API_KEY_SECURITY, problem_responses
from blueprints.api.embeds.schemas import (
    EmbedCreateSchema,
    EmbedListSchema,
    EmbedSchema,
    EmbedUpdateSchema,
)
from blueprints.api.pipeline import authenticate, json_body, validation_failed
from blueprints.api.plan_gated import require_endpoint_plan
from blueprints.api.problems import Problem
from extensions import db
from models import Account, Embed
from services import embeds
from services.keys import KeyContext

blp = Blueprint(
    "embeds",
    __name__,
    url_prefix="/v1/embeds",
    description="Agency: embeddable tool widgets for your clients' sites.",
)

_EMBED_EXAMPLE = {
    "id": "3f2b8c9e-1a4d-4e5f-8a7b-6c5d4e3f2a1b",
    "public_id": "Qm9vdGgtc2hvcC13aWRnZXQtcHVibGljLWlkLXh5ejEy",
    "name": "Word counter",
    "tool": "word-counter",
    "allowed_origins": ["https://client.example.com"],
    "per_minute": 10,
    "per_visitor_daily": 20,
    "daily": 500,
    "enabled": True,
    "api_key_id": "9d1c2b3a-4e5f-4a6b-8c7d-0e1f2a3b4c5d",
    "embed_url": "https://svc.example.com/embed/Qm9vdGgtc2hvcC13aWRnZXQtcHVibGljLWlkLXh5ejEy",
    "snippet": '<div data-svc-embed="Qm9vdGgtc2hvcC13aWRnZXQtcHVibGljLWlkLXh5ejEy" '
    'data-title="Word counter"></div>\n'
    '<script src="https://svc.example.com/embed/v1/loader.js" async></script>',
    "created_at": "2026-11-25T10:00:00+00:00",
    "updated_at": "2026-11-25T10:00:00+00:00",
}
_NOT_FOUND = problem_responses(404)
_NOT_FOUND["404"]["description"] = "No widget of this account has this id [embed_not_found]."
_INVALID = problem_responses(422)
_INVALID["422"]["description"] = (
    "An unknown tool, a tool the plan cannot run or that cannot run on this deployment (a "
    "model provider it needs is not configured), an origin that is not exactly "
    "`scheme://host[:port]`, a cap out of its range, or an unknown field; `errors` lists "
    "them per field [validation_failed]."
)
_READ_ERRORS = (401, 402, 403, 429)
_WRITE_ERRORS = (400, 401, 402, 403, 413, 415, 429)


def _agency_key() -> KeyContext:
    """The calling key, on the agency plan (401, 429, 403 Free/Starter, 402 below)."""
    context = authenticate()
    require_endpoint_plan(embeds.REQUIRED_PLAN)
    return context


def _own(context: KeyContext, embed_id) -> Embed:
    embed = embeds.find(context.account_id, str(embed_id))
    if embed is None:
        raise Problem(404, "embed_not_found", f"There is no widget {embed_id} for this account.")
    return embed


def _cleaned(context: KeyContext, body: dict, *, creating: bool) -> dict:
    account = db.session.get(Account, context.account_id)
    try:
        return embeds.clean(body, account, creating=creating)
    except embeds.EmbedRefused as refused:
        raise validation_failed(refused.errors) from None


def _answer(embed: Embed) -> dict:
    return embeds.describe(embed)


@blp.route("")
class Embeds(MethodView):
    @blp.response(200, EmbedListSchema, example={"embeds": [_EMBED_EXAMPLE], "count": 1})
    @blp.doc(
        operationId="listEmbeds",
        security=API_KEY_SECURITY,
        responses=problem_responses(*_READ_ERRORS),
    )
    def get(self):
        """The account's widgets, oldest first (Agency plan)."""
        context = _agency_key()
        found = [_answer(embed) for embed in embeds.of_account(context.account_id)]
        return {"embeds": found, "count": len(found)}

    @blp.response(
        201,
        EmbedSchema,
        description="The widget was created: paste `snippet` into a page on one of its "
        "allowed origins. Its runs use the calling key's daily quota and the account's "
        "credits.",
        example=_EMBED_EXAMPLE,
        headers={"Location": {"schema": {"type": "string"}, "description": "The widget."}},
    )
    @blp.doc(
        operationId="createEmbed",
        security=API_KEY_SECURITY,
        requestBody={
            "required": True,
            "content": {
                "application/json": {
                    "schema": EmbedCreateSchema,
                    "example": {
                        "tool": "word-counter",
                        "allowed_origins": ["https://client.example.com"],
                        "per_visitor_daily": 20,
                    },
                }
            },
        },
        responses={**problem_responses(*_WRITE_ERRORS), **_INVALID},
    )
    def post(self):
        """Create a widget for one tool, shown by pages on its allowed origins (Agency plan)."""
        context = _agency_key()
        values = _cleaned(context, json_body(), creating=True)
        account = db.session.get(Account, context.account_id)
        embed = embeds.create(account, context.key_id, values)
        db.session.commit()
        location = f"/v1/embeds/{embed.id}"
        return _answer(embed), 201, {"Location": location}


@blp.route("/<uuid:embed_id>")
class EmbedById(MethodView):
    @blp.response(200, EmbedSchema, example=_EMBED_EXAMPLE)
    @blp.doc(
        operationId="getEmbed",
        security=API_KEY_SECURITY,
        responses={**problem_responses(*_READ_ERRORS), **_NOT_FOUND},
    )
    def get(self, embed_id):
        """One widget of the account, with its snippet."""
        context = _agency_key()
        return _answer(_own(context, embed_id))

    @blp.response(200, EmbedSchema, description="The widget as saved.", example=_EMBED_EXAMPLE)
    @blp.doc(
        operationId="updateEmbed",
        security=API_KEY_SECURITY,
        requestBody={
            "required": True,
            "content": {
                "application/json": {
                    "schema": EmbedUpdateSchema,
                    "example": {
                        "allowed_origins": [
                            "https://client.example.com",
                            "https://www.client.example.com",
                        ],
                        "daily": 1000,
                        "rotate_public_id": False,
                    },
                }
            },
        },
        responses={**problem_responses(*_WRITE_ERRORS), **_NOT_FOUND, **_INVALID},
    )
    def patch(self, embed_id):
        """Change a widget's origins, caps, name or state, or rotate its public id."""
        context = _agency_key()
        embed = _own(context, embed_id)
        values = _cleaned(context, json_body(), creating=False)
        embeds.update(embed, values)
        db.session.commit()
        return _answer(embed)

    @blp.response(204, description="The widget is deleted: its pages show nothing from now on.")
    @blp.doc(
        operationId="deleteEmbed",
        security=API_KEY_SECURITY,
        responses={**problem_responses(*_READ_ERRORS), **_NOT_FOUND},
    )
    def delete(self, embed_id):
        """Delete a widget (its past runs stay in the account's history and usage)."""
        context = _agency_key()
        embeds.delete(_own(context, embed_id))
        db.session.commit()
        return "", 204
