from flask.views import MethodView
from flask_smorest import Blueprint

from blueprints.api.audiobooks.schemas import AudiobookSchema
from blueprints.api.audiobooks.tool import AUDIOBOOK
from blueprints.api.docs import API_KEY_SECURITY, problem_responses, result_example
from blueprints.api.pipeline import authenticate
from blueprints.api.plan_gated import (
    require_plan_of,
    result_schema,
    run_operation,
    start_run,
)
from blueprints.api.problems import Problem
from blueprints.api.tools.runs import own_run
from models import Run
from services import clock
from services.urls import absolute_url_for

blp = Blueprint(
    "audiobooks", __name__, url_prefix="/v1", description="Audiobooks (Business plan and up)."
)


def audiobook(run: Run) -> dict:
    """An audiobook run as ``GET /audiobooks/{run_id}`` shows it."""
    output = run.output if run.status == "succeeded" else {}
    return {
        "run_id": run.id,
        "status": run.status,
        "title": output.get("title"),
        "chapters": output.get("chapters", []),
        "duration_s": output.get("duration_s"),
        "voice": output.get("voice"),
        "format": output.get("format"),
        "credits": run.credits,
        "sandbox": run.sandbox,
        "error": run.error,
        "created_at": clock.as_utc(run.created_at),
        "finished_at": clock.as_utc(run.finished_at),
        "status_url": absolute_url_for("tools.RunStatus", run_id=run.id),
    }


@blp.route("/audiobooks")
class Audiobooks(MethodView):
    @blp.response(
        200,
        result_schema(AUDIOBOOK),
        description="The chapters, as audio files on this service (when read within the "
        "wait; long books answer 202: poll `GET /audiobooks/{run_id}`).",
        example=result_example(AUDIOBOOK),
    )
    @blp.doc(**run_operation(AUDIOBOOK, operation_id="createAudiobook", uploads=True))
    def post(self):
        """Read a text or an EPUB aloud, one audio file per chapter (Business; 5 credits each)."""
        return start_run(AUDIOBOOK, one_of=("text", "book"))


@blp.route("/audiobooks/<uuid:run_id>")
class AudiobookById(MethodView):
    @blp.response(200, AudiobookSchema)
    @blp.doc(
        operationId="getAudiobook",
        security=API_KEY_SECURITY,
        responses=problem_responses(401, 402, 403, 404, 429),
    )
    def get(self, run_id):
        """An audiobook's status, and its chapters with titles, durations and audio URLs."""
        authenticate()
        require_plan_of(AUDIOBOOK)
        run = own_run(run_id)
        if run.tool_slug != AUDIOBOOK.slug:
            raise Problem(404, "run_not_found", f"There is no audiobook {run_id} for this account.")
        return audiobook(run)
