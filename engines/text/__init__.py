"""Local text tools for writing and SEO, deterministic and offline: ``text.*``, ``summarize.*``."""

from __future__ import annotations

from engines.base import Engine
from engines.text.compare import CompareEngine
from engines.text.counts import WordCountEngine
from engines.text.extract import ExtractEngine
from engines.text.find import FindEngine
from engines.text.frequency import FrequencyEngine
from engines.text.language import LanguageEngine
from engines.text.metrics import MetricsEngine
from engines.text.readability import ReadabilityEngine
from engines.text.sentiment import SentimentEngine
from engines.text.spell_check import SpellingEngine
from engines.text.summary import DocumentStatisticsEngine, ExtractiveSummaryEngine
from engines.text.transform import TransformEngine

ENGINES: tuple[Engine, ...] = (
    CompareEngine(),
    DocumentStatisticsEngine(),
    ExtractEngine(),
    ExtractiveSummaryEngine(),
    FindEngine(),
    FrequencyEngine(),
    LanguageEngine(),
    MetricsEngine(),
    ReadabilityEngine(),
    SentimentEngine(),
    SpellingEngine(),
    TransformEngine(),
    WordCountEngine(),
)
