"""An answer is never evaluated as Python, on any path."""

from __future__ import annotations

import builtins

import pytest

from rlvr.verifiers import Status, Task
from rlvr.verifiers.math import MathVerifier, screen
from rlvr.verifiers.math.plain import PlainSyntaxError, parse_plain


def payloads(marker) -> list[str]:
    """Answers that create `marker` if anything evaluates them as Python."""
    path = str(marker)
    return [
        f"__import__('os').system('touch {path}')",
        f'__import__("os").system("touch {path}")',
        f"open('{path}', 'w')",
        f"exec(\"open('{path}','w')\")",
        f"eval(\"open('{path}','w')\")",
        f"().__class__.__base__.__subclasses__()[0]('touch {path}')",
        f"\\text{{__import__('os').system('touch {path}')}}",
        f"\\frac{{__import__('os').system('touch {path}')}}{{2}}",
        f"x + __import__('os').system('touch {path}')",
        f"(lambda: open('{path}', 'w'))()",
        f"getattr(__builtins__, 'open')('{path}', 'w')",
        "os.system('reboot')",
        "sympy.core.cache.clear_cache",
    ]


@pytest.mark.parametrize("gold", ["\\sqrt{2}", "5", "x + 1"])
def test_code_in_an_answer_is_rejected_and_never_run(tmp_path, gold):
    marker = tmp_path / "pwned"
    verifier = MathVerifier(timeout=10.0, require_simplified=False)
    for payload in payloads(marker):
        for reply in (
            f"\\boxed{{{payload}}}",
            f"The answer is {payload}",
            f"<answer>{payload}</answer>",
        ):
            verdict = verifier.verify(reply, Task(id="t", prompt="?", answer=gold))
            assert verdict.score == 0.0, (payload, verdict)
            assert not verdict.infra_error
    assert not marker.exists()


def test_code_like_answers_are_named_as_such():
    verdict = MathVerifier().verify(
        "\\boxed{__import__('os').getcwd()}", Task(id="t", prompt="?", answer="\\sqrt{2}")
    )
    assert verdict.status is Status.UNPARSABLE
    assert "looks like code" in verdict.details


def test_parsers_never_evaluate_text_even_unscreened(tmp_path, monkeypatch):
    """Feed payloads straight to the symbolic parsers (skipping the screen): no file appears and
    nothing reaches eval/exec or sympy's string parsers."""
    import math_verify.parser
    import sympy.parsing.sympy_parser

    from rlvr.verifiers.math import equivalence

    evaluated: list[str] = []

    def spy(real):
        def wrapper(source, *args, **kwargs):
            if isinstance(source, str):
                evaluated.append(source)
            return real(source, *args, **kwargs)

        return wrapper

    def refuse(*args, **kwargs):
        raise AssertionError(f"a string parser was called with {args!r:.100}")

    monkeypatch.setattr(builtins, "eval", spy(builtins.eval))
    monkeypatch.setattr(builtins, "exec", spy(builtins.exec))
    monkeypatch.setattr(sympy.parsing.sympy_parser, "parse_expr", refuse)
    monkeypatch.setattr(math_verify.parser, "parse_expr", refuse)
    marker = tmp_path / "pwned"
    for payload in [*payloads(marker), "2*x + 1", "sqrt(8)", "\\frac{1}{2}", "x^2 - 1"]:
        equivalence.parse_answer(payload)
        equivalence.compare("x + 1", payload)
    assert not marker.exists()
    assert not [source for source in evaluated if str(tmp_path) in source or "import" in source]


@pytest.mark.parametrize(
    "text",
    ["__import__('os')", "open('f')", "a.b", "x.__class__", "lambda", "import os", "foo(1)", "1;2"],
)
def test_plain_parser_accepts_only_its_whitelist(text):
    with pytest.raises(PlainSyntaxError):
        parse_plain(text)


@pytest.mark.parametrize(
    "text",
    [
        "-" * 900 + "1",  # within the screen's 1000 characters, past Python's stack
        "+-" * 450 + "1",
        "2" + "^2" * 600,
        "(" * 400 + "1" + ")" * 400,
        "sqrt(" * 300 + "2" + ")" * 300,
        "|" * 600,
    ],
)
def test_plain_parser_refuses_deep_text_instead_of_recursing(text):
    with pytest.raises(PlainSyntaxError, match="nests deeper than"):
        parse_plain(text)


def test_plain_parser_builds_sympy_directly():
    import sympy

    x = sympy.Symbol("x")
    assert parse_plain("3*x**2 + 1") == 3 * x**2 + 1
    assert parse_plain("2x(x+1)") == 2 * x * (x + 1)
    assert parse_plain("sqrt(8)/2") == sympy.sqrt(2)
    assert parse_plain("-2^2") == -4
    assert parse_plain("2^3^2") == 512
    assert parse_plain("0.1") == sympy.Rational(1, 10)
    assert parse_plain("pi/4 + |-3|") == sympy.pi / 4 + 3
    assert parse_plain("-" * 90 + "3") == 3  # nesting within the limit still reads


def test_screen():
    assert screen("\\frac{\\sqrt{3}}{2}") is None
    assert screen("\\cos(x) + \\sin(x)") is None
    assert "longer than" in screen("1" * 2000)
    assert "nests" in screen("{" * 50 + "}" * 50)
    assert "code" in screen("x.real")
