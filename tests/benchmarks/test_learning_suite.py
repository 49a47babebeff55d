"""The learning suite's self-correction warm start: its demonstrations are episodes of the env
itself, with the right/wrong mix asked for, and only the replies to learn are trained on."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import rlvr  # noqa: F401  (registers the environments)
from rlvr.verifiers.math.extract import find_boxed

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import learning_suite as suite
import learning_suite_demos as suite_demos
import learning_suite_heldout as suite_heldout
import learning_suite_learners as suite_learners
import learning_suite_provenance as suite_provenance
import learning_suite_tasks as suite_tasks
import learning_suite_warm as suite_warm
import learning_suite_worker as suite_worker

TASK = suite_tasks.TASKS["selfcorrect"]


def replay(seed: int, replies: list[str]) -> tuple[list[dict], bool]:
    """The env's messages after playing `replies` on the task of `seed`, and whether it ended."""
    env = gym.make(TASK.env_id, **dict(TASK.kwargs))
    _, info = env.reset(seed=seed)
    terminated = False
    for reply in replies:
        _, _, terminated, _, info = env.step(reply)
    env.close()
    return info["messages"], terminated


@pytest.mark.parametrize(("count", "share"), [(12, 0.25), (10, 0.0), (6, 1.0)])
def test_retry_demos_mix_right_and_wrong_first_attempts_as_configured(count, share):
    demos = suite_warm.retry_demos(TASK, count, share, seed=3)
    assert len(demos) == count
    right = [len(replies) == 1 for _, replies, _ in demos]
    assert sum(right) == round(count * share)
    for messages, replies, learnt in demos:
        assert learnt == replies[-1:]  # only the answer that is right is learnt
        assert [m["role"] for m in messages][-1] == "assistant"


def test_retry_demos_are_the_envs_own_episodes():
    demos = suite_warm.retry_demos(TASK, 16, 0.25, seed=7)
    wrong_first = 0
    for i, (messages, replies, _) in enumerate(demos):
        said = [messages[k]["content"] for k in replies]
        played, terminated = replay(7 + i, said)
        assert terminated
        # the same prompt, feedback and replies, to the character, minus the closing "Correct."
        assert messages == played[: replies[-1] + 1]
        if len(replies) == 2:
            wrong_first += 1
            assert (
                messages[2]["content"] == "Your answer is incorrect.\nTry again (1 attempt left)."
            )
            first, second = (find_boxed(reply)[-1] for reply in said)
            assert first != second and 1 <= abs(int(first) - int(second)) <= 100
            _, ended = replay(7 + i, said[:1])
            assert not ended  # the first attempt really is wrong
    assert wrong_first == 12


def test_retry_demos_are_reproducible_and_seeded():
    demos = suite_warm.retry_demos
    assert demos(TASK, 8, 0.5, seed=1) == demos(TASK, 8, 0.5, seed=1)
    assert demos(TASK, 8, 0.5, seed=1) != demos(TASK, 8, 0.5, seed=2)


def test_retry_demos_reject_a_share_outside_0_1():
    with pytest.raises(ValueError, match="right_share must be in"):
        suite_warm.retry_demos(TASK, 4, 1.5, seed=0)


def test_a_near_miss_needs_an_integer_answer():
    import numpy as np

    rng = np.random.default_rng(0)
    misses = {suite_warm._near_miss("42", rng) for _ in range(200)}
    assert "42" not in misses and all(1 <= abs(int(m) - 42) <= 100 for m in misses)
    with pytest.raises(ValueError, match="integer answers"):
        suite_warm._near_miss("3/4", rng)


def test_a_retry_demo_of_a_choice_task_errs_with_another_option():
    """With options offered, the wrong first attempt is one of them, as a model's would be."""
    choice = suite_tasks.TASKS["selfcorrect-choice"]
    demos = suite_warm.retry_demos(choice, 12, 0.0, seed=5)
    for messages, replies, _ in demos:
        options = re.search(r"Choose from (.+), (.+) and (.+)\.", messages[0]["content"]).groups()
        first, second = (find_boxed(messages[k]["content"])[-1] for k in replies)
        assert first in options and second in options and first != second


