"""The learning suite's stored results and report: docs/agents.md's learning tables are what
the stored results make, results that may not share a table are refused by name, partial runs
never replace a full table, and the statistic is the one the tables state. No torch needed."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import learning_suite as suite
import learning_suite_heldout as suite_heldout
import learning_suite_provenance as suite_provenance
import learning_suite_report as report
import learning_suite_results as suite_results
import learning_suite_tables as suite_tables
import learning_suite_tasks as suite_tasks

ROOT = Path(__file__).resolve().parents[2]

LEARNERS = ("grpo", "ppo", "trl")
SEEDS = (0, 1, 2)


# --- the shipped docs ----------------------------------------------------------------------------


def test_the_docs_tables_are_what_the_stored_results_make():
    """CI's check: every generated block of docs/agents.md equals what the report makes from
    benchmarks/results/learning_suite (edit a number in either and this fails)."""
    problems = report.check_docs(report.DOCS, suite_results.RESULTS)
    assert problems == [], "\n".join(problems)


def test_every_stored_experiment_is_shown_in_the_docs():
    shown = {arg for block in report.blocks(report.DOCS.read_text()) for arg in block.args}
    stored = (
        {p.name for p in suite_results.RESULTS.iterdir()}
        if suite_results.RESULTS.exists()
        else set()
    )
    assert stored <= shown, f"stored but in no docs block: {sorted(stored - shown)}"


# --- runs as the suite writes them ---------------------------------------------------------------


def make_run(task: str, learner: str, seed: int, gain: float, experiment: str = "tiny") -> dict:
    """A result.json as `learning_suite_worker.run_worker` writes it."""
    before = {"accuracy": 0.30, "accuracy_se": 0.0145, "accuracy_n": 1000, "level_up": 0.02}
    after = {**before, "accuracy": 0.30 + gain, "level_up": 0.02 + gain / 10}
    return {
        "experiment": experiment,
        "task": task,
        "learner": learner,
        "seed": seed,
        "before": before,
        "after": after,
        "curve": [
            {"cpu": 0.0, "wall": 0.0, "step": 0, **before},
            {"cpu": 15.2, "wall": 20.0, "step": 40, **before, "accuracy": 0.30 + gain / 2},
            {"cpu": 30.1, "wall": 41.0, "step": 80, **after},
        ],
        "steps": 80,
        "cpu_seconds": 30.1,
        "wall_seconds": 41.0,
        "load": 1.0,
        "provenance": {
            "commit": "0123456789abcdef0123456789abcdef01234567",
            "dirty": False,
            "title": "Math-v0, 3 families, levels 1-2",
            "warm_start": "aaaa000011112222",
            "heldout": "bbbb333344445555",
            "settings": {
                "task": {"name": task, "budget": 30.0, "eval_every": 15.0, "threshold": 0.05},
                "learner": {"algo": learner, "lr": 0.0002},
            },
            "versions": {"python": "3.11.7", "torch": "2.13.0", "trl": "1.16.0"},
            "seed": seed,
            "baseline_repeat_identical": True,
        },
    }


def gains_of(learner: str) -> list[float]:
    return {
        "grpo": [0.045, 0.054, 0.039],
        "ppo": [0.033, 0.027, 0.038],
        "trl": [0.015, -0.013, 0.02],
    }[learner]


@pytest.fixture
def tiny(monkeypatch):
    """Experiments registered for the test: `tiny` (math at 30 s) and `tiny-120`."""
    for name, budget in (("tiny", 30.0), ("tiny-120", 120.0)):
        spec = suite_tasks.Experiment(("math",), SEEDS, LEARNERS, budget=budget, eval_every=15.0)
        monkeypatch.setitem(suite_tasks.EXPERIMENTS, name, spec)
    return "tiny"


def store_runs(results: Path, experiment: str = "tiny", change=None, budget: float = 30.0):
    """Write an experiment's stored results; `change(run)` edits each before it is written."""
    for learner in LEARNERS:
        for seed, gain in zip(SEEDS, gains_of(learner)):
            run = make_run("math", learner, seed, gain * budget / 30, experiment)
            run["provenance"]["settings"]["task"]["budget"] = budget
            if change:
                change(run)
            path = results / experiment / "math" / f"{learner}-s{seed}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(run))


