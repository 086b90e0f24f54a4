"""OCR: character accuracy and seconds per page of the plain text OCR tool
(``image-to-text-ocr``) on pages made on the spot: a few original paragraphs printed black on
white, 11 pt, in three fonts at 150 and 300 dpi. A page is as wide as A4 with one-inch margins
and as tall as its paragraphs (a scan cropped to the text). Character accuracy is one minus
the character error rate (Levenshtein distance over the reference's length, pooled over the
pages) on whitespace-normalised text: where the lines break does not count, the order they
are read in does.

Baseline: RapidOCR called directly with its default settings (the same model files; its
line-orientation classifier on, detection at its default size), the lines joined in the order
it returns them: none of the reading order, detection size or classifier choice the product
adds.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.quality import Figure, edit_distance, run_engine

BASELINE = "RapidOCR defaults, lines as returned"
DPIS = (150, 300)
POINT_SIZE = 11
A4_WIDTH_IN = 8.27
PARAGRAPHS_PER_PAGE = 4
# (label, TrueType file; None: Pillow's own scalable font, Aileron, which Pillow always has).
# The DejaVu files come with Debian's fonts-dejavu-core, which fontconfig pulls in.
FONTS = (
    ("Aileron", None),
    ("DejaVu Serif", "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf"),
    ("DejaVu Mono", "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"),
)
PARAGRAPHS = (
    "The ferry to Holm Island leaves at 7:15 every weekday, weather permitting. Passengers "
    "with bicycles board first, then cars, then everyone on foot. Tickets bought on board "
    "cost 2.50 more, and the cafe on the upper deck only takes cards.",
    "Dear Ms. Okafor, thank you for your letter of 3 March. We have checked the meter "
    "readings you sent and agree that the bill was too high. A corrected statement is "
    "enclosed; the difference of 41.80 will be credited to your account within ten days.",
    "To repot a fern, water it the evening before. Ease the plant out of its old pot, "
    "loosen the roots gently with your fingers and set it in fresh compost, no deeper than "
    "before. Keep it out of direct sun for a week while it settles.",
    "Minutes of the residents' meeting, Tuesday: the lift on the north stairwell will be "
    "replaced in June (about six weeks of work). Bins move to the courtyard from Monday. "
    "Next meeting: 14 May at 19:30 in the community room.",
    "Our shop opens an hour later on Sundays, from 10 am to 4 pm. Returns are accepted "
    "within 30 days with a receipt; sale items can be exchanged but not refunded. Ask at the "
    "counter if you need a gift box or a paper bag.",
    "Fold the egg whites into the batter in three parts, turning the bowl as you go, so the "
    "air stays in. Bake at 180 degrees for 35 to 40 minutes, until a skewer comes out clean. "
    "Let the cake cool in its tin before turning it out.",
    "Warning: this device must be charged with the cable supplied. Do not leave it in a car "
    "on a hot day or near a radiator. If the case swells, gets hot or smells of burning, "
    "stop using it at once and contact support.",
    "The survey asked 1,204 commuters how they travel to work. Most drive (46%), a quarter "
    "take the bus or train, and 12% cycle; the rest walk or work from home. Cyclists were "
    "the most likely to say they enjoy the journey.",
    "Grandpa kept bees for forty years behind the orchard wall. Every August he would lift "
    "the frames one by one, slow and calm, while we watched from the kitchen window with our "
    "noses pressed to the glass, sure that he would be stung.",
    "Release notes, version 4.2: exports to CSV keep the column order you chose; the search "
    "box now finds partial words (e.g. 'invo' finds invoices); and a bug that froze the app "
    "when a file name held a # sign has been fixed.",
)


@dataclass
class Page:
    font: str
    dpi: int
    image: Any  # Blob, a PNG
    text: str  # the printed text, whitespace-normalised


def normalised(text: str) -> str:
    """Every run of whitespace (line and paragraph breaks too) as one space, none at the ends."""
    return " ".join(text.split())


def character_errors(printed: str, read: str) -> int:
    """The character edits from what was read to what was printed, both normalised."""
    return edit_distance(normalised(printed), normalised(read))


def character_accuracy(errors: int, characters: int) -> float:
    """One minus the character error rate; 0 when the reading is worse than nothing."""
    return max(0.0, 1 - errors / characters)


def _font(path: str | None, pixels: int) -> Any:
    from PIL import ImageFont

    return ImageFont.load_default(size=pixels) if path is None else ImageFont.truetype(path, pixels)


def _wrapped(paragraph: str, font: Any, width: float) -> list[str]:
    lines = [""]
    for word in paragraph.split():
        candidate = f"{lines[-1]} {word}".strip()
        if font.getlength(candidate) <= width or not lines[-1]:
            lines[-1] = candidate
        else:
            lines.append(word)
    return lines


def render(paragraphs: list[str], font_path: str | None, dpi: int) -> Any:
    """The paragraphs printed at ``POINT_SIZE`` on a page ``dpi`` dots per inch (PNG Blob):
    A4 wide, one-inch margins, lines 1.4 times the font size apart, a blank line between
    paragraphs."""
    from PIL import Image, ImageDraw

    from tests.engines.fixtures import image_blob

    pixels = round(POINT_SIZE * dpi / 72)
    font = _font(font_path, pixels)
    width, margin, step = round(A4_WIDTH_IN * dpi), dpi, round(pixels * 1.4)
    rows: list[str | None] = []  # None: the gap between two paragraphs
    for paragraph in paragraphs:
        rows.extend([*_wrapped(paragraph, font, width - 2 * margin), None])
    rows.pop()
    image = Image.new("RGB", (width, 2 * margin + len(rows) * step), "white")
    draw = ImageDraw.Draw(image)
    for index, row in enumerate(rows):
        if row is not None:
            draw.text((margin, margin + index * step), row, fill="black", font=font)
    return image_blob(image)


def pages() -> tuple[list[Page], list[str]]:
    """A page per font and resolution (the same paragraphs at both resolutions, the next
    ones for the next font), and a note per font that is missing here."""
    made, missing = [], []
    for index, (label, path) in enumerate(FONTS):
        if path is not None and not Path(path).is_file():
            missing.append(f"{label} skipped: no {path}")
            continue
        first = index * PARAGRAPHS_PER_PAGE
        chosen = [PARAGRAPHS[(first + n) % len(PARAGRAPHS)] for n in range(PARAGRAPHS_PER_PAGE)]
        for dpi in DPIS:
            made.append(Page(label, dpi, render(chosen, path, dpi), normalised(" ".join(chosen))))
    return made, missing


def _baseline_reader() -> Any:
    """RapidOCR with its default settings (only its log is quietened). Its default models are
    the files its wheel carries, the ones the product names by path: nothing is fetched."""
    from rapidocr import RapidOCR

    return RapidOCR(params={"Global.log_level": "error"})


@dataclass
class Reading:
    errors: int  # character edits from the page's text
    seconds: float


def _readings(read: Any, made: list[Page]) -> list[Reading]:
    readings = []
    for page in made:
        started = time.perf_counter()
        text = read(page)
        seconds = time.perf_counter() - started
        readings.append(Reading(character_errors(page.text, text), seconds))
    return readings


def measure() -> list[Figure]:
    from PIL import Image

    made, missing = pages()
    if not made:
        raise RuntimeError("; ".join(missing))
    reader = _baseline_reader()

    def engine(page: Page) -> str:
        return run_engine("image-to-text-ocr", {"image": page.image})["text"]

    def baseline(page: Page) -> str:
        image = Image.open(io.BytesIO(page.image.data)).convert("RGB")
        return "\n".join(reader(image).txts or ())

    # Both readers load their models and warm up on the first page, untimed.
    engine(made[0])
    baseline(made[0])
    engine_read, baseline_read = _readings(engine, made), _readings(baseline, made)

    def scores(readings: list[Reading], chosen: list[int]) -> tuple[float, float]:
        """(character accuracy, mean seconds per page) over the pages ``chosen``."""
        errors = sum(readings[i].errors for i in chosen)
        accuracy = character_accuracy(errors, sum(len(made[i].text) for i in chosen))
        return accuracy, sum(readings[i].seconds for i in chosen) / len(chosen)

    every = list(range(len(made)))
    (engine_accuracy, engine_s), (baseline_accuracy, baseline_s) = (
        scores(engine_read, every), scores(baseline_read, every)
    )  # fmt: skip
    characters = sum(len(page.text) for page in made)
    note = f"{len(made)} pages, {characters:,} characters; " + "; ".join(
        [f"fonts {', '.join(dict.fromkeys(page.font for page in made))}", *missing]
    )
    figures = [
        Figure("ocr", "character accuracy", engine_accuracy, baseline_accuracy, BASELINE,
               len(made), detail=note),
        Figure("ocr", "seconds per page", engine_s, baseline_s, BASELINE, len(made),
               higher_is_better=False, unit="s", detail=note),
    ]  # fmt: skip
    for index, page in enumerate(made):
        (accuracy, seconds), (plain, plain_s) = (
            scores(engine_read, [index]), scores(baseline_read, [index])
        )  # fmt: skip
        figures.append(
            Figure("ocr", f"char accuracy {page.font} {page.dpi} dpi", accuracy, plain,
                   BASELINE, 1,
                   detail=f"{len(page.text)} characters; {seconds:.1f} s vs {plain_s:.1f} s")
        )  # fmt: skip
    return figures
