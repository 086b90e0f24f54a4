"""Optical character recognition with RapidOCR (PP-OCR models on onnxruntime).

Only the models inside the rapidocr wheel are used, named by path: any other model choice
(another language, another size) makes rapidocr download it at run time. Those models read
Chinese and English (Latin letters, digits, punctuation).

Besides plain text, a tool's ``mode`` param shapes what was read: word boxes and paragraphs,
receipts, invoices, business cards, code, tables, identifiers (IBANs, VAT ids, references),
or several pictures at once. The shaping is plain rules over the lines and their boxes.
"""

from __future__ import annotations

import csv
import io
import re
import statistics
import threading
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

from engines.base import Engine, EngineError, load_once
from engines.images._io import open_image

_MODEL_FILES = {
    "Det.model_path": "PP-OCRv6_det_small.onnx",
    "Rec.model_path": "PP-OCRv6_rec_small.onnx",
    "Cls.model_path": "ch_ppocr_mobile_v2.0_cls_mobile.onnx",
}

# Detection sees the image scaled so that its longest side is at most this: a page at 150 dpi
# keeps its small print, and a phone photo is not run at 12 megapixels.
_DETECTION_SIDE = 1280

# rapidocr objects keep per-call state on the instance; one page at a time per process (the
# models already use both cores for one page).
_LOCK = threading.Lock()


@load_once
def _reader() -> Any:
    import rapidocr
    from rapidocr import RapidOCR

    models = Path(rapidocr.__file__).resolve().parent / "models"
    settings: dict[str, Any] = {key: str(models / name) for key, name in _MODEL_FILES.items()}
    missing = [path for path in settings.values() if not Path(path).is_file()]
    if missing:
        raise RuntimeError(f"rapidocr's bundled models are missing: {', '.join(missing)}")
    settings.update(
        {
            "Global.log_level": "error",
            "Det.limit_type": "max",
            "Det.limit_side_len": _DETECTION_SIDE,
        }
    )
    return RapidOCR(params=settings)


class OcrEngine(Engine):
    """Reads the text of an image, then shapes it as the tool's ``mode`` param says.

    Input: ``image`` (Blob). Optional ``min_confidence`` (0-1, default 0.5) drops weaker lines.
    Output without a mode: ``text`` (lines in reading order, one per line; lines side by side
    on one row are joined with a space), ``lines`` (text, confidence, box as four [x, y]
    corners clockwise from top left, in pixels of the upright image), ``line_count``,
    ``confidence`` (mean over lines, 0 when none), ``width`` and ``height``. An image without
    text gives empty text, not an error. Modes: ``layout`` (word boxes and paragraphs),
    ``receipt``, ``invoice``, ``business_card``, ``code`` (``indent_size``), ``table``,
    ``identifiers`` and ``batch`` (``image_2`` ... ``image_5`` read too, text per image).
    """

    name = "ocr.text"
    requires = ("rapidocr", "onnxruntime", "cv2", "PIL")
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "min_confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "mode": {
                "enum": [
                    "layout",
                    "receipt",
                    "invoice",
                    "business_card",
                    "code",
                    "table",
                    "identifiers",
                    "batch",
                ]
            },
        },
    }

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        minimum = inputs.get("min_confidence", params.get("min_confidence", 0.5))
        mode = params.get("mode")
        if mode == "batch":
            return _batch(inputs, minimum)
        read = read_image(inputs["image"], minimum, words=mode == "layout")
        if mode is None:
            return read
        return _SHAPERS[mode](read, inputs)