DOC = """# Results

Intro text that stays.

<!-- learning-suite:table tiny -->
stale
<!-- /learning-suite -->

Between.

<!-- learning-suite:targets tiny -->
<!-- /learning-suite -->
Outro.
"""


@pytest.fixture
def docs(tmp_path, tiny):
    store_runs(tmp_path / "results")
    path = tmp_path / "docs" / "agents.md"
    path.parent.mkdir()
    path.write_text(DOC)
    return path


# --- the docs: regenerated in place, checked ------------------------------------------------------


def test_update_rewrites_the_blocks_and_then_the_docs_check_clean(docs):
    results = docs.parent.parent / "results"
    assert report.check_docs(docs, results)  # stale
    report.update_docs(docs, results, pictures=False)
    text = docs.read_text()
    assert "stale" not in text
    for kept in ("Intro text that stays.", "Between.", "Outro."):
        assert kept in text
    assert report.check_docs(docs, results) == []
    assert "| Math-v0, 3 families, levels 1-2 | rlvr GRPO | 3 |" in text
    report.update_docs(docs, results, pictures=False)
    assert docs.read_text() == text  # a second run changes nothing


def test_the_check_fails_when_a_number_in_the_docs_is_edited(docs):
    results = docs.parent.parent / "results"
    report.update_docs(docs, results, pictures=False)
    text = docs.read_text()
    assert "+0.046 [" in text  # our GRPO's mean gain
    docs.write_text(text.replace("+0.046 [", "+0.056 [", 1))
    problems = report.check_docs(docs, results)
    assert len(problems) == 1 and "learning-suite:table tiny" in problems[0]
    assert "+0.056" in problems[0] and "+0.046" in problems[0]


def test_the_check_fails_when_a_stored_result_is_edited(docs):
    results = docs.parent.parent / "results"
    report.update_docs(docs, results, pictures=False)
    path = results / "tiny" / "math" / "trl-s1.json"
    run = json.loads(path.read_text())
    run["after"]["accuracy"] += 0.01
    path.write_text(json.dumps(run))
    assert any("differs from the stored results" in p for p in report.check_docs(docs, results))


def test_a_stored_experiment_that_is_not_registered_is_a_problem(docs):
    results = docs.parent.parent / "results"
    report.update_docs(docs, results, pictures=False)
    (results / "renamed").mkdir()
    assert report.check_docs(docs, results) == [
        f"{results / 'renamed'}: not an experiment of EXPERIMENTS"
    ]


def test_a_partial_experiment_never_reaches_the_docs(docs):
    results = docs.parent.parent / "results"
    (results / "tiny" / "math" / "ppo-s2.json").unlink()
    before = docs.read_text()
    with pytest.raises(
        suite_results.ReportError, match=r"1 of 9 runs are not stored .*math/ppo-s2"
    ):
        report.update_docs(docs, results, pictures=False)
    assert docs.read_text() == before
    assert "math/ppo-s2" in report.check_docs(docs, results)[0]


def test_a_stored_run_outside_the_experiment_is_refused(docs):
    results = docs.parent.parent / "results"
    run = make_run("math", "grpo", 7, 0.05)
    (results / "tiny" / "math" / "grpo-s7.json").write_text(json.dumps(run))
    with pytest.raises(suite_results.ReportError, match="math/grpo-s7 are not in the experiment"):
        suite_results.complete_runs(results, "tiny")


