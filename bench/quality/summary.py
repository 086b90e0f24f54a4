"""Extractive summary: does it keep the topic sentence, the key sentences, and open on a
sentence a reader can follow? On 24 documents of 187 to 241 words (``data/summaries.jsonl``:
news, blogs, reports, e-mails, product pages, science, history, how-tos), each with the
sentence that states its subject and the 3 to 5 sentences a good summary keeps.

The product's engine is ``text-summarizer`` (``summarize.extractive``) with its default
algorithm, TextRank, asked for as many sentences as the document has key sentences. Baseline:
sumy's TextRank alone, with the engine's sentence splitter, stemmer and stop words, as the
engine ran it before it learnt to keep the topic sentence and the sentences pronouns lean on.

- topic sentence kept: the share of documents whose summary holds the topic sentence.
- key-sentence recall: the key sentences found in the summaries, over all 111.
- opens on a dangling pronoun: the share of summaries whose first sentence opens with a
  personal or demonstrative pronoun ("It", "They", "This", "These"... "This report" too)
  and is not the document's own first sentence, so the word points at nothing. Lower is
  better.
"""

from __future__ import annotations

import re
from typing import Any

from bench.quality import Figure, run_engine, samples

_PRONOUN_OPENER = re.compile(
    r"^(?:It|Its|They|Them|Their|He|She|Him|His|Her|This|That|These|Those|Such)\b"
)
_BASELINE = "sumy TextRank alone (same splitter, stemmer, stop words)"


def _baseline(text: str, count: int) -> list[str]:
    from sumy.nlp.stemmers import Stemmer
    from sumy.parsers.plaintext import PlaintextParser
    from sumy.summarizers.text_rank import TextRankSummarizer

    from engines import _text
    from engines.text.summary import _Tokenizer

    document = PlaintextParser.from_string(text, _Tokenizer("en")).document
    summarizer = TextRankSummarizer(Stemmer("english"))
    summarizer.stop_words = _text.stop_words("en")
    return [str(sentence) for sentence in summarizer(document, count)]


def _engine(text: str, count: int) -> list[str]:
    return run_engine("text-summarizer", {"text": text, "sentences": count})["sentences"]


def _scores(items: list[dict[str, Any]], summaries: list[list[str]]) -> tuple[float, float, float]:
    from engines import _text

    topic = keys = dangling = 0
    for item, summary in zip(items, summaries, strict=True):
        topic += item["topic_sentence"] in summary
        keys += sum(sentence in summary for sentence in item["key_sentences"])
        first = summary[0]
        stands_alone = (_text.sentences(item["text"])[0], item["topic_sentence"])
        dangling += bool(_PRONOUN_OPENER.match(first)) and first not in stands_alone
    all_keys = sum(len(item["key_sentences"]) for item in items)
    return topic / len(items), keys / all_keys, dangling / len(items)


def measure() -> list[Figure]:
    items = samples("summaries")
    counts = [len(item["key_sentences"]) for item in items]
    engine = _scores(items, [_engine(i["text"], n) for i, n in zip(items, counts, strict=True)])
    baseline = _scores(items, [_baseline(i["text"], n) for i, n in zip(items, counts, strict=True)])
    keys = sum(counts)
    return [
        Figure("summary", "topic sentence kept", engine[0], baseline[0], _BASELINE, len(items)),
        Figure("summary", "key-sentence recall", engine[1], baseline[1], _BASELINE, keys,
               detail="as many sentences asked as the document has key sentences"),
        Figure("summary", "opens on a dangling pronoun", engine[2], baseline[2], _BASELINE,
               len(items), higher_is_better=False),
    ]  # fmt: skip