def read_image(blob: Any, minimum: float, words: bool = False) -> dict[str, Any]:
    """The plain OCR output of one picture (see OcrEngine); ``words`` adds word boxes."""
    image = open_image(blob)
    if image.mode != "RGB":
        image = _on_white(image)
    with _LOCK:
        # No line-orientation classifier: on upright pages it turned correct lines upside
        # down (half a dense A4 page lost, bench/engines.py); open_image already turns
        # pictures upright from their EXIF orientation.
        result = _reader()(image, use_cls=False, return_word_box=words)
    word_lists = list(result.word_results or ()) if words else []
    lines = []
    for index, (text, score, box) in enumerate(
        zip(result.txts or (), result.scores or (), _as_list(result.boxes), strict=False)
    ):
        if score < minimum or not text.strip():
            continue
        line = {"text": text.strip(), "confidence": round(float(score), 4), "box": _corners(box)}
        if words:
            line["words"] = [
                {"text": word, "confidence": round(float(word_score), 4), "box": _corners(corners)}
                for word, word_score, corners in (
                    word_lists[index] if index < len(word_lists) else ()
                )
                if word.strip()
            ]
        lines.append(line)
    lines = _reading_order(lines)
    mean = sum(line["confidence"] for line in lines) / len(lines) if lines else 0.0
    return {
        "text": _join_rows(lines),
        "lines": lines,
        "line_count": len(lines),
        "confidence": round(mean, 4),
        "width": image.width,
        "height": image.height,
    }


def _corners(box: Any) -> list[list[int]]:
    return [[round(float(x)), round(float(y))] for x, y in box]


def _on_white(image: Any) -> Any:
    """RGB for the models; transparent areas become white paper rather than black."""
    from PIL import Image

    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        rgba = image.convert("RGBA")
        paper = Image.new("RGB", rgba.size, "white")
        paper.paste(rgba, mask=rgba.getchannel("A"))
        return paper
    return image.convert("RGB")


def _as_list(boxes: Any) -> list[Any]:
    return [] if boxes is None else list(boxes)