def test_a_stored_file_must_be_the_run_its_name_says(tmp_path, tiny):
    store_runs(tmp_path)
    folder = tmp_path / "tiny" / "math"
    (folder / "grpo-s0.json").write_text((folder / "grpo-s1.json").read_text())
    with pytest.raises(suite_results.ReportError, match="holds the run tiny/math/grpo-s1"):
        suite_results.stored_runs(tmp_path, "tiny")


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ("{not json", "not a readable result"),
        ("[1, 2]", "not a result"),
        (json.dumps({"task": "math"}), "no learner, seed, before"),
    ],
)
def test_an_unreadable_stored_result_is_named(tmp_path, tiny, bad, named):
    store_runs(tmp_path)
    path = tmp_path / "tiny" / "math" / "ppo-s1.json"
    path.write_text(bad)
    with pytest.raises(suite_results.ReportError, match=named) as caught:
        suite_results.stored_runs(tmp_path, "tiny")
    assert str(path) in str(caught.value)


def test_a_result_without_provenance_is_refused_by_field(tmp_path, tiny):
    store_runs(tmp_path, change=lambda run: run["provenance"].pop("warm_start"))
    with pytest.raises(suite_results.ReportError, match=r"no provenance\.warm_start"):
        suite_results.stored_runs(tmp_path, "tiny")


def test_a_marker_quoted_in_prose_is_text_and_an_unclosed_block_is_refused(docs):
    results = docs.parent.parent / "results"
    prose = "Add `<!-- learning-suite:table tiny -->` and its closing line.\n"
    docs.write_text(prose + DOC)
    report.update_docs(docs, results, pictures=False)
    assert docs.read_text().startswith(prose) and report.check_docs(docs, results) == []
    unclosed = DOC.replace("stale\n<!-- /learning-suite -->", "stale")
    docs.write_text(unclosed)
    (problem,) = report.check_docs(docs, results)
    assert "learning-suite:table tiny --> has no <!-- /learning-suite --> line" in problem
    with pytest.raises(suite_results.ReportError, match="has no"):
        report.update_docs(docs, results, pictures=False)
    assert docs.read_text() == unclosed


def test_plots_are_drawn_beside_the_docs_and_a_missing_one_is_a_problem(docs):
    pytest.importorskip("matplotlib")
    results = docs.parent.parent / "results"
    store_runs(results, "tiny-120", budget=120.0)
    docs.write_text(
        "<!-- learning-suite:plot tiny suite_tiny.png -->\n<!-- /learning-suite -->\n"
        "<!-- learning-suite:budget-plot tiny tiny-120 budget.png -->\n<!-- /learning-suite -->\n"
    )
    written = report.update_docs(docs, results)
    assert written[-2:] == [str(docs.parent / "suite_tiny.png"), str(docs.parent / "budget.png")]
    assert "![held-out accuracy against training CPU seconds: tiny](suite_tiny.png)" in (
        docs.read_text()
    )
    for picture in ("suite_tiny.png", "budget.png"):
        assert (docs.parent / picture).read_bytes().startswith(b"\x89PNG")
    assert report.check_docs(docs, results) == []
    (docs.parent / "budget.png").unlink()
    (problem,) = report.check_docs(docs, results)
    assert problem.endswith("budget.png is missing")


def test_an_unknown_block_kind_is_named(docs):
    docs.write_text("<!-- learning-suite:histogram tiny -->\n<!-- /learning-suite -->\n")
    problems = report.check_docs(docs, docs.parent.parent / "results")
    assert len(problems) == 1 and "write table EXPERIMENT" in problems[0]


# --- what may share a table ----------------------------------------------------------------------


def _set(path: str, value):
    def change(run):
        if run["learner"] == "trl" and run["seed"] == 2:
            record = run["provenance"]
            *parents, last = path.split(".")
            for part in parents:
                record = record[part]
            record[last] = value

    return change


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("warm_start", "ffff000011112222", "warm_start"),
        ("heldout", "cccc", "heldout"),
        ("settings.task.threshold", 0.1, "settings.task.threshold"),
        ("settings.learner.lr", 0.001, "settings.learner.lr"),
        ("versions.torch", "2.14.0", "versions.torch"),
    ],
)
def test_runs_that_differ_cannot_share_a_table(tmp_path, tiny, path, value, named):
    store_runs(tmp_path, change=_set(path, value))
    with pytest.raises(suite_results.ReportError, match=rf"tiny/math/trl-s2 .* differ in {named} "):
        suite_tables.experiment_table("tiny", suite_results.complete_runs(tmp_path, "tiny"), "x")


