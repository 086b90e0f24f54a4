from flask.views import MethodView
from flask_smorest import Blueprint

from blueprints.api.docs import result_example
from blueprints.api.plan_gated import result_schema, run_operation, start_run
from blueprints.api.video.tool import GENERATE_VIDEO

blp = Blueprint(
    "video", __name__, url_prefix="/v1", description="Narrated videos (Business plan and up)."
)


@blp.route("/video/generate")
class VideoGenerate(MethodView):
    @blp.response(
        200,
        result_schema(GENERATE_VIDEO),
        description="The video, as a file on this service (when it was made within the wait).",
        example=result_example(GENERATE_VIDEO),
    )
    @blp.doc(**run_operation(GENERATE_VIDEO, operation_id="generateVideo"))
    def post(self):
        """Make a narrated video from a topic or a script (Business; 10 credits)."""
        return start_run(GENERATE_VIDEO, one_of=("topic", "script"))
