"""Verifier audits: how often an env's reward is wrong, measured on real data through the env.

`run_audit("rlvr/Math-v0", "gsm8k_test.jsonl")` feeds the env the dataset's gold answers written
the ways models write them (right probes, which must score 1) and wrong answers made from them
(which must score 0), one episode each, and returns an `AuditReport`: false-negative and
false-positive rates with 95% Wilson intervals, per reply style, with every disagreement.
`rlvr audit ENV_ID --dataset ...` is the command line; `rates.py` keeps the published rates.
"""

from rlvr.envs.audit.rates import RATES_FILE, load_rates, record_rates
from rlvr.envs.audit.report import AuditReport, Probe, Rate, StyleResult, wilson_interval
from rlvr.envs.audit.runner import auditors, run_audit

__all__ = [
    "RATES_FILE",
    "AuditReport",
    "Probe",
    "Rate",
    "StyleResult",
    "auditors",
    "load_rates",
    "record_rates",
    "run_audit",
    "wilson_interval",
]