def test_learners_may_differ_in_their_own_settings(tmp_path, tiny):
    store_runs(tmp_path)  # grpo, ppo, trl: each its own algo and lr
    table = suite_tables.experiment_table(
        "tiny", suite_results.complete_runs(tmp_path, "tiny"), "x"
    )
    assert table.count("| Math-v0") == 3


def test_a_run_at_another_budget_than_its_experiment_is_refused(tmp_path, tiny):
    store_runs(tmp_path, budget=10.0)
    with pytest.raises(
        suite_results.ReportError, match="ran with budget 10.0, experiment tiny sets 30.0"
    ):
        suite_results.complete_runs(tmp_path, "tiny")


# --- the statistic -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("df", "quantile"),
    [(1, 12.706), (4, 2.776), (7, 2.365), (30, 2.042), (40, 2.021), (120, 1.980)],
)
def test_t_quantiles_match_the_tables(df, quantile):
    assert suite_results.t95(df) == pytest.approx(quantile, abs=1e-3)
    assert suite_results.t95(df + 0.9) == suite_results.t95(df)  # Welch's fractional df round down


def test_the_interval_is_the_mean_with_its_t_interval():
    estimate = suite_results.mean_interval([0.045, 0.054, 0.039])
    half = 4.303 * 0.007549834 / math.sqrt(3)
    assert estimate.mean == pytest.approx(0.046)
    assert (estimate.low, estimate.high) == pytest.approx((0.046 - half, 0.046 + half), abs=1e-6)
    assert estimate.values == (0.045, 0.054, 0.039)
    lone = suite_results.mean_interval([0.05])
    assert lone.mean == 0.05 and math.isnan(lone.low) and math.isnan(lone.high)


def test_welch_difference_of_two_learners_gains():
    ours, theirs = [0.045, 0.054, 0.039, 0.045], [0.015, -0.013, 0.015, 0.019]
    estimate = suite_results.welch_difference(ours, theirs)
    va, vb = 3.8225e-5 / 4, 2.18667e-4 / 4  # sample variances / n, by hand
    df = (va + vb) ** 2 / (va**2 / 3 + vb**2 / 3)
    assert 4 < df < 5  # so t(4) = 2.776
    assert estimate.mean == pytest.approx(0.03675)
    assert estimate.high - estimate.mean == pytest.approx(2.776 * math.sqrt(va + vb), rel=1e-4)
    assert estimate.mean - estimate.low == pytest.approx(estimate.high - estimate.mean)


@pytest.mark.parametrize(("gain", "verdict"), [(0.06, "ok"), (0.03, "held-out set too small")])
def test_a_gain_under_three_evaluation_errors_is_flagged(gain, verdict):
    row = {"gain": suite_results.mean_interval([gain, gain]), "noise": 0.0145}
    assert suite_tables.noise_check(row).endswith(f": {verdict}")


def test_the_table_states_the_statistic_and_shows_every_seed(tmp_path, tiny):
    store_runs(tmp_path)
    table = suite_tables.experiment_table(
        "tiny", suite_results.complete_runs(tmp_path, "tiny"), "stored"
    )
    assert "gain: mean [95% CI]" in table and "Mean over seeds [95% t-interval]" in table
    grpo = next(line for line in table.splitlines() if "rlvr GRPO" in line)
    assert "+0.045, +0.054, +0.039" in grpo  # per seed, in seed order
    assert "0.0145 vs 0.0153: ok" in grpo
    trl = next(line for line in table.splitlines() if "TRL GRPOTrainer" in line)
    assert "held-out set too small" in trl  # a mean gain of +0.007
    assert "median" not in table.lower()
    assert "warm start `aaaa000011112222`" in table and "held-out set `bbbb333344445555`" in table
    assert "`0123456789` (9 runs)" in table and "torch 2.13.0" in table


