"""What the embedded text model's answer must pass before a tool returns it (``llm.accept``).

A small model (the embedded SmolLM2) writes fluent text that can be wrong in ways a schema
does not see: it loops, repeating a sentence until it runs out of tokens; it hands the input
back instead of transforming it; it counts more mentions than the input has lines; it
"quotes" words nobody wrote. So beyond the tool's output schema (``llm.shape``):

- its answer is checked for a **loop** (``looping``): a span of words repeated back to back
  ``LOOP_REPEATS`` times, covering at least ``LOOP_WORDS`` words (twice is enough at the end
  of an answer that hit its token limit). A song's chorus or a description block that lists
  the chapters again is repeated, but not back to back three times over;
- a tool declares its own checks in its params (``checks``, ``CHECKS_SCHEMA``), each naming
  an input field and the output paths it applies to (``themes/*/count``: ``*`` is every item
  of an array):

  ``changes``
      each string at the paths must not be the input handed back (nearly) unchanged;
  ``keeps``
      each string at the paths must keep the input's lines (code a docstring is added to);
  ``at_most_lines``
      each number at the paths is at most the input's count of non-blank lines (a count of
      responses cannot exceed the responses given);
  ``quotes``
      each non-empty string at the paths is taken from the input (its words, in order:
      trimmed filler and ellipses allowed);
  ``links``
      each string at the paths holds no web address the input does not hold (a small
      model explaining code cites made-up project pages and documentation);
  ``tests``
      for Python code given (the input parses and defines functions or classes): each
      string at the paths holds Python code that parses, defines a test (``test_*`` or a
      ``Test*`` class) and calls one of the given functions or classes without defining its
      own of the same name (a small model "tests" a stand-in it wrote);
  ``facts``
      each string at the paths names no fact that none of the run's inputs holds
      (``invented_facts``): a number (digits or number words: "two" and "2" are the same
      fact), or a name: a place, person, organisation, day or month, which English
      capitalizes where a common word would not be (mid-sentence), and an acronym. A small
      model asked to rewrite "a bakery in Leeds ships nationwide" wrote "a bakery in London
      ... throughout Europe": fluent, and false. What it cannot see: a name at the start of a
      sentence (capitalized anyway), a name written in lower case, a fact without a number or
      a name ("it won an award"), and the names in a text written in title case, whose every
      word is capitalized (its numbers are still checked). Letters capitalize some common
      words by convention ("Dear Customer", "Kind Regards"): those are no names, nor is a
      placeholder in square brackets ("[Your Name]").

``problems`` answers what an output fails, as short phrases ("themes/0/count is 8, more than
the 5 lines of responses"), which are logged; ``check_declared`` finds checks that name no
input or output (the catalogue tests run it on every tool).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from typing import Any

# A loop: a span of words repeated back to back this many times, covering this many words.
LOOP_REPEATS = 3
LOOP_WORDS = 30
# The longest span looked for (a repeated unit test is some 60 words).
MAX_PERIOD = 200
# ``changes``: an answer whose lines not in the input hold less than this share of its
# characters (and fewer than MIN_CHANGE characters) is the input handed back.
MIN_CHANGE_SHARE = 0.02
MIN_CHANGE = 10
# ``keeps``: the share of the input's non-blank lines the answer must hold.
KEPT_SHARE = 0.8
# ``quotes``: the share of a quote's word trigrams that must be trigrams of the input.
QUOTED_SHARE = 0.7

_WORD_RE = re.compile(r"\w+")
# Where a quote cuts words out: "...", "…", "[...]".
_ELLIPSIS_RE = re.compile(r"\[?(?:\.\.\.|…)\]?")
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_FIELD = {"type": "string", "pattern": f"^{_NAME}$"}
# Field names and * (every item of an array), separated by "/".
_PATH = {"type": "string", "pattern": rf"^(?:{_NAME}|\*)(?:/(?:{_NAME}|\*))*$"}
_CHECK = {
    "type": "object",
    "additionalProperties": False,
    "required": ["input", "output"],
    "properties": {
        "input": _FIELD,
        "output": {"type": "array", "minItems": 1, "uniqueItems": True, "items": _PATH},
    },
}
# What each check reads at its output paths.
KINDS = {
    "changes": "string",
    "keeps": "string",
    "at_most_lines": "integer",
    "quotes": "string",
    "links": "string",
    "tests": "string",
    "facts": "string",
}
# ``links``: a web address, up to the space, quote or bracket that ends it.
_LINK_RE = re.compile(r"(?:https?://|www\.)[^\s<>()\[\]{}\"'`]+", re.IGNORECASE)
CHECKS_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "properties": {kind: _CHECK for kind in KINDS},
}


# --- loops -------------------------------------------------------------------------------


def words(text: str) -> list[str]:
    """The words of ``text``, lowercased (punctuation and spacing do not tell two apart)."""
    return _WORD_RE.findall(text.lower())


def repeated_span(tokens: list[str], repeats: int, least: int, *, at_end: bool = False) -> bool:
    """Whether some span of ``tokens`` is repeated back to back ``repeats`` times, the run
    covering at least ``least`` tokens (``at_end``: a run that ends the list)."""
    count = len(tokens)
    for period in range(1, min(MAX_PERIOD, count // repeats) + 1):
        # A run of ``matched`` tokens equal to the token ``period`` later is periodic over
        # matched + period tokens: ``repeats`` copies when matched >= (repeats - 1) * period.
        needed = max((repeats - 1) * period, least - period)
        if at_end:
            matched = 0
            index = count - period - 1
            while index >= 0 and tokens[index] == tokens[index + period]:
                matched += 1
                index -= 1
            if matched >= needed:
                return True
            continue
        matched = 0
        for index in range(count - period):
            if tokens[index] == tokens[index + period]:
                matched += 1
                if matched >= needed:
                    return True
            else:
                matched = 0
    return False


def looping(text: str, *, truncated: bool = False) -> bool:
    """Whether ``text`` loops (see the module docstring); ``truncated``: it hit its token
    limit, where a span said twice at the very end is a loop cut short."""
    tokens = words(text)
    if repeated_span(tokens, LOOP_REPEATS, LOOP_WORDS):
        return True
    return truncated and repeated_span(tokens, 2, LOOP_WORDS, at_end=True)


def ends_in_loop(text: str) -> bool:
    """Whether ``text`` ends in a loop: what a model generating it is stopped for."""
    return repeated_span(words(text), LOOP_REPEATS, LOOP_WORDS, at_end=True)


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, in order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


# --- the tool's own checks ---------------------------------------------------------------


def values_at(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Each (pointer, value) that ``path`` names in ``value``: ``a/*/b`` is ``b`` of every
    item of the array ``a``. A path that leads nowhere names nothing."""
    found: list[tuple[str, Any]] = [("", value)]
    for step in path.split("/"):
        following = []
        for pointer, item in found:
            if step == "*" and isinstance(item, list):
                following += [(f"{pointer}/{index}", part) for index, part in enumerate(item)]
            elif step != "*" and isinstance(item, Mapping) and step in item:
                following.append((f"{pointer}/{step}", item[step]))
        found = following
    return ((pointer.lstrip("/"), item) for pointer, item in found)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _unchanged(answer: str, given: str) -> bool:
    known = set(_lines(given))
    added = sum(len(line) for line in _lines(answer) if line not in known)
    return added < max(MIN_CHANGE, MIN_CHANGE_SHARE * len(answer.strip()))


