"""``text.sentiment``: positive, negative or neutral, for the text and each sentence (VADER).

VADER rates words and short phrases well, but summed over a whole text a concession can
outvote the verdict ("Great graphics, but the game crashes every twenty minutes"), and its
negation reaches only three words back. So each sentence is cut into clauses at contrast
markers and each clause rated by VADER; the clauses are weighed as a reader weighs them
(what follows "but", "however", "yet" or "nevertheless" more than what precedes it, the main
clause more than the "although" or "despite" one) and summed as VADER sums word scores, then
normalized as VADER normalizes, per sentence and for the whole text. Across sentences, one
opening on a contrast marker ("However, ...") outweighs those before it, and the last
sentence, where a review states its verdict, counts more.

"Yet", "still" and "though" weigh what follows them as "but" does where they join two
clauses, after a comma ("slow, yet the quality ..."), not in "not yet", "still waiting" or
"even though"; a fronted "Though X, Y" concedes, and a sentence that closes on "though" ("The
room was tiny though.") answers the ones before it as one opening on "However" does. Words
of regret that open a clause ("shame", "what a pity", "too bad", "sadly", "unfortunately")
mark a contrast too: "Great packaging, shame the product was broken" stresses the regretted
clause as "but" would, and the word, itself a judgement, stays in that clause.

Four general changes to VADER itself. Negation reaches to the end of its clause (the next
punctuation mark or conjunction, the usual scope rule; "so" ends it as a conjunction but not
as the degree word of "isn't so good", and "at all" closes it after the negated word, as in
"not bad at all for a free app"). A negation that denies a higher degree intensifies instead
of negating, as VADER's "never so good" does: a negated "can" or "could" before a
comparative ("could not be happier", "couldn't ask for a better tutor") or with "enough"
("can't recommend it enough"), and "won't", "wouldn't" or "never" before a comparative
("you won't find a friendlier team", "has never been better") unless a verb of change makes
it a change ("won't get better", "never got better"). A comparative is a lexicon word whose
other degree the lexicon also holds ("happier", "happiest"), an irregular one ("better",
"worst"), or one made with "more" or "most"; "is not better" and "no better than" stay
negations. The regular inflections of the lexicon's words ("crash": "crashes", "crashed")
carry their word's score when the lexicon has no entry of their own. And a few common idioms
of strong praise or blame without a lexicon word ("blew me away", "a piece of cake", "a
rip-off") read as the lexicon word they mean, as VADER's lexicon rates single words only.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engines import _text
from engines.base import Engine, load_once

# VADER's own weights around "but" (its _but_check): the part before counts half, the part
# after half again. Also the weights of a conceding clause and of its main clause.
CONCEDED, STRESSED = 0.5, 1.5
# The last of several sentences, where reviews and tickets state their verdict.
LAST_SENTENCE = 1.5
# VADER's normalization constant (vaderSentiment.normalize's alpha).
_ALPHA = 15.0

# Markers that put the weight on what follows them: "but", "however", "nevertheless",
# "nonetheless", "even so", "that said"; "yet" and "still" only at a clause's start (after a
# comma, semicolon, dash or "and", or opening the sentence), not in "not yet", "still
# waiting"; "though" only after a comma, semicolon or dash and before the clause it opens
# (a fronted "Though X, Y" concedes). "but also" adds, and "nothing/anything/all but" is no
# contrast. Words of regret at a clause's start ("shame", "what a pity", "too bad", "sadly",
# "unfortunately") match empty, before the word: they stay in the clause they stress, whose
# feeling they state.
_CLAUSE_START = r"(?:(?<=^)|(?<=[,;:–—] )|(?<=\band ))"
_SHIFT = re.compile(
    r"(?<![\w'’-])(?:(?<!nothing )(?<!anything )(?<!all )but(?! also\b)|however"
    r"|nevertheless|nonetheless|even so|that said|having said that"
    rf"|{_CLAUSE_START}(?:yet|still)(?=[ ,])|(?<=[,;:–—] )though(?= \w))(?![\w'’-])"
    rf"|{_CLAUSE_START}(?=(?:(?:it['’]s |it is |what |such )?a )?(?:shame|pity)\b"
    r"|too bad\b|sadly\b|unfortunately\b|regrettably\b|disappointingly\b)",
    re.IGNORECASE,
)
# "though" closing a sentence, where it means "however": "The room was tiny though."
_CLOSING_THOUGH = re.compile(r"[\s,]though\W*$", re.IGNORECASE)
# Markers that open a conceding clause, which counts less than the main clause. A fronted
# one ("Although X, Y") runs to the first comma; one after the main clause ("Y, although
# X") to the end of the sentence. "While" concedes only opening the sentence, and one that
# closes it ("Friendly staff, though.") concedes nothing.
_CONCEDE = re.compile(
    r"(?<![\w'’-])(?:even though|although|though|despite|in spite of|whereas|(?<=^)while)"
    r"(?![\w'’-])(?!\W*$)",
    re.IGNORECASE,
)
_EDGES = " ,;:–—-"
# Words that end a negation's scope, as a punctuation mark does: "isn't comfortable and my
# wrist hurts" negates "comfortable" only. "So" ends it as a conjunction ("wasn't there, so I
# left"), not as a degree word before a word VADER rates ("isn't so good").
_SCOPE_PUNCTUATION = ",;:.!?)–—"
_SCOPE_ENDS = frozenset({
    "and", "or", "but", "because", "since", "when", "while", "who", "which", "that", "so",
    "until", "after", "before", "if",
})  # fmt: skip

# A negation that denies a higher degree intensifies instead, by VADER's weight for "never so
# good" (its _negation_check). Negated "can" denies that more is possible, with a comparative
# or with "enough"; negated "will" and "never" deny it with a comparative only ("won't be fast
# enough" is a complaint), and not across a verb of change ("won't get better").
DENIED_DEGREE = 1.25
_CAN = frozenset({"can't", "cannot", "couldn't", "cant", "couldnt"})
_WILL = frozenset({"won't", "wouldn't", "wont", "wouldnt", "never"})
_CHANGE = frozenset({
    "get", "gets", "got", "gotten", "getting", "become", "becomes", "became", "becoming",
    "grow", "grows", "grew", "grown", "growing", "turn", "turns", "turned", "turning",
})  # fmt: skip
_IRREGULAR_DEGREES = frozenset({"better", "best", "worse", "worst"})

# Idioms of strong praise or blame without a lexicon word, each read as the lexicon word it
# means, so that boosters and negations apply to it as to that word ("a total rip-off", "did
# not blow me away"): VADER rates single words only, and its own idiom list is unused.
_IDIOMS = {
    r"bl(?:ew|own|ows?) (?:(?:me|us|them|everyone) )?away": "amazing",
    r"rip-?offs?": "swindle",
    r"piece of cake": "easy",
    r"down the drain": "wasted",
    r"f[ae]ll(?:s|ing)? apart": "broken",
    r"(?:went|goes|gone|going) downhill": "worse",
    r"let (?:me|us|them|you) down": "disappointed",
    r"over the moon": "delighted",
    r"second to none": "excellent",
    r"top[- ]notch": "excellent",
}
_IDIOM_WORDS = [
    (re.compile(rf"(?<![\w'’-]){idiom}(?![\w'’-])", re.IGNORECASE), word)
    for idiom, word in _IDIOMS.items()
]


@dataclass
class Clause:
    text: str
    weight: float
    valence: float  # VADER's sum of word scores for the clause, before normalization


@load_once
def _vader() -> Any:
    from vaderSentiment import vaderSentiment as vader

    class Analyzer(vader.SentimentIntensityAnalyzer):
        # SentiText's words are its text split on spaces, less their punctuation: the split
        # text keeps the punctuation at the same indices. Per thread, as runs share the
        # analyser.
        split = threading.local()

        def polarity_scores(self, text):
            for idiom, word in _IDIOM_WORDS:
                text = idiom.sub(word, text)
            return super().polarity_scores(text)

        def sentiment_valence(self, valence, sentitext, item, i, sentiments):
            tokens = self.split.tokens = sentitext.text.split()
            self.split.degree = item.lower() in self.lexicon and _denied_degree(
                tokens, i, vader.negated, self.lexicon
            )
            sentiments = super().sentiment_valence(valence, sentitext, item, i, sentiments)
            if sentiments[-1] and self.split.degree:
                sentiments[-1] *= DENIED_DEGREE
            elif sentiments[-1] and _negated_before_window(tokens, i, vader.negated, self.lexicon):
                sentiments[-1] *= vader.N_SCALAR
            return sentiments

        def _negation_check(self, valence, words_and_emoticons, start_i, i):
            # VADER's own check, within three words, but not across a punctuation mark or a
            # conjunction ("Never again, a terrible evening" does not negate "terrible"), nor
            # where the negation denies a higher degree.
            tokens = self.split.tokens
            if self.split.degree or any(
                _ends_scope(tokens, j, self.lexicon) for j in range(i - start_i - 1, i)
            ):
                return valence
            return super()._negation_check(valence, words_and_emoticons, start_i, i)

    analyzer = Analyzer()
    _add_inflections(analyzer.lexicon)
    return analyzer


def _bare(token: str) -> str:
    return token.strip(".,;:!?\"'()").lower()


def _negated_before_window(
    tokens: list[str], i: int, negated: Callable[..., bool], lexicon: dict[str, float]
) -> bool:
    """Whether a negation further back than the three words VADER checks, in the same clause,
    scopes over the word at ``i``."""
    for j in range(i - 1, -1, -1):
        if _ends_scope(tokens, j, lexicon):
            return False
        if j < i - 3 and negated([_bare(tokens[j])]):
            return True
    return False


def _ends_scope(tokens: list[str], j: int, lexicon: dict[str, float]) -> bool:
    """Whether a negation's scope ends at ``tokens[j]``: a conjunction or relative word, or a
    word a punctuation mark ends (after "never," nothing is negated)."""
    token = tokens[j]
    if token[-1] in _SCOPE_PUNCTUATION:
        return True
    word = token.lower()
    if word == "so":
        return j + 1 == len(tokens) or _bare(tokens[j + 1]) not in lexicon
    if word == "all" and j > 1 and tokens[j - 1].lower() == "at":
        # "At all" after a rated word closes its negated phrase ("not bad at all for a free
        # app"); right after the negation it is part of it ("not at all helpful").
        return _bare(tokens[j - 2]) in lexicon
    return word in _SCOPE_ENDS


def _denied_degree(
    tokens: list[str], i: int, negated: Callable[..., bool], lexicon: dict[str, float]
) -> bool:
    """Whether the nearest negation before the word at ``i``, in its clause, denies a higher
    degree of it ("could not be happier", "can't recommend it enough") rather than negating
    it."""
    word = _bare(tokens[i])
    comparative = (
        word in _IRREGULAR_DEGREES
        or _other_degree(word) in lexicon
        or (i > 0 and _bare(tokens[i - 1]) in ("more", "most"))
    )
    between: list[str] = []  # the words between the negation and ``i``, nearest first
    for j in range(i - 1, -1, -1):
        if _ends_scope(tokens, j, lexicon):
            return False
        negation = _bare(tokens[j])
        if negated([negation]):
            break
        between.append(negation)
    else:
        return False
    before, after = _bare(tokens[j - 1]) if j else "", between[-1] if between else ""
    if (
        negation in _CAN
        or (negation in ("not", "never") and before in ("can", "could"))
        or (negation == "nothing" and after in ("can", "could"))
    ):
        # "Enough" denies more of the first rated word only: "I can't thank the fraud team
        # enough" intensifies "thank", not "fraud".
        return comparative or (not lexicon.keys() & between and _enough(tokens, j, lexicon))
    if negation in _WILL or (negation == "not" and before in ("will", "would")):
        return comparative and not _CHANGE.intersection(between)
    return False


def _enough(tokens: list[str], j: int, lexicon: dict[str, float]) -> bool:
    """Whether "enough" follows ``tokens[j]`` in its clause."""
    for k in range(j + 1, len(tokens)):
        if _bare(tokens[k]) == "enough":
            return True
        if _ends_scope(tokens, k, lexicon):
            return False
    return False


def _other_degree(word: str) -> str | None:
    """The superlative of a comparative ("happier": "happiest") and the other way round."""
    if word.endswith("er"):
        return word[:-2] + "est"
    if word.endswith("est"):
        return word[:-3] + "er"
    return None


def _add_inflections(lexicon: dict[str, float]) -> None:
    """Give the regular -s and -ed forms of each lexicon word its score where VADER has none."""
    for word, valence in list(lexicon.items()):
        if not word.isalpha() or len(word) < 4:
            continue
        if word.endswith("e"):
            forms = (word + "s", word + "d")
        elif word.endswith("y") and word[-2] not in "aeiou":
            forms = (word[:-1] + "ies", word[:-1] + "ied")
        elif word.endswith(("s", "x", "z", "ch", "sh")):
            forms = (word + "es", word + "ed")
        else:
            forms = (word + "s", word + "ed")
        for form in forms:
            lexicon.setdefault(form, valence)


def _sentiment_label(compound: float) -> str:
    # The thresholds VADER's authors recommend.
    if compound >= 0.05:
        return "positive"
    if compound <= -0.05:
        return "negative"
    return "neutral"


def _normalize(valence: float) -> float:
    return round(valence / math.sqrt(valence * valence + _ALPHA), 4)


def _valence(text: str) -> float:
    """VADER's sum of word scores for ``text``: its compound score, un-normalized."""
    compound = max(-0.9999, min(0.9999, _vader().polarity_scores(text)["compound"]))
    return compound * math.sqrt(_ALPHA / (1 - compound * compound))


