import marshmallow as ma

from blueprints.api.schemas import RunErrorSchema

RUN_STATES = ["queued", "running", "succeeded", "failed", "canceled"]
STEP_STATES = ["pending", *RUN_STATES]


class WorkflowStepSchema(ma.Schema):
    id = ma.fields.String(required=True, metadata={"description": "The step's id."})
    tool = ma.fields.String(required=True, metadata={"description": "The tool's slug."})
    depends_on = ma.fields.List(
        ma.fields.String(),
        required=True,
        metadata={"description": "The steps whose outputs this step's inputs are made from."},
    )


class WorkflowSchema(ma.Schema):
    id = ma.fields.String(required=True)
    name = ma.fields.String(required=True)
    summary = ma.fields.String(required=True)
    required_plan = ma.fields.String(
        required=True, metadata={"description": "The highest plan any step's tool needs."}
    )
    credits = ma.fields.Integer(
        required=True,
        metadata={"description": "Credits of a run whose steps all succeed (at least)."},
    )
    input_schema = ma.fields.Dict(
        required=True,
        metadata={
            "description": "JSON Schema of `input` (a string; with `contentMediaType`, a URL "
            "or a data: URI of a file)."
        },
    )
    output_schema = ma.fields.Dict(required=True, metadata={"description": "JSON Schema."})
    steps = ma.fields.List(ma.fields.Nested(WorkflowStepSchema), required=True)
    example = ma.fields.Dict(required=True, metadata={"description": "An example request."})


class WorkflowListSchema(ma.Schema):
    workflows = ma.fields.List(ma.fields.Nested(WorkflowSchema), required=True)
    count = ma.fields.Integer(required=True)


class WorkflowRunRequestSchema(ma.Schema):
    """Start a workflow run."""

    workflow_id = ma.fields.String(required=True, metadata={"description": "The workflow."})
    input = ma.fields.String(
        required=True,
        metadata={
            "description": "The workflow's input: a topic or a text, or a URL or a data: URI "
            "for the workflows that start from a file (see its `input_schema`)."
        },
    )


class WorkflowRunAcceptedSchema(ma.Schema):
    """A workflow run has started."""

    run_id = ma.fields.UUID(required=True)
    workflow_id = ma.fields.String(required=True)
    status = ma.fields.String(required=True, metadata={"enum": RUN_STATES})
    status_url = ma.fields.String(required=True, metadata={"format": "uri"})
    created_at = ma.fields.DateTime(required=True)


class ProgressSchema(ma.Schema):
    completed_steps = ma.fields.Integer(required=True)
    total_steps = ma.fields.Integer(required=True)


class StepErrorSchema(RunErrorSchema):
    step = ma.fields.String(metadata={"description": "The step that failed the run."})
    tool = ma.fields.String(metadata={"description": "That step's tool."})


class StepRunSchema(ma.Schema):
    id = ma.fields.String(required=True, metadata={"description": "The step's id."})
    tool = ma.fields.String(required=True)
    status = ma.fields.String(
        required=True,
        metadata={
            "enum": STEP_STATES,
            "description": "`pending` until the steps it depends on have succeeded.",
        },
    )
    depends_on = ma.fields.List(ma.fields.String(), required=True)
    run_id = ma.fields.UUID(required=True, metadata={"description": "The step's tool run."})
    output = ma.fields.Dict(
        required=True,
        allow_none=True,
        metadata={"description": "The tool's output once the step succeeded."},
    )
    error = ma.fields.Nested(RunErrorSchema, required=True, allow_none=True)
    credits = ma.fields.Integer(required=True)
    started_at = ma.fields.DateTime(required=True, allow_none=True)
    finished_at = ma.fields.DateTime(required=True, allow_none=True)
    duration_ms = ma.fields.Integer(required=True, allow_none=True)


class WorkflowRunRecordSchema(ma.Schema):
    """A workflow run, finished or not."""

    run_id = ma.fields.UUID(required=True)
    workflow_id = ma.fields.String(required=True)
    status = ma.fields.String(required=True, metadata={"enum": RUN_STATES})
    progress = ma.fields.Nested(ProgressSchema, required=True)
    steps = ma.fields.List(ma.fields.Nested(StepRunSchema), required=True)
    output = ma.fields.Dict(
        required=True,
        allow_none=True,
        metadata={"description": "The workflow's output (its `output_schema`) once it succeeded."},
    )
    error = ma.fields.Nested(StepErrorSchema, required=True, allow_none=True)
    credits = ma.fields.Integer(
        required=True,
        metadata={"description": "Credits charged: those of the steps that succeeded."},
    )
    sandbox = ma.fields.Boolean(required=True)
    created_at = ma.fields.DateTime(required=True)
    started_at = ma.fields.DateTime(required=True, allow_none=True)
    finished_at = ma.fields.DateTime(required=True, allow_none=True)
    duration_ms = ma.fields.Integer(required=True, allow_none=True)
    status_url = ma.fields.String(required=True, metadata={"format": "uri"})
