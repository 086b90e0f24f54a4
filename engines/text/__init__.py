"""Local text utilities for writing and SEO, deterministic and offline: the ``text.*`` engines."""

from __future__ import annotations

from engines.base import Engine
from engines.text.compare import CompareEngine
from engines.text.extract import ExtractEngine
from engines.text.find import FindEngine
from engines.text.frequency import FrequencyEngine
from engines.text.metrics import MetricsEngine
from engines.text.transform import TransformEngine

ENGINES: tuple[Engine, ...] = (
    CompareEngine(),
    ExtractEngine(),
    FindEngine(),
    FrequencyEngine(),
    MetricsEngine(),
    TransformEngine(),
)