def _kept(answer: str, given: str) -> bool:
    lines = _lines(given)
    present = set(_lines(answer))
    return not lines or sum(line in present for line in lines) >= KEPT_SHARE * len(lines)


def _trigrams(tokens: list[str]) -> set[tuple[str, ...]]:
    return {tuple(tokens[index : index + 3]) for index in range(len(tokens) - 2)}


def _quoted(quote: str, source: list[str]) -> bool:
    """Whether each part of ``quote`` between ellipses is in ``source`` (its words)."""
    return all(_said(words(part), source) for part in _ELLIPSIS_RE.split(quote))


def _said(said: list[str], source: list[str]) -> bool:
    if len(said) < 3:
        return set(said) <= set(source)
    found = _trigrams(source)
    grams = [tuple(said[index : index + 3]) for index in range(len(said) - 2)]
    return sum(gram in found for gram in grams) >= QUOTED_SHARE * len(grams)


def problems(
    output: Mapping[str, Any], inputs: Mapping[str, Any], checks: Mapping[str, Any]
) -> list[str]:
    """What ``output`` fails of the tool's ``checks`` (see the module docstring); [] when
    it passes."""
    found: list[str] = []
    for kind, check in checks.items():
        given = inputs.get(check["input"])
        if not isinstance(given, str) or not given.strip():
            continue
        field = check["input"]
        source = words(given) if kind == "quotes" else []
        held = _held_facts(inputs) if kind == "facts" else None
        limit = len(_lines(given))
        for path in check["output"]:
            for pointer, value in values_at(output, path):
                if kind == "at_most_lines":
                    if isinstance(value, int) and value > limit:
                        found.append(
                            f"{pointer} is {value}, more than the {limit} lines of {field}"
                        )
                    continue
                if not isinstance(value, str) or not value.strip():
                    continue
                if kind == "changes" and _unchanged(value, given):
                    found.append(f"{pointer} hands {field} back unchanged")
                elif kind == "keeps" and not _kept(value, given):
                    found.append(f"{pointer} does not keep the lines of {field}")
                elif kind == "quotes" and not _quoted(value, source):
                    found.append(f"{pointer} is not a quote from {field}")
                elif kind == "links" and (made_up := _new_links(value, given)):
                    found.append(f"{pointer} links to {made_up[0]}, which {field} does not hold")
                elif kind == "tests" and (fault := _tests_fault(value, given)):
                    found.append(f"{pointer} {fault} of {field}")
                elif kind == "facts" and (invented := invented_facts(value, held)):
                    found.append(f"{pointer} names {invented[0]!r}, which no input holds")
    return found