def test_only_the_learnt_reply_of_a_demo_is_trained(tmp_path):
    pytest.importorskip("torch")
    from rlvr.agents.hf import HFPolicy
    from tests.agents.support import tiny_model

    policy = HFPolicy(tiny_model(tmp_path / "tiny"))
    messages, replies, learnt = next(d for d in suite_warm.retry_demos(TASK, 8, 0.0, 0))
    ids, mask = suite_demos.episode_ids(policy, messages, replies, learnt)
    everything = suite_demos.episode_ids(policy, messages, replies)
    assert ids == everything[0] and len(mask) == len(ids)
    eos = policy.tokenizer.eos_token_id
    second = [*policy._encode(messages[3]["content"]), eos]
    first = [*policy._encode(messages[1]["content"]), eos]
    assert sum(mask) == len(second) and ids[-len(second) :] == second
    assert mask[-len(second) :] == [1] * len(second)
    assert sum(everything[1]) == len(first) + len(second)


def test_a_one_hunk_fix_becomes_one_replacement_and_others_are_refused():
    head = "--- a/p/m.py\n+++ b/p/m.py\n"
    fix = head + "@@ -2,3 +2,3 @@\n def f(x):\n-    return x < 1\n+    return x <= 1\n"
    assert suite_demos.replacement(fix) == ("return x < 1", "return x <= 1")
    with pytest.raises(ValueError, match="one hunk"):
        suite_demos.replacement(fix + "@@ -9 +9 @@\n-a\n+b\n")
    with pytest.raises(ValueError, match="removes no line"):
        suite_demos.replacement(head + "@@ -1 +1,2 @@\n x\n+y\n")


def test_tool_warm_figures_judge_a_models_episodes(tmp_path):
    # what a ToolMath warm start saves beside its model (both builds end on it)
    pytest.importorskip("torch")
    from rlvr.agents.hf import HFPolicy
    from tests.agents.support import tiny_model

    policy = HFPolicy(tiny_model(tmp_path / "tiny"))
    task = suite_tasks.TASKS["toolmath"]
    env = gym.make(task.env_id, **dict(task.kwargs))
    try:
        calls = [suite_demos.episode_ids(policy, *suite_demos._script(env, env, 0, True))]
    finally:
        env.close()
    probes = [policy.encode_prompt([{"role": "user", "content": "What is 2 + 3?"}])]
    figures = suite_demos.tool_warm_figures(task, policy, probes, calls, episodes=2)
    for name in ("greedy", "sampled"):
        assert figures[f"{name}_accuracy_n"] == 2 and figures[f"{name}_tool_call_rate_n"] == 2
        assert 0.0 <= figures[f"{name}_accuracy"] <= 1.0
    assert 0.0 <= figures["call_probability"] <= 1.0


# --- SCoRe's stages ------------------------------------------------------------------------------


