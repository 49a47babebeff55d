"""Parse trees reused by shape (`shapes.py`) build exactly what fresh parses build."""

from __future__ import annotations

import contextlib

import pytest
import sympy
from latex2sympy2_extended import latex2sympy2
from math_verify import parser as math_verify_parser

from rlvr.verifiers.math import equivalence, extract_answers, shapes
from rlvr.verifiers.math.worker import _compare
from tests.verifiers import math_corpus

FRESH = shapes._ORIGINAL_LATEX2SYMPY


def outcome(function, latex: str) -> tuple[str, str]:
    """What `function` makes of `latex`: the sympy result's srepr, or the exception."""
    try:
        result = function(latex, is_real=True, convert_degrees=False, normalization_config=None)
    except Exception as exc:
        return "raises", f"{type(exc).__name__}: {exc}"
    return type(result).__name__, sympy.srepr(result)


def forget_parses() -> None:
    """Empty every cache of parse results, ours and math-verify's."""
    shapes.SHAPES.items.clear()
    equivalence.parse_gold.cache_clear()
    for cached in (math_verify_parser.parse_latex_cached, math_verify_parser.extract_latex):
        cached.cache_clear()


def test_a_known_shape_reads_the_new_text():
    forget_parses()
    first, second = "\\{5 - \\sqrt{6}, 5 + \\sqrt{6}\\}", "\\{7 - \\sqrt{2}, 7 + \\sqrt{2}\\}"
    assert outcome(shapes.latex2sympy, first) == outcome(FRESH, first)
    hits = shapes.SHAPES.hits
    assert outcome(shapes.latex2sympy, second) == outcome(FRESH, second)
    assert shapes.SHAPES.hits == hits + 1
    assert outcome(shapes.latex2sympy, second) != outcome(FRESH, first)
    assert outcome(shapes.latex2sympy, first) == outcome(FRESH, first)  # and back again


def test_a_conversion_that_fails_leaves_its_shape_sound():
    """`\\frac{d}{dx}` parses but fails to convert; `\\frac{a}{dx}` has its shape."""
    forget_parses()
    for latex in ["\\frac{d}{dx}", "\\frac{a}{dx}", "\\frac{d}{dy}", "\\frac{b}{dy}"]:
        assert outcome(shapes.latex2sympy, latex) == outcome(FRESH, latex)
    assert shapes.SHAPES.hits >= 3
    assert outcome(shapes.latex2sympy, "\\frac{d}{dx}")[0] == "raises"


@pytest.mark.parametrize("latex", ["@", "3 \\bmod 0", "\\int_0^1", "#3", "\\frac{1}{", ""])
def test_texts_that_do_not_parse_fail_as_they_did(latex):
    forget_parses()
    assert outcome(shapes.latex2sympy, latex) == outcome(FRESH, latex)
    assert outcome(shapes.latex2sympy, latex) == outcome(FRESH, latex)  # shape known or not


def test_long_answers_are_parsed_but_not_kept():
    forget_parses()
    long = " + ".join(f"{index}x^{{{index}}}" for index in range(40))
    assert outcome(shapes.latex2sympy, long) == outcome(FRESH, long)
    assert not shapes.SHAPES.items


def test_the_kept_shapes_are_bounded(monkeypatch):
    forget_parses()
    monkeypatch.setattr(shapes.SHAPES, "size", 3)
    texts = ["x", "x + 1", "x + 1 + 1", "x + 1 + 1 + 1", "x + 1 + 1 + 1 + 1"]
    for text in texts:
        assert outcome(shapes.latex2sympy, text) == outcome(FRESH, text)
    assert len(shapes.SHAPES.items) == 3


def test_math_verify_is_left_as_it_was():
    with shapes.reused_parse_trees():
        assert math_verify_parser.latex2sympy is shapes.latex2sympy
    assert math_verify_parser.latex2sympy is latex2sympy2.latex2sympy


def corpus_texts() -> list[str]:
    texts = []
    for gold, reply in math_corpus.cases():
        texts.append(gold)
        texts.extend(math_corpus.answer_variants(gold))
        texts.extend(extract_answers(reply).candidates)
    return list(dict.fromkeys(texts))


@pytest.mark.slow
def test_reused_trees_convert_to_what_fresh_parses_give(monkeypatch):
    """Every LaTeX text the worker's parser receives for the corpus: the result with reused
    trees (in corpus order, so shapes recur) is the fresh parse's, sympy object for object."""
    forget_parses()
    calls: list[tuple[str, tuple[str, str]]] = []

    def recording(latex, *args, **kwargs):
        try:
            result = shapes.latex2sympy.__wrapped__(latex, *args, **kwargs)
        except Exception as exc:
            calls.append((latex, ("raises", f"{type(exc).__name__}: {exc}")))
            raise
        calls.append((latex, (type(result).__name__, sympy.srepr(result))))
        return result

    recording.__wrapped__ = shapes.latex2sympy
    monkeypatch.setattr(shapes, "latex2sympy", recording)
    hits = shapes.SHAPES.hits
    for text in corpus_texts():
        equivalence.parse_answer(text)
    assert len(calls) > 500
    assert shapes.SHAPES.hits - hits > len(calls) // 4  # shapes do recur: the cache is used
    differences = [(latex, got) for latex, got in calls if got != outcome(FRESH, latex)]
    assert not differences


@pytest.mark.slow
def test_verdicts_are_the_same_without_reused_trees(monkeypatch):
    """The corpus's symbolic comparisons, with and without reused trees."""
    pairs = [
        (gold, answer)
        for gold in dict.fromkeys(gold for gold, _ in math_corpus.cases())
        for answer in math_corpus.answer_variants(gold)
    ]
    forget_parses()
    hits = shapes.SHAPES.hits
    reused = [_compare(equivalence, gold, answer, True) for gold, answer in pairs]
    assert shapes.SHAPES.hits - hits > len(pairs) // 4
    forget_parses()
    monkeypatch.setattr(equivalence, "reused_parse_trees", contextlib.nullcontext)
    fresh = [_compare(equivalence, gold, answer, True) for gold, answer in pairs]
    assert len(pairs) > 1000
    assert reused == fresh