def _new_links(answer: str, given: str) -> list[str]:
    """The web addresses of ``answer`` that ``given`` does not hold (trailing punctuation
    aside)."""
    held = {link.rstrip(".,;:!?").lower() for link in _LINK_RE.findall(given)}
    found = (link.rstrip(".,;:!?") for link in _LINK_RE.findall(answer))
    return [link for link in found if link.lower() not in held]


# --- facts: numbers and names ----------------------------------------------------------

_UNITS = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen",
)  # fmt: skip
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_NUMBER_WORDS = {word: value for value, word in enumerate(_UNITS)} | {
    word: 20 + 10 * index for index, word in enumerate(_TENS)
}
_SCALES = {"hundred": 100, "thousand": 1_000, "million": 10**6, "billion": 10**9}
# Ordinal words, read in the inputs only ("the fifth day" holds 5, which "the 5th" states):
# in an answer "first" and "second" are too often no count ("at first", "a second look").
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
    "fourteenth": 14, "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18,
    "nineteenth": 19, "twentieth": 20, "thirtieth": 30,
}  # fmt: skip
# "One" alone is a pronoun far more often than a count ("one of our bakers", "the new one"):
# it is read as a number only as part of a larger one ("one hundred").
# Digits (with thousands separators and decimals, an ordinal's ending allowed), or a word.
# A time of day ("4:30"): one fact, its hour alone when on the hour ("4:00" is "4am").
_TIME_RE = re.compile(r"(?<![\w.:])(\d{1,2}):(\d{2})(?![\d:])")
# Digits (thousands separators and decimals allowed), a unit or an ordinal's ending after
# them ("4am", "10kg", "2nd") being no part of the number.
_NUMBER_RE = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?")
_TOKEN_RE = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
# A list item's number at the start of a line ("1. ", "2) "): layout, not a fact.
_LIST_NUMBER_RE = re.compile(r"^[ \t]*\d+[.)][ \t]", re.MULTILINE)
_PLACEHOLDER_RE = re.compile(r"\[[^\]\n]*\]")
# What ends a sentence or a line (the next word is capitalized anyway), and what may stand
# between it and that word (spaces, an opening quote or bracket, a bullet).
_SENTENCE_ENDS = ".!?:;…\n*"  # "*": the end of a bold label ("**Next step** Call them")
_OPENINGS = " \t\"'“‘([#>•–—-"
# Common words that letters, replies and signatures capitalize by convention: greetings,
# sign-offs and the addressee's or sender's role ("Dear Customer", "Kind Regards, The Team").
_LETTER_WORDS = frozenset({
    "dear", "hi", "hello", "hey", "greetings", "regards", "best", "kind", "warm", "warmest",
    "kindest", "sincerely", "faithfully", "truly", "yours", "thanks", "thank", "cheers",
    "wishes", "customer", "customers", "guest", "guests", "team", "manager", "owner",
    "support", "service", "sir", "madam", "mr", "mrs", "ms", "dr", "the", "our", "your",
    "ps", "ok",
})  # fmt: skip
# The short names of days and months, as people write them ("sat", "Sept"): the same facts
# as the full names.
_CALENDAR = {
    name[:3]: name
    for name in (
        "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
        "january", "february", "march", "april", "june", "july", "august", "september",
        "october", "november", "december",
    )
} | {"tues": "tuesday", "thurs": "thursday", "sept": "september"}  # fmt: skip
# The pronoun and its contractions.
_PRONOUN_I = frozenset({"i", "i'm", "i've", "i'll", "i'd", "i’m", "i’ve", "i’ll", "i’d"})
# A text is in title case when this share of its longer words is capitalized.
_TITLE_CASE_SHARE = 0.6