def test_score_stage_one_pays_the_last_attempt_as_score_pays_r_y2():
    """Stage I's env pays the final answer only: a fix earns what a right first answer earns
    (1) and the first attempt nothing of its own; with binary feedback a right first answer is
    kept, so this is SCoRe's r(y2)."""
    stage_one = {**TASK.kwargs, **suite_learners.score_stages("turn_beta")[0].env}

    def rewards(seed: int, replies: list[str]) -> list[float]:
        env = gym.make(TASK.env_id, **stage_one)
        env.reset(seed=seed)
        paid = [float(env.step(reply)[1]) for reply in replies]
        env.close()
        return paid

    env = gym.make(TASK.env_id, **stage_one)
    env.reset(seed=5)
    right = env.unwrapped.oracle_reply()
    env.close()
    wrong = "The answer is \\boxed{-123456}."
    assert rewards(5, [right]) == [1.0]
    assert rewards(5, [wrong, right]) == [0.0, 1.0]
    assert rewards(5, [wrong, wrong]) == [0.0, 0.0]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("learner", "field"),
    [("grpo-score@share=0.5,pg1=1", "grpo"), ("ppo-score@share=0.5,pg1=1", "ppo")],
)
def test_a_staged_run_trains_each_stage_on_its_env_and_config_from_the_last_weights(
    tmp_path, learner, field
):
    pytest.importorskip("torch")
    import argparse

    from tests.agents.support import tiny_model

    tiny_model(tmp_path / "models" / "selfcorrect")
    settings = suite_learners.learner_settings(learner)
    stages = settings.pop("stages")
    kl_field = "turn_beta" if field == "grpo" else "turn_kl_coef"
    assert stages == suite_learners.score_stages(kl_field)
    assert sum(stage.share for stage in stages) == pytest.approx(1.0)
    args = argparse.Namespace(out=str(tmp_path), seed=3, task="selfcorrect")
    folder = tmp_path / "run"
    first = suite_worker._stage_trainer(args, TASK, folder, settings, stages[0], 0, None)
    first.train_step()
    second = suite_worker._stage_trainer(args, TASK, folder, settings, stages[1], 1, first)
    for trainer, stage, seed in (
        (first, stages[0], 3),
        (second, stages[1], 3 + suite_learners.STAGE_SEED),
    ):
        config = trainer.config
        assert config.envs[0].kwargs == {**TASK.kwargs, **stage.env}
        assert config.envs[0].heldout_kwargs == dict(TASK.heldout)  # measured as every run is
        assert getattr(config, field) == dataclasses.replace(settings[field], **stage.learner)
        assert config.seed == seed
    assert first.config.envs[0].kwargs["reward"] == "final"
    pins = [getattr(getattr(trainer.config, field), kl_field)[0] for trainer in (first, second)]
    assert pins[0] > pins[1]  # stage I pins the first attempt harder
    assert second.policy is first.policy and second.step == first.step == 1
    second.train_step()
    steps = [row["step"] for row in map(json.loads, (folder / "metrics.jsonl").open())]
    assert steps == [1, 2]  # one metrics file, its steps counting on across the stages


def test_learners_with_several_settings_keep_them_together():
    assert suite_learners.split_learners("grpo@lr=1e-3,group=4,trl,ppo") == [
        "grpo@lr=1e-3,group=4",
        "trl",
        "ppo",
    ]
    assert suite_learners.split_learners("grpo-score@share=1,pin1=5,grpo") == [
        "grpo-score@share=1,pin1=5",
        "grpo",
    ]


def test_score_settings_rebuild_the_stages_and_are_refused_elsewhere():
    staged = suite_learners.learner_settings("grpo-score@share=1,pin1=5,lr=6e-4")
    assert staged["stages"] == suite_learners.score_stages(
        "turn_beta", stage_one_share=1.0, stage_one_pin=5.0, stage_one_pg=0.0
    )  # the variant's own settings stay unless named
    assert staged["grpo"].lr == 6e-4
    tuned = suite_learners.score_stages("turn_beta", stage_one_share=1.0, stage_one_pg=0.0)
    assert suite_learners.learner_settings("grpo-score")["stages"] == tuned
    assert tuned[0].learner == {"turn_beta": (1.0, 0.0), "turn_pg_weight": (0.0, 1.0)}
    with pytest.raises(SystemExit, match="unknown learner setting 'pin1' in grpo"):
        suite_learners.learner_settings("grpo@pin1=5")


@pytest.mark.parametrize("setting", ["share=0", "share=1.5", "bonus=2", "pin1=-1", "pg1=-0.5"])
def test_bad_score_settings_are_refused_in_one_line(setting):
    with pytest.raises(SystemExit, match="SCoRe: "):
        suite_learners.learner_settings(f"grpo-score@{setting}")


