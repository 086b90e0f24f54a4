"""The agency's white-label brand (docs/architecture/agency.md): read it and change it. Free
and Starter keys get 403, paid plans below Agency 402 with ``upgrade_url``. The settings page
(``/account/white-label``) saves through the same service, with the same messages."""

from flask.views import MethodView
from flask_smorest import Blueprint

from blueprints.api.docs import API_KEY_SECURITY, problem_responses
from blueprints.api.pipeline import authenticate, json_body, require_plan, validation_failed
from blueprints.api.plan_gated import require_api_access_for_plan, require_endpoint_plan
from blueprints.api.white_label.schemas import WhiteLabelSchema, WhiteLabelUpdateSchema
from extensions import db
from services import white_label
from services.white_label import REQUIRED_PLAN, BrandRefused

blp = Blueprint(
    "white_label",
    __name__,
    url_prefix="/v1/white-label",
    description="Agency: your brand on shared run pages and widgets.",
)

_EXAMPLE = {
    "brand_name": "Northwind Studio",
    "logo_url": "https://svc.example.com/brand/logo/"
    "9f2c1d0e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e",
    "primary_color": "#1d4ed8",
    "accent_color": "#b45309",
    "support_url": "https://northwind.example/help",
    "hide_powered_by": True,
    "stylesheet_url": "https://svc.example.com/brand/1d4ed8-b45309.css",
    "updated_at": "2026-11-25T10:00:00+00:00",
}
_UNPROCESSABLE = problem_responses(422)
_UNPROCESSABLE["422"]["description"] = (
    "A value is refused; `errors` gives the messages per field [validation_failed]: a colour "
    "that is not `#rrggbb` or on which text cannot reach a 4.5:1 contrast (the message gives "
    "the ratio), an SVG or a file that is not a PNG, JPEG or WebP, a logo over 512 KB, a "
    "support URL that is not https, an unknown field."
)


@blp.route("")
class WhiteLabel(MethodView):
    @blp.response(200, WhiteLabelSchema, example=_EXAMPLE)
    @blp.doc(
        operationId="getWhiteLabel",
        security=API_KEY_SECURITY,
        responses=problem_responses(401, 402, 403, 429),
    )
    def get(self):
        """Your account's brand: name, logo URL, colours, support URL, "powered by"."""
        context = authenticate()
        require_endpoint_plan(REQUIRED_PLAN)
        return white_label.describe(context.account_id)

    @blp.response(200, WhiteLabelSchema, description="The brand as saved.", example=_EXAMPLE)
    @blp.doc(
        operationId="setWhiteLabel",
        security=API_KEY_SECURITY,
        requestBody={
            "required": True,
            "content": {
                "application/json": {
                    "schema": WhiteLabelUpdateSchema,
                    "example": {
                        "brand_name": "Northwind Studio",
                        "primary_color": "#1d4ed8",
                        "accent_color": "#b45309",
                        "support_url": "https://northwind.example/help",
                        "hide_powered_by": True,
                    },
                }
            },
        },
        responses={**problem_responses(400, 401, 402, 403, 413, 415, 429), **_UNPROCESSABLE},
    )
    def put(self):
        """Change your brand: the fields sent change, the others stay; null removes one."""
        context = authenticate()
        require_api_access_for_plan(REQUIRED_PLAN)
        body = json_body()
        require_plan(REQUIRED_PLAN)
        try:
            white_label.save(context.account_id, body)
        except BrandRefused as refused:
            db.session.rollback()
            raise validation_failed(refused.errors) from None
        db.session.commit()
        return white_label.describe(context.account_id)
