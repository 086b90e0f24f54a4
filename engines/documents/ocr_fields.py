"""What OCR read on receipts and invoices: amounts, dates, IBANs, VAT ids, references, phones."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

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
