from flask.views import MethodView
from flask_smorest import Blueprint

from blueprints.api.docs import API_KEY_SECURITY, problem_responses, result_example
from blueprints.api.pipeline import authenticate
from blueprints.api.plan_gated import (
    require_plan_of,
    result_schema,
    run_operation,
    start_run,
)
from blueprints.api.voice.schemas import VoiceListSchema
from blueprints.api.voice.tool import SPEAK
from engines.models import productions

blp = Blueprint(
    "voice", __name__, url_prefix="/v1", description="Speak text; list voices (Creator plan)."
)


@blp.route("/voice/speak")
class VoiceSpeak(MethodView):
    @blp.response(
        200,
        result_schema(SPEAK),
        description="The speech, as a file on this service.",
        example=result_example(SPEAK),
    )
    @blp.doc(**run_operation(SPEAK, operation_id="speak"))
    def post(self):
        """Speak text in a chosen voice, format and pace (Creator; 5 credits)."""
        return start_run(SPEAK)


@blp.route("/voice/voices")
class Voices(MethodView):
    @blp.response(
        200,
        VoiceListSchema,
        example={
            "voices": [
                {
                    "id": "en_US-joe-medium",
                    "name": "Joe (US English)",
                    "language": "en-US",
                    "engine": "piper",
                },
                {"id": "espeak:fr", "name": "French", "language": "fr", "engine": "espeak-ng"},
            ],
            "count": 2,
        },
    )
    @blp.doc(
        operationId="listVoices",
        security=API_KEY_SECURITY,
        responses=problem_responses(401, 402, 403, 429),
    )
    def get(self):
        """The voices available here: local Piper and eSpeak NG voices, provider voices."""
        authenticate()
        require_plan_of(SPEAK)
        voices = productions.voices()
        return {"voices": voices, "count": len(voices)}
