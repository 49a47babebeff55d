"""Throughput of the SQL verifier: verifications per second on SQLite and PostgreSQL, with the
gold-result cache warm (hit) and off (miss).

Each verification judges the oracle reply of a procedural task (levels 1-5 mixed) on the task's
database and its test-suite twins (`--twins`), so the reply runs on every database (the worst
case: a wrong reply stops at the first mismatch). Configurations are interleaved round by round
and the table shows medians, with ratios against SQLite with the cache off, measured in the same
run.

    python benchmarks/sql_verify_throughput.py                       # SQLite only
    RLVR_POSTGRES_DSN=postgresql://user:pw@127.0.0.1:5432/db \\
        python benchmarks/sql_verify_throughput.py --tasks 200 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from rlvr.envs.sql.tasks import procedural_tasks
from rlvr.verifiers.sql import SQLVerifier, SQLVerifierConfig, make_backend


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200, help="verifications per round")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median)")
    parser.add_argument("--twins", type=int, default=2, help="test-suite databases per task")
    parser.add_argument(
        "--postgres-dsn", default=os.environ.get("RLVR_POSTGRES_DSN"),
        help="admin DSN for the PostgreSQL rows (default: $RLVR_POSTGRES_DSN; none: SQLite only)",
    )  # fmt: skip
    args = parser.parse_args()

    tasks = procedural_tasks(twins=args.twins)
    items = [tasks[i] for i in range(args.tasks)]
    replies = [f"```sql\n{task.answer}\n```" for task in items]
    backends = {"sqlite": make_backend("sqlite")}
    if args.postgres_dsn:
        backends["postgres"] = make_backend("postgres", dsn=args.postgres_dsn)
    else:
        print("(no PostgreSQL DSN: pass --postgres-dsn or set RLVR_POSTGRES_DSN for those rows)")

    verifiers = {}
    for name, backend in backends.items():
        verifiers[(name, "miss")] = SQLVerifier(
            tasks.catalog, backend, SQLVerifierConfig(gold_cache_size=0)
        )
        verifiers[(name, "hit")] = SQLVerifier(tasks.catalog, backend)
    for verifier in verifiers.values():  # warm-up: loads databases, fills the cache of "hit"
        _run(verifier, items, replies)

    seconds: dict[tuple[str, str], list[float]] = {key: [] for key in verifiers}
    for _ in range(args.rounds):
        for key, verifier in verifiers.items():
            seconds[key].append(_run(verifier, items, replies))

    baseline = args.tasks / statistics.median(seconds[("sqlite", "miss")])
    print(f"\n{args.tasks} verifications x {args.rounds} rounds, {1 + args.twins} databases each "
          f"(oracle replies), medians")  # fmt: skip
    print(
        f"{'backend':<10} {'gold cache':<11} {'verif/s':>9} {'ms/verif':>9} {'vs sqlite miss':>15}"
    )
    for (name, cache), times in seconds.items():
        rate = args.tasks / statistics.median(times)
        print(f"{name:<10} {cache:<11} {rate:>9.0f} {1000 / rate:>9.2f} {rate / baseline:>14.2f}x")
    for name in backends:
        hit = args.tasks / statistics.median(seconds[(name, "hit")])
        miss = args.tasks / statistics.median(seconds[(name, "miss")])
        print(f"{name}: cache hit / miss = {hit / miss:.2f}x")
    for backend in backends.values():
        backend.close()


def _run(verifier: SQLVerifier, items, replies) -> float:
    started = time.perf_counter()
    for task, reply in zip(items, replies):
        verdict = verifier.verify(reply, task)
        if not verdict.is_correct:
            raise SystemExit(f"oracle reply judged {verdict.status.value}: {verdict.details}")
    return time.perf_counter() - started


if __name__ == "__main__":
    main()