def _split(sentence: str) -> list[tuple[str, float]]:
    """The sentence's clauses and their weights, without the contrast markers."""
    pieces = [(sentence, 1.0)]
    # The last marker with words before it wins: "A, but B; however C" weighs C.
    for marker in _SHIFT.finditer(sentence):
        before = sentence[: marker.start()].strip(_EDGES)
        if before:
            pieces = [(before, CONCEDED), (sentence[marker.end() :].strip(_EDGES), STRESSED)]
    if len(pieces) == 1 and (marker := _CONCEDE.search(sentence)):
        pieces = _concession(sentence, marker)
    return [(text, weight) for text, weight in pieces if text]


def _concession(sentence: str, marker: re.Match[str]) -> list[tuple[str, float]]:
    main = sentence[: marker.start()].strip(_EDGES)
    rest = sentence[marker.end() :]
    if main:
        return [(main, STRESSED), (rest.strip(_EDGES), CONCEDED)]
    comma = rest.find(",")
    if comma < 0:  # "Despite the rain we walked": where the concession ends is unknown
        return [(sentence, 1.0)]
    return [(rest[:comma].strip(_EDGES), CONCEDED), (rest[comma + 1 :].strip(_EDGES), STRESSED)]


def _clauses(sentence: str) -> list[Clause]:
    clauses = [Clause(text, weight, _valence(text)) for text, weight in _split(sentence)]
    if len(clauses) == 2:
        # A contrast says the two clauses disagree: a main clause VADER finds no feeling in
        # ("Nice box, but the lid snapped off") takes the opposite of the conceded one's.
        conceded, stressed = sorted(clauses, key=lambda clause: clause.weight)
        if stressed.valence == 0:
            stressed.valence = -conceded.valence
    return clauses


