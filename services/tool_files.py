"""Files in and out of tool runs.

A binary input (a URL, a ``data:`` URI, base64 or an upload) is fetched or decoded once, in
the request, and stored; the run keeps a reference (``{"file_id", "content_type", "size"}``)
so queued runs carry no bytes, and the engine gets a ``Blob`` back at run time. A list of
files (an array field) is a list of references, read back as a list of ``Blob``. A ``Blob``
an engine returns is stored and answered as a file object with a URL on this service.
"""

from typing import Any

from werkzeug.datastructures import FileStorage

from catalogue import Tool
from catalogue.tool import MAX_FILE_BYTES
from engines.blob import Blob
from services import storage
from services.binary import BinaryInputError, blob_from_upload, decode_binary


def store_inputs(tool: Tool, inputs: dict, uploads: dict[str, FileStorage], account_id: int):
    """Replace each binary input (value, list of values or upload) with a reference to its
    stored file.

    Raises BinaryInputError (422, or 413 past 25 MiB)."""
    stored = dict(inputs)
    for name, accepted in tool.binary_inputs.items():
        value = inputs.get(name)
        if name in uploads:
            blob = blob_from_upload(
                uploads[name], field=name, max_bytes=MAX_FILE_BYTES, allowed_types=accepted
            )
            stored[name] = _store(blob, name, account_id)
        elif isinstance(value, str):
            stored[name] = _store(_decode(value, name, accepted), name, account_id)
        elif isinstance(value, list):
            fields = [f"{name}.{index}" for index in range(len(value))]
            stored[name] = [
                _store(_decode(item, field, accepted), field, account_id)
                for item, field in zip(value, fields, strict=True)
            ]
    return stored


def _decode(value: str, field: str, accepted: tuple[str, ...]) -> Blob:
    return decode_binary(value, field=field, max_bytes=MAX_FILE_BYTES, allowed_types=accepted)


def _store(blob: Blob, field: str, account_id: int) -> dict:
    if not blob.data:
        raise BinaryInputError(field, "The file is empty.")
    file = storage.put(blob, account_id=account_id)
    return {"file_id": file.id, "content_type": file.content_type, "size": file.size}


def load_inputs(tool: Tool, inputs: dict) -> dict:
    """The engine's inputs: every stored binary input read back as a ``Blob``."""
    loaded = dict(inputs)
    for name in tool.binary_inputs:
        reference = inputs.get(name)
        if isinstance(reference, list):
            loaded[name] = [_load(item) for item in reference]
        elif isinstance(reference, dict) and "file_id" in reference:
            loaded[name] = _load(reference)
    return loaded


def _load(reference: dict) -> Blob:
    file, data = storage.get(reference["file_id"])
    return Blob(data, file.content_type, file.filename)


_NESTED = (Blob, dict, list)


def store_outputs(output: Any, *, account_id: int, run_id: str) -> Any:
    """``output`` with every ``Blob`` in it stored and replaced by its file object."""
    if isinstance(output, Blob):
        file = storage.put(output, account_id=account_id, run_id=run_id)
        return {
            "id": file.id,
            "url": storage.url_for(file.id),
            "content_type": file.content_type,
            "size": file.size,
            "filename": file.filename,
        }
    if isinstance(output, dict):
        if not any(isinstance(value, _NESTED) for value in output.values()):
            return output  # the usual answer of a text tool: nothing to store
        return {
            key: store_outputs(value, account_id=account_id, run_id=run_id)
            for key, value in output.items()
        }
    if isinstance(output, list):
        return [store_outputs(item, account_id=account_id, run_id=run_id) for item in output]
    return output
