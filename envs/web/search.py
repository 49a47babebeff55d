"""A small, deterministic full-text index for the generated sites' search pages."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence

_TOKEN = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "i", "in", "is",
        "it", "its", "me", "my", "need", "of", "on", "or", "that", "the", "this", "to", "want",
        "was", "were", "what", "which", "who", "with", "looking", "lower", "than", "price",
        "dollars",
    }
)  # fmt: skip


def tokens(text: str) -> list[str]:
    """Lower-cased words without stopwords, with a naive plural strip (boots -> boot)."""
    words = _TOKEN.findall(text.lower())
    return [_stem(word) for word in words if word not in STOPWORDS]


def _stem(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


class SearchIndex:
    """Ranks documents by the idf-weighted query words they contain; title words count double
    and an exact title match comes first. Ties keep document order, so results are stable."""

    def __init__(self, documents: Sequence[tuple[str, str]]) -> None:
        self._titles = [" ".join(tokens(title)) for title, _ in documents]
        self._postings: dict[str, dict[int, float]] = defaultdict(dict)
        for index, (title, body) in enumerate(documents):
            for word in set(tokens(body)):
                self._postings[word][index] = 1.0
            for word in set(tokens(title)):
                self._postings[word][index] = 2.0
        count = max(len(documents), 1)
        self._idf = {word: math.log(1 + count / len(docs)) for word, docs in self._postings.items()}

    def search(self, query: str) -> list[int]:
        """Indices of the documents matching any query word, best first."""
        words = list(dict.fromkeys(tokens(query)))
        scores: dict[int, float] = defaultdict(float)
        for word in words:
            for index, weight in self._postings.get(word, {}).items():
                scores[index] += weight * self._idf[word]
        exact = " ".join(words)
        for index in scores:
            if self._titles[index] == exact:
                scores[index] += 1000.0
        return sorted(scores, key=lambda index: (-round(scores[index], 9), index))
