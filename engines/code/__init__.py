"""Developer tools on code, local and deterministic: formatters, cron, highlighting, Markdown."""

from engines.base import Engine
from engines.code.cron import CronExplainEngine
from engines.code.formatters import (
    JavaScriptFormatEngine,
    JsonFormatEngine,
    PythonFormatEngine,
    SqlFormatEngine,
)
from engines.code.markup import HighlightEngine, MarkdownEngine

ENGINES: tuple[Engine, ...] = (
    SqlFormatEngine(),
    JsonFormatEngine(),
    JavaScriptFormatEngine(),
    PythonFormatEngine(),
    CronExplainEngine(),
    HighlightEngine(),
    MarkdownEngine(),
)