def _rows(lines: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Group lines whose vertical centres fall within half a line height of each other."""
    rows: list[list[dict[str, Any]]] = []
    for line in sorted(lines, key=_centre_y):
        if rows:
            previous = rows[-1][-1]
            tolerance = _height(previous) / 2
            if abs(_centre_y(line) - _centre_y(previous)) <= tolerance:
                rows[-1].append(line)
                continue
        rows.append([line])
    return [sorted(row, key=lambda line: min(x for x, _ in line["box"])) for row in rows]


def _reading_order(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [line for row in _rows(lines) for line in row]


def _join_rows(lines: list[dict[str, Any]]) -> str:
    return "\n".join(" ".join(line["text"] for line in row) for row in _rows(lines))


def _centre_y(line: dict[str, Any]) -> float:
    ys = [y for _, y in line["box"]]
    return (min(ys) + max(ys)) / 2


def _height(line: dict[str, Any]) -> float:
    ys = [y for _, y in line["box"]]
    return max(max(ys) - min(ys), 1)


# --- shaping what was read ------------------------------------------------------------------

# Pictures per batch call: image, image_2, ..., image_5 (one OCR pass each, about a second).
MAX_BATCH = 5


def _batch(inputs: dict[str, Any], minimum: float) -> dict[str, Any]:
    names = ["image", *(f"image_{n}" for n in range(2, MAX_BATCH + 1))]
    given = [(name, inputs[name]) for name in names if inputs.get(name) is not None]
    pages = []
    for name, blob in given:
        try:
            read = read_image(blob, minimum)
        except EngineError as error:
            raise EngineError(f"{name}: {error.message}") from None
        pages.append(
            {
                "field": name,
                "text": read["text"],
                "line_count": read["line_count"],
                "confidence": read["confidence"],
                "width": read["width"],
                "height": read["height"],
            }
        )
    return {
        "text": "\n\n".join(page["text"] for page in pages if page["text"]),
        "images": pages,
        "image_count": len(pages),
        "line_count": sum(page["line_count"] for page in pages),
    }


def _left(line: dict[str, Any]) -> float:
    return min(x for x, _ in line["box"])


def _right(line: dict[str, Any]) -> float:
    return max(x for x, _ in line["box"])


def _layout(read: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """Lines with their words, and paragraphs: rows split where the gap exceeds a line."""
    rows = _rows(read["lines"])
    paragraphs: list[list[str]] = []
    previous_bottom = None
    for row in rows:
        top = min(min(y for _, y in line["box"]) for line in row)
        bottom = max(max(y for _, y in line["box"]) for line in row)
        height = bottom - top
        if previous_bottom is None or top - previous_bottom > max(height, 1) * 0.8:
            paragraphs.append([])
        paragraphs[-1].append(" ".join(line["text"] for line in row))
        previous_bottom = bottom
    words = sum(len(line.get("words", [])) for line in read["lines"])
    return {
        **read,
        "word_count": words,
        "paragraphs": [" ".join(rows_text) for rows_text in paragraphs],
    }


# Amounts with two decimals: 12.50, 1,234.56, 1.234,56, 12,50 (and a currency around them).
_AMOUNT = re.compile(
    r"(?<![\d.,])-?\d{1,3}(?:[.,' ]\d{3})*[.,]\d{2}(?![\d.,]*\d)|(?<![\d.,])-?\d+[.,]\d{2}(?!\d)"
)
_CURRENCIES = {
    "€": "EUR",
    "£": "GBP",
    "¥": "JPY",
    "₹": "INR",
    "$": "USD",
    "EUR": "EUR",
    "USD": "USD",
    "GBP": "GBP",
    "CHF": "CHF",
    "CAD": "CAD",
    "AUD": "AUD",
    "JPY": "JPY",
    "SEK": "SEK",
    "NOK": "NOK",
    "DKK": "DKK",
    "PLN": "PLN",
    "INR": "INR",
}


def _amounts(text: str) -> list[float]:
    values = []
    for match in _AMOUNT.finditer(_DATE.sub(" ", text)):  # 05.04.2026 is no price
        raw = match.group().replace("'", "").replace(" ", "")
        whole, cents = raw[:-3], raw[-2:]
        values.append(round(float(re.sub(r"[.,]", "", whole) + "." + cents), 2))
    return values


def _currency(text: str) -> str | None:
    for sign, code in _CURRENCIES.items():
        pattern = re.escape(sign) if not sign.isalpha() else rf"\b{sign}\b"
        if re.search(pattern, text):
            return code
    return None


_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ],
        start=1,
    )
    for name in names
}
_DATE = re.compile(
    r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"  # 2026-03-14
    r"|\b(\d{1,2})([./-])(\d{1,2})\5(\d{4}|\d{2})\b"  # 14.03.2026, 03/14/26
    r"|\b(\d{1,2})\.?\s+([A-Za-z]{3,9})\.?,?\s+(\d{4})\b"  # 14 March 2026
    r"|\b([A-Za-z]{3,9})\.?\s+(\d{1,2}),?\s+(\d{4})\b"  # March 14, 2026
)


def _dates(text: str) -> list[dict[str, str | None]]:
    """Every date written in ``text``: as printed, and as ISO 8601 when it is unambiguous
    enough (day first unless the first number cannot be a day... or the second a month)."""
    found = []
    for match in _DATE.finditer(text):
        g = match.groups()
        if g[0]:
            parts = (int(g[0]), int(g[1]), int(g[2]))
        elif g[3]:
            first, second, year = int(g[3]), int(g[5]), int(g[6])
            year += 2000 if year < 100 else 0
            # Dots are European (day first); slashes read day first unless that is impossible.
            day, month = (second, first) if second > 12 and first <= 12 else (first, second)
            parts = (year, month, day)
        elif g[7]:
            month = _MONTHS.get(g[8].lower())
            if month is None:
                continue
            parts = (int(g[9]), month, int(g[7]))
        else:
            month = _MONTHS.get(g[10].lower())
            if month is None:
                continue
            parts = (int(g[12]), month, int(g[11]))
        try:
            iso = date(*parts).isoformat()
        except ValueError:
            continue
        found.append({"text": match.group(), "iso": iso})
    return found


def _labelled_amount(rows: list[str], pattern: str, exclude: str | None = None) -> float | None:
    """The last amount on the last row matching ``pattern`` (or on the row after it)."""
    label = re.compile(pattern, re.IGNORECASE)
    skip = re.compile(exclude, re.IGNORECASE) if exclude else None
    for index in range(len(rows) - 1, -1, -1):
        row = rows[index]
        if label.search(row) and not (skip and skip.search(row)):
            amounts = _amounts(row) or (_amounts(rows[index + 1]) if index + 1 < len(rows) else [])
            if amounts:
                return amounts[-1]
    return None


_TOTAL = r"\b(grand\s+total|total\s+due|amount\s+due|balance\s+due|total|to\s+pay|summe|gesamt)\b"
_SUBTOTAL = r"\b(sub\s*-?\s*total|net\s+amount|net\s+total|zwischensumme)\b"
_TAX = r"\b(tax|vat|gst|hst|mwst|ust|tva|iva)\b"
_NOT_ITEM = re.compile(
    _TOTAL + "|" + _SUBTOTAL + "|" + _TAX
    + r"|\b(change|cash|card|visa|mastercard|amex|payment|paid|tip|balance|tender|discount"
    r"|rounding|due|thank)\b",
    re.IGNORECASE,
)  # fmt: skip
_QUANTITY = re.compile(r"^\s*(\d{1,3})\s*(?:x|@|\*)\s+|\s+(?:x|@)\s*(\d{1,3})\b", re.IGNORECASE)


def _receipt(read: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    text = read["text"]
    rows = [row for row in text.split("\n") if row.strip()]
    items = []
    for row in rows:
        amounts = _amounts(row)
        if not amounts or _NOT_ITEM.search(row):
            continue
        description = _AMOUNT.split(row)[0]
        quantity = 1
        found = _QUANTITY.search(description)
        if found:
            quantity = int(found.group(1) or found.group(2))
            description = _QUANTITY.sub(" ", description)
        description = re.sub(r"[\s$€£¥:.*-]+$", "", description).strip(" $€£¥:")
        if re.search(r"[A-Za-z]{2}", description):
            items.append({"description": description, "quantity": quantity, "price": amounts[-1]})
    merchant = next(
        (
            row.strip()
            for row in rows
            if re.search(r"[A-Za-z]{3}", row) and not _amounts(row) and not _dates(row)
        ),
        None,
    )
    dates = _dates(text)
    total = _labelled_amount(rows, _TOTAL, exclude=_SUBTOTAL)
    every_amount = _amounts(text)
    return {
        "text": text,
        "merchant": merchant,
        "date": dates[0]["iso"] if dates else None,
        "items": items,
        "subtotal": _labelled_amount(rows, _SUBTOTAL),
        "tax": _labelled_amount(rows, _TAX),
        "total": total if total is not None else (max(every_amount) if every_amount else None),
        "currency": _currency(text),
        "confidence": read["confidence"],
    }


_INVOICE_NUMBER = re.compile(
    r"\b(?:invoice|inv|bill|rechnung|facture|factura)\s*(?:no\.?|number|nr\.?|num\.?|#|n°|id)?"
    r"\s*[:#]?\s*([A-Z0-9][A-Z0-9\-/_.]{2,24})",
    re.IGNORECASE,
)
_ORDER_NUMBER = re.compile(
    r"\b(P\.?O\.?|purchase\s+order|order|ref(?:erence)?|tracking|booking|confirmation|"
    r"customer|account|ticket|case|shipment)\s*(?:no\.?|number|nr\.?|#|id|code)?\s*[:#]\s*"
    r"([A-Z0-9][A-Z0-9\-/_.]{2,30})|\b(order|tracking|booking|ticket)\s*#\s*([A-Z0-9\-]{3,30})",
    re.IGNORECASE,
)
# EU (and UK, Swiss) VAT number formats, after removing spaces and dots.
_VAT_ID = re.compile(
    r"\b(ATU\d{8}|BE[01]\d{9}|BG\d{9,10}|CY\d{8}[A-Z]|CZ\d{8,10}|DE\d{9}|DK\d{8}|EE\d{9}"
    r"|EL\d{9}|ES[A-Z0-9]\d{7}[A-Z0-9]|FI\d{8}|FR[A-Z0-9]{2}\d{9}|HR\d{11}|HU\d{8}"
    r"|IE\d{7}[A-Z]{1,2}|IE\d[A-Z]\d{5}[A-Z]|IT\d{11}|LT(?:\d{9}|\d{12})|LU\d{8}|LV\d{11}"
    r"|MT\d{8}|NL\d{9}B\d{2}|PL\d{10}|PT\d{9}|RO\d{2,10}|SE\d{12}|SI\d{8}|SK\d{10}"
    r"|GB(?:\d{9}|\d{12})|XI\d{9}|CHE\d{9}(?:MWST|TVA|IVA)?)\b"
)


def _vat_ids(text: str) -> list[str]:
    compact = re.sub(r"(?<=[A-Z0-9])[ .\-](?=[A-Z0-9])", "", text.upper())
    return list(dict.fromkeys(_VAT_ID.findall(compact)))


def _labelled_date(rows: list[str], pattern: str) -> str | None:
    label = re.compile(pattern, re.IGNORECASE)
    for index, row in enumerate(rows):
        if label.search(row):
            found = _dates(row) or (_dates(rows[index + 1]) if index + 1 < len(rows) else [])
            if found:
                return found[0]["iso"]
    return None


def _invoice(read: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    text = read["text"]
    rows = [row for row in text.split("\n") if row.strip()]
    number = next(
        (
            match.group(1)
            for match in _INVOICE_NUMBER.finditer(text)
            if re.search(r"\d", match.group(1))
        ),
        None,
    )
    due = _labelled_date(rows, r"\b(due|payable|zahlbar|échéance)\b")
    issued = _labelled_date(
        rows, r"\b(invoice\s+date|date\s+of\s+issue|issue\s+date|issued|date)\b"
    )
    dates = [found["iso"] for found in _dates(text)]
    if issued is None or issued == due:
        issued = next((iso for iso in dates if iso != due), None)
    total = _labelled_amount(rows, _TOTAL, exclude=_SUBTOTAL)
    return {
        "text": text,
        "invoice_number": number,
        "invoice_date": issued,
        "due_date": due,
        "order_references": _references(text),
        "subtotal": _labelled_amount(rows, _SUBTOTAL),
        "tax": _labelled_amount(rows, _TAX, exclude=r"\b(id|no\.?|number|reg)\b"),
        "total": total,
        "currency": _currency(text),
        "vat_ids": _vat_ids(text),
        "ibans": [iban["iban"] for iban in _ibans(text) if iban["valid"]],
        "confidence": read["confidence"],
    }


def _references(text: str) -> list[dict[str, str]]:
    found = []
    for match in _ORDER_NUMBER.finditer(text):
        label = match.group(1) or match.group(3)
        value = match.group(2) or match.group(4)
        if re.search(r"\d", value):
            found.append({"label": re.sub(r"\s+", " ", label.lower()), "value": value})
    return found


# IBAN lengths by country (ISO 13616 registry).
_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28,
    "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23,
    "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IQ": 23, "IS": 26,
    "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20,
    "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18,
    "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24,
    "SC": 31, "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24,
    "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){10,30}\b")


def _ibans(text: str) -> list[dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for match in _IBAN.finditer(text.upper()):
        iban = match.group().replace(" ", "")
        country = iban[:2]
        expected = _IBAN_LENGTHS.get(country)
        if expected is None:
            continue
        iban = iban[:expected]
        if len(iban) < expected:
            reason = f"too short for {country} ({len(iban)} of {expected} characters)"
        elif not _iban_checksum_ok(iban):
            reason = "the check digits do not match (a character is misread or mistyped)"
        else:
            reason = None
        found.setdefault(
            iban,
            {
                "iban": iban,
                "formatted": " ".join(iban[i : i + 4] for i in range(0, len(iban), 4)),
                "country": country,
                "valid": reason is None,
                "problem": reason,
            },
        )
    return list(found.values())


def _iban_checksum_ok(iban: str) -> bool:
    """ISO 7064 mod 97-10: the rearranged number, letters as 10-35, leaves 1."""
    digits = "".join(str(int(char, 36)) for char in iban[4:] + iban[:4])
    return int(digits) % 97 == 1


_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(
    r"\b(?:https?://|www\.)[^\s,;]+|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:com|org|net|io|co|dev|"
    r"app|ai|biz|info|de|fr|uk|nl|es|it|ch|at|be|eu|us|ca)\b(?:/[^\s,;]*)?",
    re.IGNORECASE,
)
_PHONE = re.compile(r"(?<![\w+])\+?\(?\d[\d ()./-]{5,}\d(?![\w])")
_PHONE_LABELS = (
    (re.compile(r"\b(mobile|mob|cell|m)\b\.?\s*:?", re.IGNORECASE), "cell"),
    (re.compile(r"\b(fax|f)\b\.?\s*:?", re.IGNORECASE), "fax"),
    (re.compile(r"\b(tel|phone|office|work|t|p)\b\.?\s*:?", re.IGNORECASE), "work"),
)


def _phones(rows: list[str]) -> list[dict[str, str]]:
    phones = []
    for row in rows:
        if _EMAIL.search(row):
            continue
        # Account numbers and dates are digit runs too.
        row = _DATE.sub(" ", _IBAN.sub(" ", row.upper()))
        for match in _PHONE.finditer(row):
            number = re.sub(r"\s+", " ", match.group()).strip()
            if len(re.sub(r"\D", "", number)) < 7:
                continue
            before = row[: match.start()]
            kind = next((k for label, k in _PHONE_LABELS if label.search(before)), "work")
            phones.append({"number": number, "type": kind})
    return phones


def _identifiers(read: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    text = read["text"]
    rows = text.split("\n")
    emails = list(dict.fromkeys(_EMAIL.findall(text)))
    without_emails = _EMAIL.sub(" ", text)
    return {
        "text": text,
        "ibans": _ibans(text),
        "vat_ids": _vat_ids(text),
        "references": _references(text),
        "emails": emails,
        "urls": list(dict.fromkeys(_URL.findall(without_emails))),
        "phones": list(dict.fromkeys(phone["number"] for phone in _phones(rows))),
        "dates": [found["iso"] for found in _dates(text)],
        "confidence": read["confidence"],
    }


_TITLE_WORDS = re.compile(
    r"\b(ceo|cto|cfo|coo|founder|co-founder|owner|president|vp|vice|director|manager|head|lead|"
    r"engineer|developer|designer|consultant|architect|analyst|specialist|officer|partner|"
    r"coordinator|assistant|executive|advisor|attorney|lawyer|doctor|dr|sales|marketing|"
    r"accountant|agent|representative|chief|principal|associate|scientist|editor|photographer)\b",
    re.IGNORECASE,
)
_COMPANY_WORDS = re.compile(
    r"\b(inc|llc|ltd|limited|gmbh|ag|sa|sas|sarl|bv|nv|plc|corp|corporation|co|company|group|"
    r"studio|studios|labs|technologies|solutions|consulting|partners|associates|agency|bank)\b\.?",
    re.IGNORECASE,
)
_STREET = re.compile(
    r"\d.*\b(st|street|ave|avenue|rd|road|blvd|boulevard|lane|ln|way|drive|dr|suite|floor|"
    r"str|strasse|straße|rue|via|plaza|square|sq)\b|\b\d{4,5}\s+[A-Z][a-z]+|[A-Z]{1,2}\d[A-Z\d]?"
    r"\s*\d[A-Z]{2}\b",
    re.IGNORECASE,
)
_PERSON = re.compile(r"^[A-Z][a-zA-Z'\-]+\.?(?:\s+[A-Z][a-zA-Z'\-]*\.?){1,3}$")


def _business_card(read: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    rows = _rows(read["lines"])
    texts = [" ".join(line["text"] for line in row) for row in rows]
    heights = [max(_height(line) for line in row) for row in rows]
    emails = list(dict.fromkeys(_EMAIL.findall(read["text"])))
    websites = list(dict.fromkeys(_URL.findall(_EMAIL.sub(" ", read["text"]))))
    phones = _phones(texts)
    contact_rows = {
        i for i, t in enumerate(texts) if _EMAIL.search(t) or _URL.search(t) or _PHONE.search(t)
    }
    people = [
        i
        for i, t in enumerate(texts)
        if i not in contact_rows
        and _PERSON.match(t)
        and not _TITLE_WORDS.search(t)
        and not _COMPANY_WORDS.search(t)
    ]
    # The name is usually the biggest type on the card.
    name_row = max(people, key=lambda i: (heights[i], -i)) if people else None
    name = texts[name_row] if name_row is not None else None
    title = next(
        (t for i, t in enumerate(texts) if i != name_row and i not in contact_rows
         and _TITLE_WORDS.search(t)),
        None,
    )  # fmt: skip
    company = next(
        (t for i, t in enumerate(texts) if i not in contact_rows and _COMPANY_WORDS.search(t)),
        None,
    )
    if company is None and emails:
        domain = emails[0].split("@", 1)[1].split(".")[0]
        if domain.lower() not in {"gmail", "yahoo", "outlook", "hotmail", "icloud", "proton"}:
            company = domain.capitalize()
    address = next(
        (
            t
            for i, t in enumerate(texts)
            if i not in contact_rows and i != name_row and _STREET.search(t)
        ),
        None,
    )
    contact = {
        "name": name,
        "title": title,
        "company": company,
        "emails": emails,
        "phones": phones,
        "websites": websites,
        "address": address,
    }
    return {**contact, "vcard": _vcard(contact), "text": read["text"]}


def _vcard(contact: dict[str, Any]) -> str:
    """A vCard 3.0 of the contact (lines end with CRLF, as the format says)."""

    def escape(value: str) -> str:
        return re.sub(r"([,;\\])", r"\\\1", value)

    lines = ["BEGIN:VCARD", "VERSION:3.0"]
    name = contact["name"] or contact["company"] or "Unknown"
    parts = name.split()
    family, given = (parts[-1], " ".join(parts[:-1])) if len(parts) > 1 else (name, "")
    lines += [f"N:{escape(family)};{escape(given)};;;", f"FN:{escape(name)}"]
    if contact["company"]:
        lines.append(f"ORG:{escape(contact['company'])}")
    if contact["title"]:
        lines.append(f"TITLE:{escape(contact['title'])}")
    lines += [f"TEL;TYPE={p['type']}:{p['number']}" for p in contact["phones"]]
    lines += [f"EMAIL;TYPE=internet:{email}" for email in contact["emails"]]
    lines += [f"URL:{url}" for url in contact["websites"]]
    if contact["address"]:
        lines.append(f"ADR;TYPE=work:;;{escape(contact['address'])};;;;")
    lines.append("END:VCARD")
    return "\r\n".join(lines) + "\r\n"


def _char_width(lines: list[dict[str, Any]]) -> float:
    """The typical width of one character, from the widest lines (monospace code)."""
    widths = [
        (_right(line) - _left(line)) / len(line["text"]) for line in lines if len(line["text"]) >= 3
    ]
    if not widths:
        widths = [(_right(line) - _left(line)) / max(len(line["text"]), 1) for line in lines]
    return max(statistics.median(widths), 1.0)


def _code(read: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """Lines with their indentation rebuilt from the left edge of each row's box."""
    lines = read["lines"]
    if not lines:
        return {"code": "", "line_count": 0, "indent_unit": 0, "confidence": 0.0}
    char = _char_width(lines)
    margin = min(_left(line) for line in lines)
    unit = inputs.get("indent_size", 4)
    out = []
    for row in _rows(lines):
        columns = round((_left(row[0]) - margin) / char)
        indent = round(columns / unit) * unit if unit > 1 else columns
        text = row[0]["text"]
        for previous, line in zip(row, row[1:], strict=False):
            gap = max(1, round((_left(line) - _right(previous)) / char))
            text += " " * gap + line["text"]
        out.append(" " * indent + text)
    return {
        "code": "\n".join(out),
        "line_count": len(out),
        "indent_unit": unit,
        "confidence": read["confidence"],
    }


def _table(read: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """Rows from the lines' vertical centres; columns where boxes overlap across rows."""
    rows = _rows(read["lines"])
    spans = sorted((_left(line), _right(line)) for line in read["lines"])
    columns: list[list[float]] = []
    for left, right in spans:
        if columns and left <= columns[-1][1]:
            columns[-1][1] = max(columns[-1][1], right)
        else:
            columns.append([left, right])
    grid = []
    for row in rows:
        cells = [""] * len(columns)
        for line in row:
            index = next(i for i, (a, b) in enumerate(columns) if a <= _left(line) <= b)
            cells[index] = f"{cells[index]} {line['text']}".strip()
        grid.append(cells)
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(grid)
    return {
        "csv": buffer.getvalue(),
        "rows": grid,
        "row_count": len(grid),
        "column_count": len(columns),
        "confidence": read["confidence"],
    }


_SHAPERS: dict[str, Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]] = {
    "layout": _layout,
    "receipt": _receipt,
    "invoice": _invoice,
    "business_card": _business_card,
    "code": _code,
    "table": _table,
    "identifiers": _identifiers,
}


ENGINES = (OcrEngine(),)
