"""Local image engines (``images.*``), one module per family of jobs.

``images.process`` (resize, convert, crop...) and ``images.qr`` make one picture from another or
from text; ``images.filter``, ``images.compose`` and ``images.analyze`` change pixels, build new
canvases and measure a picture. Pictures are read with ``_io.open_image`` (decompression bombs
refused); shared helpers live in ``_io`` and ``_helpers``.
"""

from engines.base import Engine
from engines.images.analyze import ImageAnalyzeEngine
from engines.images.compose import ImageComposeEngine
from engines.images.filters import ImageFilterEngine
from engines.images.process import ImageProcessEngine
from engines.images.qr import QrCodeEngine

ENGINES: tuple[Engine, ...] = (
    ImageProcessEngine(),
    QrCodeEngine(),
    ImageAnalyzeEngine(),
    ImageComposeEngine(),
    ImageFilterEngine(),
)