def test_uncommitted_code_is_shown_in_the_table(tmp_path, tiny):
    store_runs(tmp_path, change=_set("dirty", True))
    table = suite_tables.experiment_table(
        "tiny", suite_results.complete_runs(tmp_path, "tiny"), "stored"
    )
    assert "with uncommitted changes (1 run)" in table and "(8 runs)" in table


# --- budget curves -------------------------------------------------------------------------------


def test_the_budget_table_compares_each_budget_with_trl(tmp_path, tiny):
    store_runs(tmp_path, "tiny")
    store_runs(tmp_path, "tiny-120", budget=120.0)
    table = suite_tables.budget_table(["tiny", "tiny-120"], tmp_path)
    rows = [line for line in table.splitlines() if line.startswith("| math |")]
    assert [row.split(" | ")[1:3] for row in rows] == [
        ["rlvr GRPO", "30"],
        ["rlvr GRPO", "120"],
        ["rlvr PPO", "30"],
        ["rlvr PPO", "120"],
        ["TRL GRPOTrainer", "30"],
        ["TRL GRPOTrainer", "120"],
    ]
    lead = suite_results.welch_difference(gains_of("grpo"), gains_of("trl"))
    assert rows[0].endswith(f"| {suite_tables.interval(lead, signed=True)} |")
    assert rows[-1].endswith("| - |")


def test_the_budget_table_refuses_budgets_from_different_warm_starts(tmp_path, tiny):
    store_runs(tmp_path, "tiny")
    store_runs(tmp_path, "tiny-120", budget=120.0, change=_set("warm_start", "other"))
    with pytest.raises(suite_results.ReportError, match="differ in warm_start"):
        suite_tables.budget_table(["tiny", "tiny-120"], tmp_path)


# --- targets -------------------------------------------------------------------------------------


def test_targets_say_whether_ours_is_ahead_beyond_the_interval(tmp_path, tiny):
    store_runs(tmp_path)
    table = suite_tables.targets_table(["tiny"], tmp_path)
    assert "| our GRPO's gain >= TRL's on every task |" in table
    assert "met in the means; beyond the interval on none |" in table  # 3 seeds of TRL: wide
    assert "math 6.27x (ratio of mean gains) | NOT met: 1.5x or more on math |" in table


@pytest.mark.parametrize(
    ("ours", "theirs", "ratio"), [(0.045, 0.015, 3.0), (0.02, -0.01, math.inf), (-0.01, 0.0, None)]
)
def test_the_gain_ratio_is_only_a_ratio_where_trl_gained(ours, theirs, ratio):
    if ratio is None:
        assert math.isnan(suite_tables.gain_ratio(ours, theirs))
        assert (
            suite_tables._ratio(suite_tables.gain_ratio(ours, theirs)) == "(neither mean gain > 0)"
        )
    else:
        assert suite_tables.gain_ratio(ours, theirs) == pytest.approx(ratio)
    if ratio == math.inf:
        assert (
            suite_tables._ratio(suite_tables.gain_ratio(ours, theirs))
            == "(TRL's mean gain <= 0, ours > 0)"
        )


@pytest.mark.parametrize(
    ("deltas", "verdict"),
    [
        ([0.072, 0.070, 0.074], "met (raised beyond the interval)"),
        ([0.055, 0.080, 0.060], "met (not raised beyond it)"),
        ([-0.01, -0.02, -0.015], "NOT met (not raised beyond it)"),
    ],
)
def test_targets_say_whether_training_raised_the_self_correction_delta(deltas, verdict):
    start = 0.061
    row = {"figures": [("acc@t2 - acc@t1", start, suite_results.mean_interval(deltas))]}
    (line,) = suite_tables.target_lines({"selfcorrect": {"grpo": row}})
    assert line.endswith(f"| {verdict} |")
    both = {"grpo": row, "grpo-score": row, "ppo": row}
    ours = suite_tables.target_lines({"selfcorrect": both, "selfcorrect-choice": {"grpo": row}})
    named = "| self-correction delta positive after training (and raised by RL)"
    assert [line.split(" | ")[0] for line in ours] == [
        f"{named}, rlvr GRPO, selfcorrect",
        f"{named}, rlvr GRPO, SCoRe, selfcorrect",
        f"{named}, rlvr GRPO, selfcorrect-choice",
    ]