def invented_facts(answer: str, held: tuple[set[str], set[str]]) -> list[str]:
    """The numbers, then the names, of ``answer`` that ``held`` (``_held_facts`` of the
    inputs) does not hold (see ``facts`` in the module docstring). A placeholder in square
    brackets ("[number]%") states nothing."""
    numbers, names = held
    answer = _PLACEHOLDER_RE.sub(" ", answer)
    invented = [text for text, value in _numbers(answer) if value not in numbers]
    invented += [name for name in _names(answer) if _name_key(name) not in names]
    return invented


def _held_facts(inputs: Mapping[str, Any]) -> tuple[set[str], set[str]]:
    """Every number and every word (each a possible name) of the run's text inputs."""
    numbers: set[str] = set()
    names: set[str] = set()
    for text in strings(dict(inputs)):
        numbers.update(value for _, value in _numbers(text, given=True))
        for token in _TOKEN_RE.findall(text):
            names.add(_name_key(token))
            names.update(_name_key(part) for part in re.split(r"[-–]", token) if part)
    names.update(_CALENDAR[name] for name in names & _CALENDAR.keys())
    return numbers, names


def _name_key(name: str) -> str:
    """A name as compared: lower case, without a possessive ending."""
    key = name.lower().replace("’", "'")
    return key[:-2] if key.endswith("'s") else key.rstrip("'")


def _numbers(text: str, *, given: bool = False) -> Iterator[tuple[str, str]]:
    """Each number of ``text`` as (how it is written, its value as a canonical string): digits,
    times of day, and runs of number words ("twenty-five", "two hundred"). ``given``: ``text``
    is an input, where "one" alone and ordinal words count as well."""
    words = _NUMBER_WORDS | _ORDINALS if given else _NUMBER_WORDS
    text = _LIST_NUMBER_RE.sub(" ", text)
    for match in _TIME_RE.finditer(text):
        hour, minutes = int(match[1]), match[2]
        yield match[0], str(hour) if minutes == "00" else f"{hour}:{minutes}"
    text = _TIME_RE.sub(" ", text)
    for match in _NUMBER_RE.finditer(text):
        whole = match[1].replace(",", "")
        fraction = (match[2] or "").rstrip("0")
        yield match[0], f"{int(whole)}.{fraction}" if fraction else str(int(whole))
    run: list[str] = []
    for token in [*_TOKEN_RE.findall(text.lower()), ""]:
        parts = [part for part in token.split("-") if part]
        if parts and all(part in words or part in _SCALES for part in parts):
            run += parts
            continue
        if token == "and" and run:  # "two hundred and fifty"
            continue
        if run and (given or run != ["one"]):
            yield " ".join(run), str(_value(run, words))
        run = []


