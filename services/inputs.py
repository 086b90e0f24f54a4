"""A tool's inputs as a run takes them, whoever asks (the API or the site): the ``input``
alias mapped to the main field, checked against the input schema, the tool's availability
checked, defaults filled and files stored. One validation, one set of messages."""

from werkzeug.datastructures import FileStorage

from catalogue import Tool
from engines import get_engine
from services import tool_files
from services.binary import BinaryInputError


class InputRejected(Exception):
    """Field errors (``errors``: field → messages); ``status`` 422, or 413 for a file over
    the size limit."""

    def __init__(self, errors: dict[str, list[str]], status: int = 422):
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))
        self.errors = errors
        self.status = status

    @property
    def message(self) -> str:
        """The first field's first message (all there is to say of a file too large)."""
        return next(iter(self.errors.values()))[0]


class ToolUnavailable(Exception):
    """The tool's engine cannot serve on this deployment; the message says why."""


def prepare(
    tool: Tool,
    body: dict,
    uploads: dict[str, FileStorage],
    *,
    account_id: int | None,
    check_available: bool = True,
) -> dict:
    """The run's inputs from typed ``body`` values and ``uploads`` (files by field): ``check``
    then ``store``."""
    check(tool, body, uploads, check_available=check_available)
    return store(tool, body, uploads, account_id=account_id)


def check(
    tool: Tool, body: dict, uploads: dict[str, FileStorage], *, check_available: bool = True
) -> None:
    """Check the inputs (InputRejected), and the tool's availability (ToolUnavailable) with
    ``check_available``: before any file is stored, any quota reserved or anything queued.
    The ``input`` alias in ``body`` or ``uploads`` is renamed to the primary field."""
    fields = set(body) | set(uploads)
    if "input" in fields:
        if tool.primary in fields:
            raise InputRejected({"input": [f"Send either input or {tool.primary}, not both."]})
        for source in (body, uploads):
            if "input" in source:
                source[tool.primary] = source.pop("input")
    unexpected = [name for name in uploads if name not in tool.binary_inputs]
    if unexpected:
        raise InputRejected({name: ["This field takes no file."] for name in unexpected})
    # An uploaded file stands where its field's string value would be.
    errors = tool.validate({**body, **{name: "upload" for name in uploads}})
    if errors:
        raise InputRejected(errors)
    if check_available:
        reason = get_engine(tool.engine).unavailable_reason()
        if reason is not None:
            raise ToolUnavailable(reason)


def store(
    tool: Tool, body: dict, uploads: dict[str, FileStorage], *, account_id: int | None
) -> dict:
    """Checked inputs with their defaults filled and their files stored (InputRejected: a
    file that cannot be read, or 413 past the size limit)."""
    try:
        return tool_files.store_inputs(tool, tool.with_defaults(body), uploads, account_id)
    except BinaryInputError as refused:
        raise InputRejected({refused.field: [refused.message]}, refused.status) from None