def test_staged_learners_make_rows_and_one_name_never_holds_two_recipes(tmp_path, monkeypatch):
    """Learner names with stages and @settings ("-s" in the name, "@", "=", ",") are stored,
    read back and shown, each its own row; runs under one name with other stages are refused."""
    learners = ("grpo", "grpo-score", "grpo-score@share=0.5,pg1=1")
    spec = suite_tasks.Experiment(("math",), SEEDS, learners, budget=30.0, eval_every=15.0)
    monkeypatch.setitem(suite_tasks.EXPERIMENTS, "staged", spec)

    def write(pin_of_grpo_score_s2: float = 1.0) -> None:
        for learner in learners:
            for seed, gain in zip(SEEDS, gains_of("grpo")):
                run = make_run("math", learner, seed, gain, "staged")
                if learner != "grpo":
                    pin = pin_of_grpo_score_s2 if (learner, seed) == ("grpo-score", 2) else 1.0
                    share = 0.5 if "share=0.5" in learner else 1.0
                    stage = {"share": share, "learner": {"turn_beta": [pin, 0.0]}}
                    run["provenance"]["settings"]["learner"]["stages"] = [stage]
                path = tmp_path / "staged" / "math" / f"{learner}-s{seed}.json"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(run))

    write()
    runs = suite_results.complete_runs(tmp_path, "staged")
    assert {learner for _, learner, _ in runs} == set(learners)
    table = suite_tables.experiment_table("staged", runs, "x")
    assert "| rlvr GRPO, SCoRe | 3 |" in table
    assert "| grpo-score@share=0.5,pg1=1 | 3 |" in table
    write(pin_of_grpo_score_s2=5.0)
    with pytest.raises(
        suite_results.ReportError,
        match=r"staged/math/grpo-score-s2 .* differ in settings\.learner\.stages",
    ):
        suite_tables.experiment_table(
            "staged", suite_results.complete_runs(tmp_path, "staged"), "x"
        )


# --- a suite's --out folder, and storing ---------------------------------------------------------


def write_out(out: Path, experiment: str, learners=LEARNERS, seeds=SEEDS, change=None) -> None:
    for learner in learners:
        for seed in seeds:
            run = make_run("math", learner, seed, gains_of(learner)[seed], experiment)
            if change:
                change(run)
            folder = out / "runs" / experiment / "math" / f"{learner}-s{seed}"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "result.json").write_text(json.dumps(run))
            (folder / "final").mkdir(exist_ok=True)  # the model: never stored
            (folder / "final" / "model.safetensors").write_bytes(b"weights")


def test_a_partial_out_report_never_replaces_the_full_table(tmp_path, tiny):
    pytest.importorskip("matplotlib")
    write_out(tmp_path, "tiny")
    report.report_runs(tmp_path, "tiny", ["math"], list(LEARNERS), list(SEEDS))
    folder = tmp_path / "reports" / "tiny"
    full = (folder / "table.md").read_text()
    assert not full.startswith("PARTIAL") and (folder / "curves.png").exists()
    (tmp_path / "runs" / "tiny" / "math" / "trl-s2" / "result.json").unlink()
    report.report_runs(tmp_path, "tiny", ["math"], ["trl"], [2])
    assert (folder / "table.md").read_text() == full
    partial = (folder / "table-partial.md").read_text()
    assert partial.startswith("PARTIAL: 8 of 9 runs (math/trl-s2 missing)")
    assert (folder / "curves-partial.png").exists()