def test_a_runs_recorded_settings_hold_its_stages_and_every_setting():
    """A run's provenance (`run_settings`) names its recipe in full, so that runs of different
    recipes never share a table row (the report's SAME_ROW check compares these)."""
    pytest.importorskip("torch")
    import learning_suite_results as results

    def recorded(learner: str) -> dict:
        return suite_provenance.run_settings("selfcorrect", learner, 90.0, 45.0)["learner"]

    tuned = recorded("grpo-score")
    stage_one = {"turn_beta": [1.0, 0.0], "turn_pg_weight": [0.0, 1.0]}
    assert tuned["stages"] == [{"share": 1.0, "env": {"reward": "final"}, "learner": stage_one}]
    assert tuned["grpo"]["turn_credit"] is True  # the task's own GRPO fields stay
    assert "stages" not in recorded("grpo")
    two = recorded("grpo-score@share=0.5,pg1=1,pin2=0.2,bonus=0.5")
    assert [stage["share"] for stage in two["stages"]] == [0.5, 0.5]
    assert two["stages"][1] == {
        "share": 0.5,
        "env": {"bonus": 0.5, "reward": "shaped"},
        "learner": {"turn_beta": [0.2, 0.0]},
    }
    tweaked = recorded("grpo-score@temp=0.7,mu=4,lr=4e-4,group=8,prompts=4")
    assert (tweaked["temperature"], tweaked["grpo"]["mu"], tweaked["grpo"]["lr"]) == (0.7, 4, 4e-4)
    assert (tweaked["group_size"], tweaked["prompts_per_step"]) == (8, 4)
    assert recorded("ppo-score")["stages"][0]["learner"]["turn_kl_coef"] == [1.0, 0.0]
    where = results.first_difference(tuned, two, "settings.learner")
    assert where is not None and where.startswith("settings.learner.stages")


def test_the_plan_keeps_a_learners_settings_together():
    import argparse

    def plan(**flags):
        fields = ("experiment", "tasks", "learners", "seeds", "budget", "eval_every")
        return suite.plan(argparse.Namespace(**{key: flags.get(key) for key in fields}))

    _, learners, _ = plan(tasks="selfcorrect", learners="grpo-score@share=1,pin1=5,grpo")
    assert learners == ["grpo-score@share=1,pin1=5", "grpo"]
    assert plan(experiment="selfcorrect", learners="grpo-score,trl")[1] == ["grpo-score", "trl"]


def test_a_task_micro_batch_reaches_every_learner_and_only_its_own():
    task = suite_tasks.TASKS["repo-trainsplit"]
    for learner in ("grpo", "ppo", "rloo"):
        settings = suite_learners.our_settings(task, learner)
        assert settings[settings["algo"]].micro_batch_size == task.micro_batch == 16
    assert suite_learners.trl_settings("trl@lr=1e-3", task)["micro_batch"] == 16
    other = suite_tasks.TASKS["math"]
    assert suite_learners.our_settings(other, "grpo")["grpo"].micro_batch_size is None
    assert "micro_batch" not in suite_learners.trl_settings("trl", other)


def test_trl_takes_a_sampling_temperature_and_records_it_only_when_given():
    task = suite_tasks.TASKS["math"]
    assert suite_learners.trl_settings("trl@temp=0.7,lr=1e-4", task)["temperature"] == 0.7
    assert "temperature" not in suite_learners.trl_settings("trl@lr=1e-4", task)
    with pytest.raises(SystemExit, match="use lr, group, prompts, temp"):
        suite_learners.trl_settings("trl@beta=0.1", task)


