"""The interface every engine implements, and the two errors an engine may raise."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, Protocol, TypeVar

T = TypeVar("T")


class ToolSpec(Protocol):
    """What an engine reads of a tool definition (the catalogue's ``Tool`` is one): engines
    depend on nothing above them."""

    engine: str
    params: dict[str, Any]
    output: dict[str, Any]


class EngineError(Exception):
    """The input passed validation but the engine cannot process it (the API answers 422).

    ``message`` is shown to the caller as is, so it must say what is wrong with their input.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ProviderUnavailable(Exception):
    """The engine or its provider cannot serve right now (the API answers 503)."""

    def __init__(self, message: str, retry_after: int = 30) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


class ModelUnfit(ProviderUnavailable):
    """The embedded text model answered, twice, but no answer passed the tool's checks (the
    API answers 503 ``embedded_model_unfit``). The message is the same for every tool and
    says nothing of the answers: what failed is logged, the caller learns what to do."""

    MESSAGE = (
        "The embedded text model could not give a usable answer for this input: its answers "
        "failed the tool's checks (a repeating loop, output that breaks the tool's format, "
        "or facts the input does not hold), so none is returned. The operator of this service "
        "can configure a model provider (AI_BASE_URL, with AI_API_KEY and AI_MODEL_CHAT) for "
        "dependable answers."
    )

    def __init__(self) -> None:
        super().__init__(self.MESSAGE)


def operations_schema(*operations: str, **properties: dict[str, Any]) -> dict[str, Any]:
    """The ``params_schema`` of an engine that does one of several ``operations``, chosen by
    a tool's ``operation`` param, with the other params it may take (``properties``)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["operation"],
        "properties": {"operation": {"enum": list(operations)}, **properties},
    }


class Engine:
    """Runs tools. One instance per engine serves every tool that names it, from any thread.

    ``run`` receives inputs already validated against the tool's input schema and completed
    with defaults, and the tool's ``params``; it returns a dict valid against the tool's output
    schema. Subclasses list the Python modules they import lazily in ``requires`` so that a
    deployment without them reports the engine unavailable instead of failing to start, and
    describe the ``params`` they accept in ``params_schema`` (checked when the catalogue loads).
    """

    name: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    params_schema: ClassVar[dict[str, Any]] = {"type": "object", "additionalProperties": False}

    def available(self) -> bool:
        return self.unavailable_reason() is None

    def unavailable_reason(self) -> str | None:
        missing = _missing_modules(self.requires)
        if missing:
            return f"Engine {self.name} needs the Python package(s) {', '.join(missing)}."
        return None

    def best_with_provider(self) -> bool:
        """Whether this engine runs here on the small embedded text model alone, whose
        answers a configured model provider would make better (the catalogue says so)."""
        return False

    def waits_on_network(self) -> bool:
        """Whether a run of this engine spends its time waiting on the network (a model
        provider's answer) rather than computing here. The queued runs of such an engine go
        to the I/O queues, whose worker holds hundreds of them at once; the others to the
        queues of the workers that compute (``services.queue.queue_for``)."""
        return False

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def run_tool(self, tool: ToolSpec, inputs: dict[str, Any]) -> dict[str, Any]:
        """Run ``tool``; engines that need more of the tool than its params override this."""
        return self.run(inputs, tool.params)

    def billed_units(self, output: dict[str, Any]) -> int:
        """How many times a run that gave ``output`` is charged its tool's credits: once,
        unless the engine charges per item it made (images, chapters)."""
        return 1

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


Job = Callable[[dict[str, Any]], dict[str, Any]]


class ChoiceEngine(Engine):
    """An engine doing one of several related jobs, chosen by one of the tool's params.

    A subclass names the param in ``choice`` (``operation`` unless it reads better as
    ``finder``, ``schema``...) and maps each allowed value to the function that does that
    job with the tool's inputs in ``jobs``; ``params_schema`` is built from them, so the
    catalogue check and the code cannot disagree. Subclasses whose jobs need more than the
    inputs override ``run`` and keep ``jobs`` as the table of what may be chosen.
    """

    choice: ClassVar[str] = "operation"
    jobs: ClassVar[Mapping[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.params_schema = {
            "type": "object",
            "additionalProperties": False,
            "required": [cls.choice],
            "properties": {cls.choice: {"enum": sorted(cls.jobs)}},
        }

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        return self.jobs[params[self.choice]](inputs)


@functools.cache
def _missing_modules(modules: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(name for name in modules if importlib.util.find_spec(name) is None)


def load_once(loader: Callable[..., T]) -> Callable[..., T]:
    """Cache a loader's result per arguments, building each value once even under threads.

    ``functools.cache`` may run a slow loader twice when two requests arrive together, and
    some libraries (langdetect) are not safe to initialise concurrently.
    """
    lock = threading.Lock()
    values: dict[tuple[Any, ...], T] = {}

    @functools.wraps(loader)
    def load(*args: Any) -> T:
        try:
            return values[args]
        except KeyError:
            pass
        with lock:
            if args not in values:
                values[args] = loader(*args)
            return values[args]

    return load


# The stop signal of the job this thread runs (``stop_signal``): an engine that can stop
# midway (the embedded text model stops generating) asks ``stop_requested`` as it goes.
_job = threading.local()


@contextlib.contextmanager
def stop_signal(event: threading.Event) -> Iterator[threading.Event]:
    """Within ``with stop_signal(event)``, ``stop_requested()`` in this thread tells whether
    ``event`` is set: the in-process queue sets it when the job ran out of time."""
    outer = getattr(_job, "stop", None)
    _job.stop = event
    try:
        yield event
    finally:
        _job.stop = outer


def stop_requested() -> bool:
    """Whether the job this thread runs was told to stop (it ran out of time and its result
    will be discarded): an engine that can stop early may raise instead of going on."""
    stop = getattr(_job, "stop", None)
    return stop is not None and stop.is_set()


# The models that answered for the run this thread works on (``models_noted``).
_models = threading.local()


@contextlib.contextmanager
def models_noted() -> Iterator[list[str]]:
    """Within ``with models_noted() as names``, ``names`` gathers the name of every model
    that answered in this thread (``note_model``), each once, in order: what a run records
    as its ``model``."""
    outer = getattr(_models, "names", None)
    _models.names = names = []
    try:
        yield names
    finally:
        _models.names = outer


def note_model(name: str) -> None:
    """Say that the model ``name`` answered (outside ``models_noted``: nobody asks)."""
    names = getattr(_models, "names", None)
    if names is not None and name and name not in names:
        names.append(name)


class TextListener(Protocol):
    """Who reads the text a model writes for a run, as it is written: called with each
    piece; ``restart`` says the text so far is void (the answer is being written again:
    another model took over, or the answer was refused and is asked for once more)."""

    def __call__(self, piece: str) -> None: ...

    def restart(self) -> None: ...


# The run this thread works on's listener (``text_written_to``): its followers.
_text = threading.local()


@contextlib.contextmanager
def text_written_to(listener: TextListener) -> Iterator[None]:
    """Within ``with text_written_to(listener)``, a text tool's model that can say its answer
    piece by piece gives each piece to ``listener`` as it comes."""
    outer = getattr(_text, "listener", None)
    _text.listener = listener
    try:
        yield
    finally:
        _text.listener = outer


def text_listener() -> TextListener | None:
    """The listener of ``text_written_to`` in this thread, or None: nobody follows."""
    return getattr(_text, "listener", None)