def test_store_copies_the_summaries_not_the_models(tmp_path, tiny):
    write_out(tmp_path / "out", "tiny", seeds=(0, 1))
    written = suite_results.store(tmp_path / "out", "tiny", tmp_path / "results")
    assert len(written) == 6
    assert sorted(p.name for p in (tmp_path / "results" / "tiny" / "math").iterdir()) == [
        f"{learner}-s{seed}.json" for learner in LEARNERS for seed in (0, 1)
    ]
    with pytest.raises(suite_results.ReportError, match="3 of 9 runs are not stored"):
        suite_results.complete_runs(tmp_path / "results", "tiny")
    write_out(tmp_path / "out", "tiny", seeds=(2,))
    suite_results.store(tmp_path / "out", "tiny", tmp_path / "results")
    assert len(suite_results.complete_runs(tmp_path / "results", "tiny")) == 9


def test_store_refuses_runs_from_uncommitted_code(tmp_path, tiny):
    write_out(tmp_path / "out", "tiny", change=_set("dirty", True))
    with pytest.raises(suite_results.ReportError, match="math/trl-s2 ran from uncommitted code"):
        suite_results.store(tmp_path / "out", "tiny", tmp_path / "results")
    assert not (tmp_path / "results").exists()


def test_store_refuses_runs_that_could_not_share_the_stored_table(tmp_path, tiny):
    write_out(tmp_path / "out", "tiny", seeds=(0, 1))
    suite_results.store(tmp_path / "out", "tiny", tmp_path / "results")
    write_out(
        tmp_path / "other",
        "tiny",
        seeds=(2,),
        change=lambda r: r["provenance"].update(warm_start="new"),
    )
    with pytest.raises(suite_results.ReportError, match="differ in warm_start"):
        suite_results.store(tmp_path / "other", "tiny", tmp_path / "results")
    assert not (tmp_path / "results" / "tiny" / "math" / "grpo-s2.json").exists()


def test_only_named_experiments_are_stored(tmp_path):
    with pytest.raises(suite_results.ReportError, match="only a named experiment is stored"):
        suite_results.store(tmp_path, suite_tasks.CUSTOM, tmp_path / "results")


# --- the suite's command line --------------------------------------------------------------------


@pytest.mark.parametrize("script", ["learning_suite.py", "learning_suite_report.py"])
def test_help_shows_the_whole_description(script):
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0
    last = [line for line in suite.__doc__.strip().splitlines() if line][-1]
    if script == "learning_suite_report.py":
        last = [line for line in report.__doc__.strip().splitlines() if line][-1]
    assert last.strip() in done.stdout


def report_cli(*argv: str) -> subprocess.CompletedProcess:
    script = ROOT / "benchmarks" / "learning_suite_report.py"
    return subprocess.run(
        [sys.executable, str(script), *argv], capture_output=True, text=True, timeout=120
    )


