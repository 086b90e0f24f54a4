"""Pictures and runners shared by the image engine tests."""

import io

import pytest

pytest.importorskip("PIL", reason="the image engines need Pillow")

from PIL import Image  # noqa: E402

from engines.blob import Blob  # noqa: E402
from engines.images.analyze import ImageAnalyzeEngine  # noqa: E402
from engines.images.compose import ImageComposeEngine  # noqa: E402
from engines.images.filters import ImageFilterEngine  # noqa: E402
from tests.engines.fixtures import image_blob  # noqa: E402

filters, composer, analyzer = ImageFilterEngine(), ImageComposeEngine(), ImageAnalyzeEngine()
RED, WHITE, BLUE = (200, 40, 40), (255, 255, 255), (0, 0, 255)


def picture(size=(40, 20), colour=WHITE, mode="RGB") -> Image.Image:
    return Image.new(mode, size, colour)


def halves(size=(40, 20)) -> Blob:
    """Red on the left half, white on the right."""
    image = picture(size)
    image.paste(RED, (0, 0, size[0] // 2, size[1]))
    return image_blob(image)


def opened(output: dict) -> Image.Image:
    image = Image.open(io.BytesIO(output["image"].data))
    image.load()
    return image


def edit(operation: str, image: Blob, **inputs) -> dict:
    return filters.run({"image": image, **inputs}, {"operation": operation})


def compose(operation: str, **inputs) -> dict:
    return composer.run(inputs, {"operation": operation})


def analyze(operation: str, image: Blob, **inputs) -> dict:
    return analyzer.run({"image": image, **inputs}, {"operation": operation})


def decoded(blob: Blob) -> Image.Image:
    image = Image.open(io.BytesIO(blob.data))
    image.load()
    return image
