from flask.views import MethodView
from flask_smorest import Blueprint

from blueprints.api.docs import result_example
from blueprints.api.images.tool import GENERATE_IMAGES
from blueprints.api.plan_gated import result_schema, run_operation, start_run

blp = Blueprint(
    "images", __name__, url_prefix="/v1", description="Generate images (Creator plan and up)."
)


@blp.route("/images/generate")
class ImagesGenerate(MethodView):
    @blp.response(
        200,
        result_schema(GENERATE_IMAGES),
        description="The images, as files on this service.",
        example=result_example(GENERATE_IMAGES),
    )
    @blp.doc(**run_operation(GENERATE_IMAGES, operation_id="generateImages"))
    def post(self):
        """Generate 1 to 4 images from a prompt (Creator; 5 credits per image)."""
        return start_run(GENERATE_IMAGES)