def test_the_check_command_fails_with_a_one_line_reason(tmp_path):
    docs = tmp_path / "agents.md"
    docs.write_text("<!-- learning-suite:table math-30 -->\nold\n<!-- /learning-suite -->\n")
    experiment = suite_tasks.EXPERIMENTS["math-30"]
    runs = len(experiment.seeds) * len(experiment.learners)
    done = report_cli("--check", "--file", str(docs), "--results", str(tmp_path / "none"))
    assert done.returncode == 1
    assert f"{runs} of {runs} runs are not stored" in done.stdout and "Traceback" not in done.stderr
    done = report_cli("--docs", "--file", str(docs), "--results", str(tmp_path / "none"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"learning suite report: math-30: {runs} of {runs} runs")
    assert docs.read_text().startswith("<!-- learning-suite:table math-30 -->\nold\n")
    done = report_cli("--experiment", "math-31", "--results", str(tmp_path))
    assert done.returncode == 1 and "no experiment 'math-31'" in done.stderr


def parse(*argv: str):
    import argparse

    args = argparse.Namespace(
        experiment=None, tasks=None, learners=None, seeds=None, budget=None, eval_every=None
    )
    for flag, value in zip(argv[::2], argv[1::2]):
        setattr(args, flag, value)
    return args


def test_an_experiment_fixes_its_runs_and_flags_pick_a_part(tiny):
    args = parse("experiment", "tiny", "seeds", "2", "learners", "trl")
    assert suite.plan(args) == (["math"], ["trl"], [2])
    assert (args.budget, args.eval_every) == (30.0, 15.0)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("experiment", "tiny", "seeds", "5"), r"--seeds \[5\] are not in experiment tiny"),
        (("experiment", "tiny", "tasks", "sql"), r"--tasks \['sql'\] are not in experiment tiny"),
        (("experiment", "tiny", "budget", 10.0), "drop --budget/--eval-every"),
        (("seeds", "0,one"), "give integers separated by commas"),
        (("tasks", "chess"), r"unknown task\(s\) \['chess'\]"),
        (("experiment", "math-31"), "unknown experiment 'math-31': choose from math-30, "),
    ],
)
def test_the_plan_refuses_what_the_experiment_does_not_hold(tiny, argv, message):
    with pytest.raises(SystemExit, match=message):
        suite.plan(parse(*argv))


def test_a_run_made_with_other_settings_is_not_resumed(tmp_path):
    run = make_run("math", "grpo", 0, 0.05)
    path = tmp_path / "result.json"
    path.write_text(json.dumps(run))
    origin = run["provenance"]
    same = {key: origin[key] for key in ("settings", "warm_start", "heldout")}
    suite.check_resumable(path, same)  # the same: resumed
    other = json.loads(json.dumps(same))
    other["settings"]["task"]["budget"] = 10.0
    with pytest.raises(SystemExit, match=r"another settings\.task\.budget \(30\.0 vs 10\.0\)"):
        suite.check_resumable(path, other)
    with pytest.raises(SystemExit, match=r"another warm_start"):
        suite.check_resumable(path, {**same, "warm_start": "rebuilt"})
    del run["provenance"]
    path.write_text(json.dumps(run))
    with pytest.raises(SystemExit, match="has no provenance"):
        suite.check_resumable(path, same)


def test_the_warm_start_fingerprint_follows_the_weights_not_the_build_log(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"\x00\x01")
    (tmp_path / "config.json").write_text("{}")
    first = suite_provenance.warm_start_fingerprint(tmp_path)
    (tmp_path / "warm_start.json").write_text('{"history": []}')
    assert suite_provenance.warm_start_fingerprint(tmp_path) == first
    (tmp_path / "model.safetensors").write_bytes(b"\x00\x02")
    assert suite_provenance.warm_start_fingerprint(tmp_path) != first


def test_held_out_tasks_found_for_other_settings_are_refused(tmp_path):
    path = tmp_path / "baseline" / "sql-tasks.json"
    path.parent.mkdir()
    settings = suite_heldout.heldout_settings(suite_tasks.TASKS["sql"])
    path.write_text(json.dumps({"heldout": [1, 2], "settings": settings}))
    assert suite_heldout.heldout_tasks(tmp_path, "sql") == {"heldout": [1, 2]}
    path.write_text(json.dumps({"heldout": [1, 2], "settings": {**settings, "eval_episodes": 3}}))
    with pytest.raises(SystemExit, match="found for other held-out settings"):
        suite_heldout.heldout_tasks(tmp_path, "sql")
    path.write_text(json.dumps({"heldout": [1, 2]}))  # an older suite's
    with pytest.raises(SystemExit, match="delete .*sql\\*"):
        suite_heldout.heldout_tasks(tmp_path, "sql")


def test_tables_name_stored_results_the_same_on_every_checkout(tmp_path):
    stored = suite_results.RESULTS / "math-30"
    assert suite_tables.shown_path(stored) == "benchmarks/results/learning_suite/math-30"
    assert suite_tables.shown_path(tmp_path) == str(tmp_path)
