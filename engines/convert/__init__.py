"""Data and code converters (local, deterministic): formats, encodings, hashes, dates, colours.

Each engine is a family of operations and a tool picks one with its ``operation`` param. The
tool schemas bound every input string; what parsing can multiply (nesting, YAML aliases, rows,
query results, regex backtracking) is bounded here, and bad input raises EngineError saying
what to fix. One module per family; shared helpers live in ``_helpers``.
"""

from engines.base import Engine
from engines.convert.colours import ColourEngine
from engines.convert.data_formats import DataConvertEngine
from engines.convert.dates import DateTimeEngine
from engines.convert.developer_text import DeveloperTextEngine
from engines.convert.encodings import EncodingEngine
from engines.convert.hashes import DigestEngine
from engines.convert.json_tools import JsonToolsEngine
from engines.convert.minifiers import MinifyEngine
from engines.convert.units import NumberEngine
from engines.convert.web import WebEngine

ENGINES: tuple[Engine, ...] = (
    DataConvertEngine(),
    JsonToolsEngine(),
    EncodingEngine(),
    DigestEngine(),
    WebEngine(),
    DateTimeEngine(),
    NumberEngine(),
    ColourEngine(),
    MinifyEngine(),
    DeveloperTextEngine(),
)
