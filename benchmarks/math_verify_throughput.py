"""Math verification throughput: rlvr's MathVerifier against math-verify's parse + verify.

Both judge the same realistic mix of (reply, gold) pairs, shaped like a GRPO batch: groups of
`--group` completions per prompt, golds from rlvr/Math-v0's generator (integers mostly, then
fractions, root sets, ordered pairs, polynomials, radicals) plus intervals and constants; replies
with a few lines of reasoning ending in a boxed answer, correct in canonical or another form,
wrong, hedged or junk. Time limits are in force on both sides: MathVerifier(timeout=5) kills
overrunning checks in its worker pool; math-verify runs with its default 5 s alarms.

Three variants are timed in the same run, interleaved (the order rotates every repeat), on a
fresh mix per repeat, and the medians are reported:

- `rlvr MathVerifier`          : `verifier.verify(reply, task)`
- `math-verify (gold per check)`: `verify(parse(gold), parse(reply))`, as reward functions
                                   usually call it
- `math-verify (gold cached)`  : the same with each gold parsed once per batch (its best case)

`--symbolic-only` keeps to prompts whose gold is not a plain number (the worker-pool path):
`--prompts` of them per batch, drawn from the same distribution (it used to filter a mixed
batch, leaving ~7 prompts, ~56 checks, per batch).

Steady state, as in a training run after its first batch: each variant first judges a batch of
another seed (this warms rlvr's workers and math-verify's parser alike). No variant reuses
results another variant, or an earlier batch, computed: before each timed batch math-verify's
module-level parse caches (`parse_latex_cached`, `extract_latex`: its last 20 strings) and
rlvr's comparison cache are emptied. (Until this was done, the cached variant ran on strings the
per-check variant had just parsed, on the same mix, and read most of them from those caches: at
`--symbolic-only` it measured 1.1-1.9 CPU ms/check where a batch of its own costs ~6.) What
each side keeps inside a batch, and rlvr's workers keep by design (parsed golds, parse trees by
shape, see docs/math.md), stays.

Run:  python benchmarks/math_verify_throughput.py [--prompts 64 --group 8 --repeats 5]
      python benchmarks/math_verify_throughput.py --symbolic-only
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from rlvr.envs.math import procedural_source
from rlvr.envs.tasks import ProceduralSource
from rlvr.verifiers import Task
from rlvr.verifiers.math import MathVerifier, read_literal
from rlvr.verifiers.math import verifier as rlvr_verifier
from rlvr.verifiers.math.pool import get_pool

EXTRA_GOLDS = [  # intervals and constants the generator does not produce
    "[2, \\infty)",
    "(-3, 5]",
    "(-\\infty, -1)",
    "\\frac{\\pi}{4}",
    "2\\sqrt{3}",
    "\\frac{1 + \\sqrt{5}}{2}",
]
ALTERNATIVE = {
    "[2, \\infty)": "x \\geq 2",
    "(-3, 5]": "(-3, 5]",
    "(-\\infty, -1)": "x < -1",
    "\\frac{\\pi}{4}": "\\frac{1}{4}\\pi",
    "2\\sqrt{3}": "\\sqrt{12}",
    "\\frac{1 + \\sqrt{5}}{2}": "\\frac{1}{2} + \\frac{\\sqrt{5}}{2}",
}
WRONG = {
    "[2, \\infty)": "(2, \\infty)",
    "(-3, 5]": "[-3, 5]",
    "(-\\infty, -1)": "(-\\infty, 1)",
    "\\frac{\\pi}{4}": "\\frac{\\pi}{3}",
    "2\\sqrt{3}": "3\\sqrt{2}",
    "\\frac{1 + \\sqrt{5}}{2}": "\\frac{1 - \\sqrt{5}}{2}",
}


@dataclass(frozen=True)
class Pair:
    reply: str
    gold: str
    kind: str  # correct, alternative, wrong, junk


def make_mix(seed: int, prompts: int, group: int, symbolic_only: bool = False) -> list[Pair]:
    """`group` completions for each of `prompts` prompts; with `symbolic_only`, prompts whose
    gold is not a plain number (drawn from the same distribution, the others skipped)."""
    rng = np.random.default_rng(seed)
    source = procedural_source(seed=seed)
    pairs = []
    for index in range(prompts):
        gold, prompt = _draw(rng, source)
        while symbolic_only and read_literal(gold) is not None:
            gold, prompt = _draw(rng, source)
        for _ in range(group):
            pairs.append(_completion(rng, prompt, gold, index))
    return pairs


def _draw(rng: np.random.Generator, source: ProceduralSource) -> tuple[str, str]:
    """A (gold, prompt) pair: a generator task, or now and then an interval or a constant."""
    if rng.random() < 0.06:
        return EXTRA_GOLDS[int(rng.integers(len(EXTRA_GOLDS)))], "Solve the problem."
    task = source[int(rng.integers(1_000_000))]
    return task.answer, task.prompt


def _completion(rng: np.random.Generator, prompt: str, gold: str, salt: int) -> Pair:
    roll = rng.random()
    if roll < 0.45:
        kind, answer = "correct", gold
    elif roll < 0.55:
        kind, answer = "alternative", _alternative(gold)
    elif roll < 0.88:
        kind, answer = "wrong", _wrong(rng, gold)
    else:
        kind = "junk"
        junk = [
            "I am not sure how to solve this.",
            f"Let me think about {prompt[:40]}",
            "\\boxed{}",
            f"<think>{prompt[:60]} ... \\boxed{{{gold}}}",  # truncated: never left <think>
            f"It is \\boxed{{{gold}}} or maybe \\boxed{{{_wrong(rng, gold)}}}.",
        ]
        return Pair(_reasoning(rng, prompt, salt) + junk[int(rng.integers(len(junk)))], gold, kind)
    body = _reasoning(rng, prompt, salt)
    return Pair(f"{body}Therefore, the final answer is $\\boxed{{{answer}}}$.", gold, kind)


def _reasoning(rng: np.random.Generator, prompt: str, salt: int) -> str:
    a, b = int(rng.integers(2, 99)), int(rng.integers(2, 99))
    return (
        f"We need to solve: {prompt}\n\n"
        f"First, let us set up the computation carefully. Note that {a} + {b} = {a + b} and "
        f"{a} \\times {b} = {a * b}, which we use as a check along the way (step {salt}).\n"
        "Working through the algebra step by step and simplifying each intermediate result, "
        "we arrive at the value below.\n\n"
    )


def _alternative(gold: str) -> str:
    if gold in ALTERNATIVE:
        return ALTERNATIVE[gold]
    literal = read_literal(gold)
    if literal is None:
        return re.sub(r"\^\{(\d)\}", r"^\1", gold)  # x^{3} -> x^3
    if literal.kind == "scalar":
        value = literal.values[0]
        if value.denominator == 1:
            return f"x = {value.numerator}"
        scaled = value * 10**6
        return (
            str(float(value))
            if scaled.denominator == 1
            else f"{value.numerator}/{value.denominator}"
        )
    if literal.kind == "set":
        return " \\text{ or } ".join(f"x = {_text(v)}" for v in reversed(literal.values))
    names = "xyz"
    return ", ".join(f"{names[i]} = {_text(v)}" for i, v in enumerate(literal.values))


def _text(value: Fraction) -> str:
    return (
        str(value.numerator)
        if value.denominator == 1
        else f"\\frac{{{value.numerator}}}{{{value.denominator}}}"
    )


def _wrong(rng: np.random.Generator, gold: str) -> str:
    if gold in WRONG:
        return WRONG[gold]
    literal = read_literal(gold)
    delta = int(rng.integers(1, 4)) * (1 if rng.random() < 0.5 else -1)
    if literal is None:
        return gold.replace("+", "-", 1) if "+" in gold else gold + " + 1"
    values = list(literal.values)
    values[-1] += delta
    if literal.kind == "scalar":
        return _text(values[0]) if values[0].denominator != 1 else str(values[0].numerator)
    body = ", ".join(_text(v) for v in values)
    return f"\\{{{body}\\}}" if literal.kind == "set" else f"({body})"


# --- the three ways to judge ---------------------------------------------------------------------


def rlvr_judge(verifier: MathVerifier) -> Callable[[list[Pair]], list[bool]]:
    def run(pairs: list[Pair]) -> list[bool]:
        return [
            verifier.verify(p.reply, Task(id="b", prompt="", answer=p.gold)).is_correct
            for p in pairs
        ]

    return run


def math_verify_judge(cache_gold: bool) -> Callable[[list[Pair]], list[bool]]:
    from math_verify import parse, verify

    def run(pairs: list[Pair]) -> list[bool]:
        golds: dict[str, object] = {}
        results = []
        for pair in pairs:
            if cache_gold:
                if pair.gold not in golds:
                    golds[pair.gold] = parse(f"\\boxed{{{pair.gold}}}")
                gold = golds[pair.gold]
            else:
                gold = parse(f"\\boxed{{{pair.gold}}}")
            results.append(bool(verify(gold, parse(pair.reply))))
        return results

    return run


def forget_results() -> None:
    """Empty the caches of parse and comparison results that outlive a batch on the host:
    math-verify's module-level ones and rlvr's comparison cache (module docstring)."""
    from math_verify import parser

    for cached in (parser.parse_latex_cached, parser.parse_expr_cached, parser.extract_latex):
        cached.cache_clear()
    results = rlvr_verifier._SYMBOLIC_RESULTS
    if hasattr(results, "clear"):
        results.clear()
    else:  # a checkout from before clear() (run with a base tree's rlvr on the PYTHONPATH)
        results._items.clear()


def worker_cpu_seconds() -> float:
    """CPU time of the live pool workers (Linux /proc), to report compute honestly."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in get_pool().pids():
        try:
            with open(f"/proc/{pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
        except (FileNotFoundError, IndexError):
            pass
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--prompts", type=int, default=64, help="prompts per batch")
    parser.add_argument("--group", type=int, default=8, help="completions per prompt")
    parser.add_argument("--repeats", type=int, default=5, help="timed batches per variant")
    parser.add_argument("--timeout", type=float, default=5.0, help="MathVerifier time limit")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--symbolic-only",
        action="store_true",
        help="only prompts whose gold is not a plain number (the worker-pool path)",
    )
    args = parser.parse_args()
    logging.getLogger("math_verify").setLevel(logging.ERROR)

    variants = {
        "rlvr MathVerifier": rlvr_judge(MathVerifier(timeout=args.timeout)),
        "math-verify (gold per check)": math_verify_judge(cache_gold=False),
        "math-verify (gold cached)": math_verify_judge(cache_gold=True),
    }
    warmup = make_mix(args.seed + 10_000, args.prompts, args.group, args.symbolic_only)
    for judge in variants.values():  # starts the pool; steady state (module docstring)
        judge(warmup)

    rates: dict[str, list[float]] = {name: [] for name in variants}
    cpu: dict[str, list[float]] = {name: [] for name in variants}
    split: list[tuple[float, float]] = []  # rlvr's CPU ms/check: (host, workers)
    agreement: Counter[tuple[str, bool, bool]] = Counter()
    names = list(variants)
    for repeat in range(args.repeats):
        mix = make_mix(args.seed + repeat, args.prompts, args.group, args.symbolic_only)
        verdicts = {}
        for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
            forget_results()
            workers_before = worker_cpu_seconds()
            cpu_before, start = time.process_time(), time.perf_counter()
            verdicts[name] = variants[name](mix)
            elapsed = time.perf_counter() - start
            used = time.process_time() - cpu_before
            if name.startswith("rlvr"):
                workers = max(0.0, worker_cpu_seconds() - workers_before)
                split.append((used / len(mix) * 1000, workers / len(mix) * 1000))
                used += workers
            rates[name].append(len(mix) / elapsed)
            cpu[name].append(used / len(mix) * 1000)
        for pair, ours, theirs in zip(mix, verdicts[names[0]], verdicts[names[1]]):
            agreement[(pair.kind, ours, theirs)] += 1

    size = len(mix)
    print(f"\n~{size} checks per batch, {args.repeats} batches per variant, medians")
    print(f"{'variant':32} {'checks/s':>10} {'CPU ms/check':>13} {'ratio':>7}")
    ours = statistics.median(rates[names[0]])
    for name in names:
        rate = statistics.median(rates[name])
        print(f"{name:32} {rate:10.1f} {statistics.median(cpu[name]):13.2f} {ours / rate:6.1f}x")
    host = statistics.median(host for host, _ in split)
    workers = statistics.median(workers for _, workers in split)
    print(f"\nrlvr CPU ms/check: host {host:.2f} + workers {workers:.2f} (medians)")
    print("ratio = rlvr checks/s / that variant's checks/s (rlvr CPU includes its workers)")
    print("\nverdicts by reply kind (rlvr correct?, math-verify correct?): count")
    for (kind, mine, theirs), count in sorted(agreement.items()):
        print(f"  {kind:12} rlvr={mine!s:5} math-verify={theirs!s:5} {count:6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