def test_trl_micro_batches_still_take_one_optimizer_step_per_generated_batch(tmp_path):
    pytest.importorskip("trl")
    import trl_baseline

    from tests.agents import support

    model = support.tiny_model(tmp_path / "model")
    common = dict(
        model_path=str(model),
        env_id="rlvr/Math-v0",
        env_kwargs={},
        seeds=list(range(8)),
        prompts_per_step=4,
        group_size=4,
        max_new_tokens=8,
        lr=1e-4,
        steps=2,
        output_dir=str(tmp_path / "trl"),
    )
    whole = trl_baseline.make_trainer(**common).args
    sliced = trl_baseline.make_trainer(**common, micro_batch=4).args
    assert (whole.per_device_train_batch_size, whole.gradient_accumulation_steps) == (16, 1)
    assert (sliced.per_device_train_batch_size, sliced.gradient_accumulation_steps) == (4, 4)
    # one generated batch of 4 prompts x 4 per optimizer step, either way
    assert whole.generation_batch_size == sliced.generation_batch_size == 16
    for wrong in (5, 0, -4):
        with pytest.raises(ValueError, match="must be a positive divisor"):
            trl_baseline.make_trainer(**common, micro_batch=wrong)
    assert trl_baseline.make_trainer(**common, temperature=0.7).args.temperature == 0.7


FORMS = [(0, "replace"), (1, "replace"), (0, "sed"), (1, "sed")]


def test_repo_demos_are_solved_episodes_and_the_figures_tell_careful_from_hasty():
    # The repo task's warm start mixes two scripted fixers; its figures must tell them apart.
    from types import SimpleNamespace

    task = suite_tasks.TASKS["repo"]
    env = gym.make(task.env_id, **dict(task.kwargs))
    try:  # both edit forms; the script raises if an episode is not solved
        careful = [suite_demos._repo_script(env, seed, True, edit) for seed, edit in FORMS]
        hasty = [suite_demos._repo_script(env, seed, False, edit) for seed, edit in FORMS]
    finally:
        env.close()
    assert '"sed -i ' in careful[-1][0][careful[-1][1][1]]["content"]
    for messages, replies in careful + hasty:
        assert replies and all(messages[i]["role"] == "assistant" for i in replies)
        assert replies[-1] == len(messages) - 1  # the episode ends on the agent's submit

    def figures(demos):
        records = [SimpleNamespace(messages=messages) for messages, _ in demos]
        found = suite_heldout.repo_figures(records)
        return [found[name] for name in ("tests_before_submit", "read_before_edit", "submitted")]

    assert figures(careful) == [0.0, 1.0, 1.0]
    assert figures(hasty) == [0.0, 0.0, 1.0]
    assert figures([(careful[0][0][:1], [])]) == [0.0, 0.0, 0.0]  # the prompt alone: no tool


SOURCE = """def f(a, b):
    x = a[0] + b.c / 2
    y = a[0] - 1
    s = 'it' + "/&" + r'\\d*'
    return x, y, s
"""


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("x = a[0] + b.c / 2", "x = a[1] + b.c / 2"),  # "0" and "a[0]" occur twice
        ("x = a[0] + b.c / 2", "x = a[0] + b.c // 2"),  # "/" inside the pattern
        ("y = a[0] - 1", "y = a[0] + 1"),
        ("s = 'it' + \"/&\" + r'\\d*'", "s = 'it' + \"/&\" + r'\\d+'"),  # quotes, & and \\
        ("return x, y, s", "return y, y, s"),
    ],
)
def test_a_sed_fix_run_by_bash_makes_exactly_the_fix(tmp_path, old, new):
    import subprocess

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(SOURCE)
    command = suite_demos.sed_fix("pkg/mod.py", SOURCE, old, new)
    assert len(command) < len("sed -i '' */mod.py") + 2 * len(old) + 8  # a fragment, not more
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True)
    assert (tmp_path / "pkg" / "mod.py").read_text() == SOURCE.replace(old, new, 1)


def test_a_line_that_occurs_twice_has_no_sed_fix():
    with pytest.raises(ValueError, match="more than once"):
        suite_demos.sed_fix("pkg/mod.py", "x = 1\nx = 1\n", "x = 1", "x = 2")
    with pytest.raises(ValueError, match="spans lines"):
        suite_demos.sed_fix("pkg/mod.py", "x = 1\ny = 2\n", "x = 1\ny = 2", "x = 2\ny = 2")


