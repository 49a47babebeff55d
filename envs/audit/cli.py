"""`rlvr audit ENV_ID --dataset D [--n N]`: measure the env's false-negative and false-positive
rates on a dataset, per reply style, and list every disagreement."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from rlvr.config import Seed, flag_type
from rlvr.families import family_audits


def add_commands(subparsers: Any) -> None:
    audit = subparsers.add_parser(
        "audit",
        help="measure how often an env's verifier scores right answers 0 or wrong answers 1",
        description=__doc__,
    )
    audit.add_argument(
        "env_id", help=f"an audited env: {', '.join(family_audits())} (their families' audits)"
    )
    audit.add_argument(
        "--dataset",
        required=True,
        help="Math: 'procedural' or a GSM8K/MATH .jsonl; Code: 'humaneval', 'builtin' or a "
        "HumanEval .jsonl[.gz]; SQL: 'procedural'",
    )
    audit.add_argument("--n", type=int, default=None, help="audit N items drawn by --seed")
    audit.add_argument("--seed", type=flag_type(Seed), default=0, help="seed of the item sample")
    audit.add_argument(
        "--examples", type=int, default=5, help="disagreements printed per style (-1: all)"
    )
    audit.add_argument("--json", metavar="FILE", help="write the full report (every example)")
    audit.add_argument(
        "--record",
        metavar="FILE",
        help="merge the rates into FILE (e.g. leaderboards/verifier_audit.json)",
    )
    audit.set_defaults(func=audit_command)


def audit_command(args: argparse.Namespace) -> int:
    from rlvr.envs.audit import load_rates, record_rates, run_audit
    from rlvr.envs.errors import DatasetError, EnvConfigError

    def progress(done: int, total: int) -> None:
        if done == total or done % max(1, total // 10) == 0:
            print(f"  {done}/{total} items", file=sys.stderr, flush=True)

    try:
        if args.record:
            load_rates(args.record)  # a file it cannot merge into is refused before the audit
        report = run_audit(args.env_id, args.dataset, n=args.n, seed=args.seed, progress=progress)
    except (DatasetError, EnvConfigError) as exc:
        print(f"rlvr audit: {exc}", file=sys.stderr)
        return 2
    print(report.table())
    print()
    print(report.examples(None if args.examples < 0 else args.examples))
    if report.skipped:
        print("\nnot probed: " + "; ".join(f"{k} ({v})" for k, v in sorted(report.skipped.items())))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report.to_dict(), handle, indent=2)
    if args.record:
        record_rates(report, _command(args), args.record)
    return 0


def _command(args: argparse.Namespace) -> str:
    parts = ["rlvr", "audit", args.env_id, "--dataset", args.dataset]
    if args.n is not None:
        parts += ["--n", str(args.n), "--seed", str(args.seed)]
    return shlex.join(parts)