def _value(run: list[str], words: Mapping[str, int]) -> int:
    total = current = 0
    for word in run:
        if word in words:
            current += words[word]
        elif word == "hundred":
            current = (current or 1) * 100
        else:
            total += (current or 1) * _SCALES[word]
            current = 0
    return total + current


def _names(text: str) -> Iterator[str]:
    """The words of ``text`` that English capitalizes as names: capitalized mid-sentence, or
    an acronym; none in a text in title case but its acronyms."""
    text = _PLACEHOLDER_RE.sub(" ", text)
    matches = list(_TOKEN_RE.finditer(text))
    longer = [match[0] for match in matches if len(match[0]) > 3]
    title_case = bool(longer) and (
        sum(word[0].isupper() for word in longer) >= _TITLE_CASE_SHARE * len(longer)
    )
    for match in matches:
        for index, part in enumerate(re.split(r"[-–]", match[0])):
            if not part or not part[0].isupper() or part.lower() in _PRONOUN_I:
                continue
            if _name_key(part) in _LETTER_WORDS:
                continue
            if len(part) > 1 and part.isupper():  # an acronym: a name wherever it stands
                if not text.isupper():
                    yield part
                continue
            if title_case or (index == 0 and _starts_sentence(text, match.start())):
                continue
            yield part


def _starts_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip(_OPENINGS)
    return not before or before[-1] in _SENTENCE_ENDS


# A fenced code block of an answer: its body.
_FENCE_RE = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)


def _python(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _tests_fault(answer: str, given: str) -> str | None:
    """What is wrong with ``answer`` as tests of the Python code ``given`` (see ``tests`` in
    the module docstring); None when it passes or ``given`` is not Python that defines
    something to test."""
    source = _python(given)
    if source is None:
        return None
    tested = {
        node.name
        for node in source.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    if not tested:
        return None
    blocks = _FENCE_RE.findall(answer) or [answer]
    trees = [tree for tree in map(_python, blocks) if tree is not None]
    if not trees:
        return "holds no Python code that parses, for the tests"
    defined = {
        node.name
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    if not any(name.startswith(("test", "Test")) for name in defined):
        return "defines no test"
    if redefined := sorted(defined & tested):
        return f"defines its own {redefined[0]} instead of testing the one"
    called = {
        node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
    }
    if not called & tested:
        return "calls none of the functions"
    return None


def _schema_at(schema: Mapping[str, Any], path: str) -> Mapping[str, Any] | None:
    for step in path.split("/"):
        schema = schema.get("items") if step == "*" else schema.get("properties", {}).get(step)
        if not isinstance(schema, Mapping):
            return None
    return schema


def _types(schema: Mapping[str, Any]) -> set[str]:
    declared = schema.get("type")
    return set(declared) if isinstance(declared, list) else {declared}


def check_declared(
    checks: Mapping[str, Any], inputs: Mapping[str, Any], output: Mapping[str, Any]
) -> list[str]:
    """Problems of a tool's ``checks``: an input that is not a text field of the tool, an
    output path that names nothing of its output schema or a value of another type."""
    found = []
    fields = inputs.get("properties", {})
    for kind, check in checks.items():
        field = fields.get(check["input"])
        if not isinstance(field, Mapping) or "string" not in _types(field):
            found.append(f"checks.{kind}: {check['input']} is not a text input of the tool.")
        for path in check["output"]:
            target = _schema_at(output, path)
            if target is None:
                found.append(f"checks.{kind}: {path} is not in the output schema.")
            elif KINDS[kind] not in _types(target):
                found.append(f"checks.{kind}: {path} is not of type {KINDS[kind]}.")
    return found