# --- what stored results are checked against -----------------------------------------------------

STORED = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "learning_suite"


@pytest.mark.parametrize(
    ("stored", "task", "learner", "budget", "eval_every"),
    [
        ("math-30/math/rloo-s11.json", "math", "rloo", 30.0, 15.0),
        ("toolmath/toolmath/ppo-s11.json", "toolmath", "ppo", 90.0, 45.0),
    ],
)
def test_a_runs_settings_are_those_its_stored_result_records(
    stored, task, learner, budget, eval_every
):
    """A stored result is resumed, stored over and tabled beside new runs only while
    `run_settings` gives what it recorded: moving the code must not change a byte of it."""
    pytest.importorskip("torch")
    recorded = json.loads((STORED / stored).read_text())["provenance"]["settings"]
    now = suite_provenance.run_settings(task, learner, budget, eval_every)
    assert json.dumps(now, sort_keys=True) == json.dumps(recorded, sort_keys=True)


def test_the_fingerprints_are_pinned(tmp_path):
    """The warm-start and held-out fingerprints of fixed inputs, as the stored results' were
    made: a change of either hash would refuse every stored run."""
    (tmp_path / "model.safetensors").write_bytes(b"\x00\x01weights")
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "warm_start.json").write_text("{}")  # the build log: not fingerprinted
    assert suite_provenance.warm_start_fingerprint(tmp_path) == "e29148aeb9178bb8"
    heldout = {"heldout": [3, 1, 2], "level_up": [9]}
    assert suite_provenance.heldout_fingerprint(heldout) == "31ab88db07d2f31b"


# --- a run in its own process --------------------------------------------------------------------


@pytest.mark.slow
def test_a_run_is_its_own_process_and_writes_its_result(tmp_path):
    """The suite runs every build, baseline and run as `learning_suite.py --worker` in its own
    process (`spawn`): the math task's baseline and a one-CPU-second GRPO run, on a tiny model
    and two held-out tasks, end in a result.json with the run's provenance."""
    pytest.importorskip("torch")
    import argparse

    from tests.agents.support import tiny_model

    model = tiny_model(tmp_path / "models" / "math")
    found = tmp_path / "baseline" / "math-tasks.json"
    found.parent.mkdir()
    settings = suite_heldout.heldout_settings(suite_tasks.TASKS["math"])
    found.write_text(json.dumps({"heldout": [0, 1], "level_up": [0], "settings": settings}))
    args = argparse.Namespace(out=str(tmp_path), experiment="custom", budget=1.0, eval_every=0.5)
    assert suite.spawn(args, "build", "math")  # built already: nothing to do
    assert suite.spawn(args, "baseline", "math")
    assert suite.spawn(args, "grpo", "math", seed=3)
    folder = suite_worker.run_folder(tmp_path, "custom", "math", "grpo", 3)
    result = json.loads((folder / "result.json").read_text())
    assert (result["task"], result["learner"], result["seed"]) == ("math", "grpo", 3)
    assert result["before"]["accuracy_n"] == result["after"]["accuracy_n"] == 2
    assert result["after"]["level_up_n"] == 1
    assert result["steps"] >= 1 and result["cpu_seconds"] >= 1.0
    origin = result["provenance"]
    assert origin["settings"] == suite_provenance.run_settings("math", "grpo", 1.0, 0.5)
    assert origin["warm_start"] == suite_provenance.warm_start_fingerprint(model)
    assert origin["baseline_repeat_identical"] is True
    assert not suite.spawn(args, "no-such-learner", "math")  # a failed run is reported, not raised


# --- sampled held-out figures and the task's sampling settings ------------------------------------