def _weighed(clauses: list[Clause]) -> float:
    return sum(clause.weight * clause.valence for clause in clauses)


def _sentence_weights(sentences: list[str]) -> list[float]:
    weights = [1.0] * len(sentences)
    for index, sentence in enumerate(sentences):
        if index and (_SHIFT.match(sentence) or _CLOSING_THOUGH.search(sentence)):
            weights[:index] = [weight * CONCEDED for weight in weights[:index]]
    if len(weights) > 1:
        weights[-1] *= LAST_SENTENCE
    return weights


# A part counts as clearly felt from this normalized score on (either way): a text holding
# one clearly positive and one clearly negative part is ``mixed``, whatever its label.
CLEAR = 0.3


def _mixed(scores: list[float]) -> bool:
    return any(score >= CLEAR for score in scores) and any(score <= -CLEAR for score in scores)


class SentimentEngine(Engine):
    name = "text.sentiment"
    requires = ("vaderSentiment",)

    def run(self, inputs: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
        text = inputs["text"]
        # Text without words ("👍") is rated whole, as VADER rates emoji.
        sentences = _text.quick_sentences(text) or [text.strip()]
        split = [_clauses(sentence) for sentence in sentences]
        valences = [_weighed(clauses) for clauses in split]
        weights = _sentence_weights(sentences)
        compound = _normalize(sum(w * v for w, v in zip(weights, valences, strict=True)))
        shares = _vader().polarity_scores(text)
        # Each clause's own score, before a contrast gave it its weight (a flat one in a
        # contrast reads as the opposite of its other side).
        parts = [_normalize(clause.valence) for clauses in split for clause in clauses]
        per_sentence = []
        if inputs["by_sentence"]:
            for sentence, valence, clauses in zip(sentences, valences, split, strict=True):
                score = _normalize(valence)
                rated = {"text": sentence, "compound": score, "label": _sentiment_label(score)}
                if len(clauses) > 1:  # the sides of a contrast, each rated
                    rated["clauses"] = [
                        {
                            "text": clause.text,
                            "compound": (part := _normalize(clause.valence)),
                            "label": _sentiment_label(part),
                        }
                        for clause in clauses
                    ]
                per_sentence.append(rated)
        return {
            "label": _sentiment_label(compound),
            "compound": compound,
            "mixed": _mixed(parts),
            "positive": shares["pos"],
            "negative": shares["neg"],
            "neutral": shares["neu"],
            "sentences": per_sentence,
        }