def test_a_tasks_temperature_and_prompts_reach_every_learner_unless_it_names_its_own():
    task = suite_tasks.TASKS["repo-trainsplit"]
    ours = suite_learners.our_settings(task, "grpo")
    assert (ours["temperature"], ours["prompts_per_step"]) == (task.temperature, task.prompts)
    own = suite_learners.our_settings(task, "grpo@temp=1.0,prompts=16")
    assert (own["temperature"], own["prompts_per_step"]) == (1.0, 16)
    trl = suite_learners.trl_settings("trl", task)
    assert (trl["temperature"], trl["prompts"]) == (task.temperature, task.prompts)
    trl_own = suite_learners.trl_settings("trl@temp=1.0,prompts=16", task)
    assert (trl_own["temperature"], trl_own["prompts"]) == (1.0, 16)
    other = suite_tasks.TASKS["math"]  # sets neither: each learner's own geometry, temperature 1
    plain = suite_learners.our_settings(other, "grpo")
    assert "temperature" not in plain and plain["prompts_per_step"] == 16
    assert "temperature" not in suite_learners.trl_settings("trl", other)


def test_the_sampled_rate_is_a_mean_over_tasks_with_its_error_over_tasks():
    from types import SimpleNamespace

    # two tasks, four samples each: episode i plays task i % 2
    outcomes = [True, False, True, False, True, True, False, False]
    played = [
        SimpleNamespace(episode=i, verdict={"status": "correct" if ok else "wrong"})
        for i, ok in enumerate(outcomes)
    ]
    figures = suite_heldout.per_task_rate("sampled_accuracy", played, tasks=2)
    # task 0 solved 3 of 4, task 1 solved 1 of 4
    assert figures["sampled_accuracy"] == pytest.approx(0.5)
    assert figures["sampled_accuracy_se"] == pytest.approx(0.25)
    assert figures["sampled_accuracy_n"] == 8


def sampled_math(monkeypatch, tmp_path):
    """The math task with two samples a held-out task, a tiny model and two held-out tasks."""
    from tests.agents.support import tiny_model

    task = dataclasses.replace(suite_tasks.TASKS["math"], sampled_eval=2)
    monkeypatch.setitem(suite_tasks.TASKS, "math", task)
    model = tiny_model(tmp_path / "models" / "math")
    found = tmp_path / "baseline" / "math-tasks.json"
    found.parent.mkdir()
    settings = suite_heldout.heldout_settings(task)
    found.write_text(json.dumps({"heldout": [0, 1], "level_up": [0], "settings": settings}))
    return task, model


def test_a_task_with_sampled_eval_measures_its_sampled_rate_before_and_after_only(
    monkeypatch, tmp_path
):
    pytest.importorskip("torch")
    from rlvr.agents.hf import HFPolicy

    task, model = sampled_math(monkeypatch, tmp_path)
    policy = HFPolicy(model)
    heldout = suite_heldout.heldout_tasks(tmp_path, "math")
    ends = suite_heldout.measure(task, policy, heldout, generalisation=True)
    assert ends["sampled_accuracy_n"] == 4 and 0 <= ends["sampled_accuracy"] <= 1
    assert "sampled_accuracy" not in suite_heldout.measure(task, policy, heldout)


def test_a_baseline_without_the_sampled_rate_its_task_asks_for_is_refused(monkeypatch, tmp_path):
    pytest.importorskip("torch")
    _, model = sampled_math(monkeypatch, tmp_path)
    record = {
        "figures": {"accuracy": 0.5},
        "repeat_identical": True,
        "warm_start": suite_provenance.warm_start_fingerprint(model),
        "heldout": suite_provenance.heldout_fingerprint(
            suite_heldout.heldout_tasks(tmp_path, "math")
        ),
    }
    path = tmp_path / "baseline" / "math.json"
    path.write_text(json.dumps(record))
    with pytest.raises(SystemExit, match="no sampled accuracy"):
        suite_worker.load_baseline(tmp_path, "math")
    record["figures"]["sampled_accuracy"] = 0.25
    path.write_text(json.dumps(record))
    assert suite_worker.load_baseline(tmp_path, "math")["figures"]["sampled_accuracy"] == 0.25
