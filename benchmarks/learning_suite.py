"""Does RL teach a tiny model what its demonstrations did not? Four tasks, several seeds, our
GRPO and PPO against TRL's GRPOTrainer from the same warm start, at equal CPU time.

Tasks (each with a tiny Qwen2 built offline and warm-started below its ceiling):

- `math`: rlvr/Math-v0, three procedural families (arithmetic, linear equations, word
  problems) at levels 1 and 2; held-out tasks of the same, and of level 3 to see whether
  anything generalises a level up.
- `toolmath`: rlvr/ToolMath-v0 level 1 (numbers of 3-4 digits multiplied and added), from a
  natural warm start: supervised for a fixed number of steps on demonstrations of which half
  call the calculator and half answer directly (the right number, which a model this size
  cannot compute), so it calls on some problems and guesses on others. What RL changes: the
  tool-call rate and accuracy; 90 training CPU s per run, evaluated every 45.
- `toolmath-suppressed` (a labelled experiment, not run by default): "recover a suppressed
  skill". The warm start learnt calculator episodes until its sampled calls were right, then
  direct answers until greedy decoding stopped calling (knife-edge: where that stop falls
  decides what RL starts from); RL must bring the call back.
- `selfcorrect`: rlvr/MathSelfCorrect-v0 over the math task's families (two attempts, binary
  feedback, SCoRe-style shaped reward: `reward="shaped"`, `bonus=0.5`), 90 training CPU
  seconds; our GRPO credits each attempt with its own reward-to-go (`turn_credit`). Its warm
  start is the math task's, then supervised on two-attempt episodes of the env itself
  (`build_retry_model`): a wrong first attempt (a near miss of the answer, not trained on),
  the feedback, and the right answer; and some right first attempts. It stops as soon as the
  second attempt beats the first by a little, below its ceiling. Accuracy after the second
  attempt, and the SCoRe measure: second-attempt accuracy minus first-attempt accuracy,
  before and after, with how often the second answer repeats the first and fixes it.
- `sql`: rlvr/SQL-v0 level 1 (filters on one table) on one domain's schema (flights), without
  example rows, 2000 databases, both splits stratified by question template (`stratify`);
  warm start supervised on reference queries. Its held-out questions carry values no
  training question has (the split is by prompt), so only the templates with many values
  have any (a distance count and a year range) and accuracy needs the model to copy a number
  from the question (docs/agents.md). 120 training CPU s per run, every learner at lr 4e-4
  (`Task.lr`).

Each run (task x learner x seed) is its own process with one torch thread, trains for the same
budget of the process's own CPU seconds spent in training steps (rollouts and updates; the
held-out evaluations are excluded), so other work on a shared machine slows a run without
shortening its budget; wall seconds are reported too. Runs are ordered seed by seed, the
learners' order rotating, so that load drift hits every learner alike. Every run is evaluated
on the same held-out tasks, greedily, every `--eval-every` CPU seconds and at the end.

Each run writes out/runs/<experiment>/<task>/<learner>-s<seed>/result.json as it finishes (the
suite resumes where it stopped, and refuses to resume runs made with other settings, another
warm start or held-out set), with its provenance: the commit and whether tracked files had
uncommitted changes, fingerprints of the warm start's files and of the held-out task list,
every task and learner setting (`run_settings`), library versions, the seed. Named experiments
(`EXPERIMENTS`: `math-30`, `math-120`, `math-300`, `selfcorrect`, `toolmath`, `sql`,
`ablation`) fix the tasks, learners, seeds and budget of one table of docs/agents.md:

    .venv/bin/python benchmarks/learning_suite.py --experiment math-30      # run it
    .venv/bin/python benchmarks/learning_suite.py --experiment math-30 --store  # keep results
    .venv/bin/python benchmarks/learning_suite_report.py --docs  # every table and plot in docs
    .venv/bin/python benchmarks/learning_suite.py --tasks math --seeds 0 --budget 10  # a try
    .venv/bin/python benchmarks/learning_suite.py --report-only  # --out's table and plot again

`--store` copies the finished runs' result.json (no models) into
benchmarks/results/learning_suite/<experiment>/<task>/<learner>-s<seed>.json, from committed
code only; the report makes docs/agents.md's learning tables and plots from those alone, and
only from complete experiments (`learning_suite_report.py`). A report of an unfinished --out
folder goes to out/reports/<experiment>/table-partial.md, never over table.md.

The warm starts are built once into `--out`/models (ToolMath's takes ~30 CPU minutes) and
shared by every experiment in that --out. SCoRe's stages on the self-correction task
(`score_stages`) are the learners `grpo-score` and `ppo-score`; `--experiment selfcorrect` runs
`grpo-score` beside `grpo`, `ppo` and `trl`.

Needs the `bench` extra for TRL: pip install -e '.[agents,bench]' -c .ci/constraints.txt
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EVAL_SEED = 1_000_003
MIX = ["arithmetic", "linear", "word_problems"]
# One domain's schema (with all five the warm start was at 0/64 after 300 steps), many
# databases, so that training questions' numbers vary as held-out ones do, and splits
# stratified by template: unstratified, 98% of the held-out set was one template, 21% of the
# training prompts (docs/agents.md).
SQL = {"domains": ["flights"], "sample_rows": 0, "databases_per_domain": 2000, "stratify": True}


# --- the tasks -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """One task of the suite: the env, its held-out split, the completion budget, the warm start
    and what is measured."""

    title: str
    env_id: str
    kwargs: Mapping[str, Any]
    heldout: Mapping[str, Any]
    max_new_tokens: int
    eval_episodes: int
    threshold: float
    """Time-to-threshold: CPU seconds until held-out accuracy first reaches before + this."""
    max_turns: int | None = None
    generalisation: Mapping[str, Any] | None = None
    """Held-out kwargs of a harder level, measured before and after only."""
    budget: float = 30.0
    """Training CPU seconds per run (`--budget` overrides it for every task)."""
    eval_every: float = 15.0
    """Training CPU seconds between held-out evaluations (`--eval-every` overrides it)."""
    warm: Mapping[str, Any] = field(default_factory=dict)
    """How the model is built: {"kind": "tiny", "target": ...}, {"kind": "tool", ...},
    {"kind": "retry", "from": other task, ...} (`build_retry_model`), or {"kind": "same", "as":
    other task}."""
    grpo: Mapping[str, Any] = field(default_factory=dict)
    """GRPOConfig fields of our GRPO learners on this task (e.g. per-turn credit on a
    multi-turn task)."""
    lr: float | None = None
    """Learning rate of every learner, ours and TRL's, on this task (None: `LR`); a learner's
    own `NAME@lr=X` still wins."""


# The two ToolMath tasks differ only in their warm start (and title).
TOOLMATH: dict[str, Any] = {
    "env_id": "rlvr/ToolMath-v0",
    "kwargs": {"difficulty": 1},
    "heldout": {"difficulty": 1, "split": "test"},
    "max_new_tokens": 48,
    "max_turns": 3,
    "eval_episodes": 400,
    "threshold": 0.2,
    "budget": 90.0,
    "eval_every": 45.0,
}
TOOLMATH_MODEL = {"hidden_size": 128, "intermediate_size": 512, "heads": 8, "kv_heads": 4}
TASKS: dict[str, Task] = {
    "math": Task(
        title="Math-v0, 3 families, levels 1-2",
        env_id="rlvr/Math-v0",
        kwargs={"families": MIX, "difficulty": [1, 2]},
        heldout={"families": MIX, "difficulty": [1, 2], "split": "test"},
        generalisation={"families": MIX, "difficulty": 3, "split": "test"},
        max_new_tokens=16,
        eval_episodes=1000,
        threshold=0.05,
        warm={"kind": "tiny", "target": 0.3, "steps": 3000},
    ),
    "toolmath": Task(
        title="ToolMath-v0 level 1 (calculator), natural warm start",
        **TOOLMATH,
        warm={
            "kind": "tool-mix",
            "model": TOOLMATH_MODEL,
            "demos": 8000,
            "call_share": 0.5,
            "lr": 1e-3,
            "batch": 32,
            # ~1.3 CPU s a step here: 1000 steps is ~25 CPU minutes
            "steps": 1000,
        },
    ),
    "toolmath-suppressed": Task(
        title="ToolMath-v0 level 1, recover a suppressed skill",
        **TOOLMATH,
        warm={
            "kind": "tool",
            "model": TOOLMATH_MODEL,
            "demos": 20000,
            "lr": 1e-3,
            "batch": 32,
            "tool_steps": 8000,
            "tool_target": 0.85,
            "direct_steps": 1000,
            "direct_lr": 3e-5,
            "direct_tool_share": 0.1,
            "greedy_calls": 0.02,
        },
    ),
    "selfcorrect": Task(
        title="MathSelfCorrect-v0 (2 attempts, shaped)",
        env_id="rlvr/MathSelfCorrect-v0",
        kwargs={
            "env_kwargs": {"families": MIX, "difficulty": [1, 2]},
            "max_attempts": 2,
            "reward": "shaped",
            "bonus": 0.5,
        },
        heldout={
            "env_kwargs": {"families": MIX, "difficulty": [1, 2], "split": "test"},
            "max_attempts": 2,
            "reward": "shaped",
            "bonus": 0.5,
        },
        max_new_tokens=16,
        max_turns=2,
        eval_episodes=1000,
        threshold=0.05,
        budget=90.0,
        eval_every=45.0,
        warm={
            "kind": "retry",
            "from": "math",
            "demos": 4000,
            "right_share": 0.25,
            "lr": 1e-3,
            "batch": 64,
            "steps": 400,
            "eval_every": 20,
            "eval_episodes": 200,
            "delta_target": 0.06,
            "first_cap": 0.36,
        },
        grpo={"turn_credit": True},
    ),
    "sql": Task(
        title="SQL-v0 level 1, flights (SQLite)",
        env_id="rlvr/SQL-v0",
        kwargs={**SQL, "difficulty": 1},
        heldout={**SQL, "difficulty": 1, "split": "test"},
        max_new_tokens=48,
        eval_episodes=400,
        threshold=0.05,
        # 120 CPU s and lr 4e-4 for every learner (docs/agents.md: at 60 s and 2e-4, ~16
        # steps, nothing moved).
        budget=120.0,
        eval_every=60.0,
        lr=4e-4,
        warm={
            "kind": "schema",
            "target": 0.25,
            "steps": 2000,
            "eval_every": 100,
            "per_schema": 32,
            "lr": 3e-3,
            "demos": 8000,
            "vocab": 1024,
            "max_positions": 512,
        },
    ),
    "repo": Task(
        title="Repo-v0 level 1, grid domain: inspect before fixing",
        env_id="rlvr/Repo-v0",
        kwargs={"difficulty": 1, "domains": ["grid"], "max_turns": 6},
        heldout={"difficulty": 1, "domains": ["grid"], "max_turns": 6, "split": "test"},
        max_new_tokens=256,
        max_turns=6,
        eval_episodes=100,
        threshold=0.1,
        budget=600.0,
        eval_every=300.0,
        warm={
            "kind": "repo-mix",
            "model": {
                "hidden_size": 128,
                "intermediate_size": 512,
                "heads": 8,
                "kv_heads": 4,
                "vocab_size": 2048,
                "max_positions": 4096,
            },
            "demos": 1000,
            "careful_share": 0.5,
            "lr": 1e-3,
            "batch": 8,
            "steps": 800,
        },
    ),
}

# The tasks run when --tasks is not given (the labelled experiments are asked for by name).
DEFAULT_TASKS = ["math", "toolmath", "selfcorrect", "sql"]

# --- the learners --------------------------------------------------------------------------------

LR = 2e-4
GRPO_GEOMETRY = {"prompts_per_step": 16, "group_size": 8}
PPO_GEOMETRY = {"prompts_per_step": 32, "group_size": 4}


def learner_settings(name: str, lr: float | None = None) -> dict[str, Any]:
    """TrainConfig fields of one of our learners (`grpo`, `ppo`, `rloo`, and the variants
    measured for the features: `grpo-base` is GRPO without them; `grpo-score` and `ppo-score`
    train in SCoRe's stages, under the key "stages") at learning rate `lr` (None: `LR`).
    `NAME@lr=X,group=G,prompts=P,temp=T` changes the learning rate, the batch geometry and the
    rollouts' sampling temperature of any of them (`mu=M`: GRPO's passes per batch); a SCoRe
    learner also takes `share`, `pin1`, `pin2`, `bonus`, `pg1` (`score_stages`'s
    stage_one_share, stage_one_pin, stage_two_pin, stage_two_bonus, stage_one_pg)."""
    import dataclasses

    name, _, changes = name.partition("@")
    settings = _variant(name, LR if lr is None else lr)
    score = settings.pop("score", None)
    for change in filter(None, changes.split(",")):
        key, _, value = change.partition("=")
        if key == "lr":
            algo = settings["algo"]
            settings[algo] = dataclasses.replace(settings[algo], lr=float(value))
        elif key == "mu" and settings["algo"] == "grpo":
            settings["grpo"] = dataclasses.replace(settings["grpo"], mu=int(value))
        elif key in ("group", "prompts"):
            settings["group_size" if key == "group" else "prompts_per_step"] = int(value)
        elif key == "temp":
            settings["temperature"] = float(value)
        elif score is not None and key in SCORE_SETTINGS:
            score[SCORE_SETTINGS[key]] = float(value)
        else:
            mu = ["mu"] if settings["algo"] == "grpo" else []
            allowed = ", ".join(
                ["lr", "group", "prompts", "temp", *mu, *(SCORE_SETTINGS if score else ())]
            )
            raise SystemExit(f"unknown learner setting {key!r} in {name}: use {allowed}")
    if score is not None:
        settings["stages"] = score_stages(**score)
    return settings


SCORE_SETTINGS = {
    "share": "stage_one_share",
    "pin1": "stage_one_pin",
    "pin2": "stage_two_pin",
    "bonus": "stage_two_bonus",
    "pg1": "stage_one_pg",
}
"""The `NAME@...` keys of a SCoRe learner and the `score_stages` arguments they set."""


def trl_settings(name: str, lr: float | None = None) -> dict[str, Any]:
    """TRL's learning rate and batch geometry: our GRPO's (learning rate `lr`, None: `LR`), or
    as `trl@lr=X,group=G,prompts=P` says."""
    settings: dict[str, Any] = {
        "lr": LR if lr is None else lr,
        "group": GRPO_GEOMETRY["group_size"],
        "prompts": GRPO_GEOMETRY["prompts_per_step"],
    }
    for change in filter(None, name.partition("@")[2].split(",")):
        key, _, value = change.partition("=")
        if key not in settings:
            raise SystemExit(f"unknown TRL setting {key!r} in {name}: use lr, group, prompts")
        settings[key] = float(value) if key == "lr" else int(value)
    return settings


def our_settings(task: Task, learner: str) -> dict[str, Any]:
    """TrainConfig fields of our learner `learner` on `task`: its variant at the task's learning
    rate, with the task's own GRPO fields (`Task.grpo`)."""
    import dataclasses

    settings = learner_settings(learner, task.lr)
    if settings["algo"] == "grpo":
        settings["grpo"] = dataclasses.replace(settings["grpo"], **task.grpo)
    return settings


def _variant(name: str, lr: float) -> dict[str, Any]:
    from rlvr.agents.curriculum import CurriculumConfig
    from rlvr.agents.learners.grpo import GRPOConfig
    from rlvr.agents.learners.ppo import PPOConfig
    from rlvr.agents.learners.rloo import RLOOConfig

    base = {"algo": "grpo", **GRPO_GEOMETRY, "grpo": GRPOConfig(lr=lr)}
    variants: dict[str, dict[str, Any]] = {
        "grpo": {**base, "dynamic_sampling": True},
        "grpo-base": base,
        "grpo-ds": {**base, "dynamic_sampling": True},
        "grpo-overlong": {**base, "grpo": GRPOConfig(lr=lr, overlong_buffer=4)},
        "grpo-curriculum": {**base, "curriculum": CurriculumConfig(levels=(1, 2), window=256)},
        "ppo": {"algo": "ppo", **PPO_GEOMETRY, "ppo": PPOConfig(lr=lr)},
        # GRPO's geometry and dynamic sampling: the two differ only in the update
        "rloo": {**base, "algo": "rloo", "dynamic_sampling": True, "rloo": RLOOConfig(lr=lr)},
    }
    # SCoRe's stage I (`score_stages`, built by `learner_settings`) as tuned on seeds 0-2 of the
    # self-correction task (docs/agents.md): the whole budget, the second attempt alone trained
    # (`turn_pg_weight` (0, 1)), the first pinned by KL weight 1; GRPO with 16 samples of 8 tasks
    # a step (more second attempts per task). `NAME@share=0.5,pg1=1` is the paper's two stages.
    tuned = {"stage_one_share": 1.0, "stage_one_pg": 0.0}
    variants["grpo-score"] = {
        **variants["grpo"],
        "prompts_per_step": 8,
        "group_size": 16,
        "score": {"kl_field": "turn_beta", **tuned},
    }
    variants["ppo-score"] = {**variants["ppo"], "score": {"kl_field": "turn_kl_coef", **tuned}}
    if name not in variants:
        raise SystemExit(f"unknown learner {name!r}; choose from {sorted(variants)} or trl")
    return variants[name]


# How tables and plots name a learner (learning_suite_report.py uses these too)
LABELS = {
    "grpo": "rlvr GRPO",
    "ppo": "rlvr PPO",
    "rloo": "rlvr RLOO",
    "trl": "TRL GRPOTrainer",
    "grpo-score": "rlvr GRPO, SCoRe",
    "ppo-score": "rlvr PPO, SCoRe",
}


@dataclass(frozen=True)
class Stage:
    """One stage of a learner's staged recipe: `share` of the run's budget on the task's env
    with `env` changed in its training kwargs (held-out evaluation is the task's), and the
    learner's config with `learner` changed. A stage starts from the weights the last one left,
    with a fresh optimizer; its KL terms (if any) pull towards those weights."""

    share: float
    env: Mapping[str, Any] = field(default_factory=dict)
    learner: Mapping[str, Any] = field(default_factory=dict)


ONE_STAGE = (Stage(1.0),)
STAGE_SEED = 1_000
"""Stage k of a run of seed s trains with seed s + k * STAGE_SEED (other tasks, other samples)."""


def score_stages(
    kl_field: str,
    stage_one_share: float = 0.5,
    stage_one_pin: float = 1.0,
    stage_two_pin: float = 0.1,
    stage_two_bonus: float = 1.0,
    stage_one_pg: float = 1.0,
) -> tuple[Stage, ...]:
    """SCoRe (Kumar et al., 2024) on the self-correction task, for the learner whose per-turn
    KL field is `kl_field` (`GRPOConfig.turn_beta`, `PPOConfig.turn_kl_coef`).

    Stage I (`stage_one_share` of the budget): the reward is the last attempt's
    (`reward="final"`: with binary feedback a right first answer is kept, so this is SCoRe's
    r(y2)), and a KL weight `stage_one_pin` on the first attempt's ids (0 on the second's) keeps
    the first attempt near the warm start: the second attempt must do the learning.
    Stage II (the rest): both attempts trained on the env's shaped reward with
    `stage_two_bonus` for the improvement (at most 1: above, a fix would pay more than a right
    first answer), the first attempt pinned by `stage_two_pin` to where stage I left it.
    `stage_one_pg` < 1 scales the first attempt's policy gradient in stage I
    (`turn_pg_weight` of either learner; 0: the second attempt alone is trained).
    """
    if not 0 < stage_one_share <= 1 or not 0 <= stage_two_bonus <= 1:
        raise SystemExit(
            f"SCoRe: need 0 < share <= 1 and 0 <= bonus <= 1, got share={stage_one_share}, "
            f"bonus={stage_two_bonus}"
        )
    if min(stage_one_pin, stage_two_pin, stage_one_pg) < 0:
        raise SystemExit("SCoRe: pin1, pin2 and pg1 are weights: give values >= 0")
    learner: dict[str, Any] = {kl_field: (stage_one_pin, 0.0)}
    if stage_one_pg != 1.0:
        learner["turn_pg_weight"] = (stage_one_pg, 1.0)
    stage_one = Stage(stage_one_share, env={"reward": "final"}, learner=learner)
    if stage_one_share >= 1.0:
        return (stage_one,)
    stage_two = Stage(
        1.0 - stage_one_share,
        env={"reward": "shaped", "bonus": stage_two_bonus},
        learner={kl_field: (stage_two_pin, 0.0)},
    )
    return stage_one, stage_two


# --- held-out measurements -----------------------------------------------------------------------


def measure(
    task: Task, policy: Any, heldout: Mapping[str, list[int]], *, generalisation: bool = False
) -> dict[str, Any]:
    """Greedy held-out figures of `policy` on `task`: accuracy with its binomial standard error,
    and the task's own figures (tool-call rate, first-attempt accuracy, a level up). `heldout`
    holds the task indexes evaluated (`heldout_tasks`)."""
    from rlvr.agents.policy import SamplingParams
    from rlvr.rollout.episodes import evaluate

    sampling = SamplingParams(temperature=0.0, max_new_tokens=task.max_new_tokens)

    def run(kwargs: Mapping[str, Any], indexes: list[int]) -> Any:
        return evaluate(
            task.env_id,
            policy,
            episodes=len(indexes),
            seed=EVAL_SEED,
            batch_size=min(len(indexes), 500),
            sampling=sampling,
            env_kwargs=kwargs,
            reset_options=lambda episode: {"task_index": indexes[episode]},
        )

    report = run(task.heldout, heldout["heldout"])
    judged = report.judged
    correct = [_solved(record) for record in judged]
    figures: dict[str, Any] = {**_rate("accuracy", correct), "infra_errors": report.infra_errors}
    if task.env_id == "rlvr/ToolMath-v0":
        figures |= _rate("tool_call_rate", [_called_a_tool(record) for record in judged])
    if task.env_id == "rlvr/MathSelfCorrect-v0":
        figures |= self_correction(judged, correct)
    if task.env_id == "rlvr/Repo-v0":
        figures |= repo_figures(judged)
    if generalisation and task.generalisation is not None:
        harder = run(task.generalisation, heldout["level_up"])
        figures |= _rate("level_up", [_solved(record) for record in harder.judged])
    figures["fingerprint"] = _fingerprint(judged)
    return figures


def heldout_tasks(out: Path, name: str) -> dict[str, list[int]]:
    """The held-out task indexes of a task (and of its level up): the first `eval_episodes`
    distinct tasks of the split (`rlvr.rollout.distinct_tasks`), found once and kept in
    out/baseline/<task>-tasks.json with the settings they were found for; a file found for
    other settings (a changed `eval_episodes` or split) is refused, not reused."""
    path = out / "baseline" / f"{name}-tasks.json"
    task = TASKS[name]
    wanted = heldout_settings(task)
    if not path.exists():
        from rlvr.rollout.tasks import distinct_tasks

        def first(kwargs: Mapping[str, Any]) -> list[int]:
            return distinct_tasks(task.env_id, task.eval_episodes, env_kwargs=kwargs, pin=True)

        found = {"heldout": first(task.heldout)}
        if task.generalisation is not None:
            found["level_up"] = first(task.generalisation)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**found, "settings": wanted}) + "\n")
    stored = json.loads(path.read_text())
    if stored.pop("settings", None) != wanted:
        raise SystemExit(
            f"{path} was found for other held-out settings than {name}'s now: delete "
            f"{out / 'baseline'}/{name}* to find the tasks and measure the warm start again"
        )
    return stored


def heldout_settings(task: Task) -> dict[str, Any]:
    """What decides a task's held-out set."""
    return _jsonable(
        {
            "env_id": task.env_id,
            "heldout": task.heldout,
            "generalisation": task.generalisation,
            "eval_episodes": task.eval_episodes,
        }
    )


def self_correction(records: Sequence[Any], solved: Sequence[bool]) -> dict[str, float]:
    """SCoRe's figures of self-correction episodes (`solved`: whether each ends correct):
    first-attempt accuracy, `delta` = accuracy after the last attempt minus after the first
    (with the standard error of the paired difference), and among episodes given a second
    attempt, how often its answer repeats the first's (`repeat_rate`) or fixes it (`fix_rate`).
    """
    first = [_first_attempt_right(record) for record in records]
    differences = [int(end) - int(start) for end, start in zip(solved, first)]
    n = len(differences)
    delta = sum(differences) / n if n else math.nan
    spread = sum((d - delta) ** 2 for d in differences) / (n - 1) if n > 1 else math.nan
    answers = [_answers(record) for record in records]
    retried = [(tried, end) for tried, end in zip(answers, solved) if len(tried) > 1]
    return {
        **_rate("first_attempt", first),
        "delta": delta,
        "delta_se": math.sqrt(spread / n) if n > 1 else math.nan,
        **_rate("repeat_rate", [tried[1] == tried[0] for tried, _ in retried]),
        **_rate("fix_rate", [end for _, end in retried]),
    }


def repo_figures(records: Sequence[Any]) -> dict[str, float]:
    """How a repository episode went about it: the share that ran the tests before submitting,
    that read a file before patching, and that submitted at all."""
    tests_first, read_first, submitted = [], [], []
    for record in records:
        names = _tool_names(record)
        submit = names.index("submit") if "submit" in names else len(names)
        edits = [i for i, name in enumerate(names) if name in EDITS]
        tests_first.append("run_tests" in names[:submit] and "submit" in names)
        read_first.append(bool(edits) and "read_file" in names[: edits[0]])
        submitted.append("submit" in names)
    return (
        _rate("tests_before_submit", tests_first)
        | _rate("read_before_edit", read_first)
        | _rate("submitted", submitted)
    )


EDITS = ("apply_patch", "write_file", "replace_in_file")


def _tool_names(record: Any) -> list[str]:
    """The tools an episode called, in order."""
    from rlvr.envs.tools.parsing import parse_tool_calls

    replies = [m["content"] for m in record.messages if m.get("role") == "assistant"]
    return [call.name for reply in replies for call in parse_tool_calls(reply).calls]


def _first_attempt_right(record: Any) -> bool:
    """Whether the first attempt was judged right: with binary feedback a right first attempt
    ends the episode paid 1, in either reward mode, and a wrong one is paid less."""
    return record.rewards[0] >= 1.0 - 1e-9


def _answers(record: Any) -> list[str]:
    """The final answer of each attempt: its last \\boxed{} content, else the reply stripped."""
    from rlvr.verifiers.math.extract import find_boxed

    replies = [m["content"] for m in record.messages if m.get("role") == "assistant"]
    return [(find_boxed(reply) or [reply])[-1].strip() for reply in replies]


def _solved(record: Any) -> bool:
    """The episode ends with a correct answer (the verdict of the last attempt)."""
    return bool(record.verdict) and record.verdict.get("status") == "correct"


def _called_a_tool(record: Any) -> bool:
    from rlvr.envs.tools.parsing import parse_tool_calls

    replies = [m["content"] for m in record.messages if m.get("role") == "assistant"]
    return any(parse_tool_calls(reply).is_tool_turn for reply in replies)


def _rate(name: str, outcomes: Sequence[bool]) -> dict[str, float]:
    n = len(outcomes)
    p = sum(outcomes) / n if n else math.nan
    return {name: p, f"{name}_se": math.sqrt(p * (1 - p) / n) if n else math.nan, f"{name}_n": n}


def _fingerprint(records: Sequence[Any]) -> str:
    """A hash of every held-out reply: two evaluations of the same weights must give the same."""
    import hashlib

    text = json.dumps([record.messages for record in records], sort_keys=True)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


# --- warm starts ---------------------------------------------------------------------------------


def model_folder(out: Path, name: str) -> Path:
    task = TASKS[name]
    if task.warm.get("kind") == "same":
        return model_folder(out, task.warm["as"])
    return out / "models" / name


def build_model(out: Path, name: str) -> None:
    """The warm-started tiny model of a task, built once into out/models/<task>."""
    task = TASKS[name]
    folder = model_folder(out, name)
    if (folder / "config.json").exists():
        return
    started = time.perf_counter()
    if task.warm["kind"] == "tool":
        build_tool_model(task, folder)
    elif task.warm["kind"] == "tool-mix":
        build_tool_mix_model(task, folder)
    elif task.warm["kind"] == "repo-mix":
        build_repo_mix_model(task, folder)
    elif task.warm["kind"] == "retry":
        build_model(out, task.warm["from"])
        build_retry_model(task, model_folder(out, task.warm["from"]), folder)
    elif task.warm["kind"] == "schema":
        build_schema_model(task, folder)
    else:
        from rlvr.agents.tiny import WarmStartConfig, build_tiny

        warm = WarmStartConfig(
            steps=task.warm["steps"],
            target_accuracy=task.warm["target"],
            eval_episodes=200,
            eval_every=25,
        )
        build_tiny(
            task.env_id,
            folder,
            env_kwargs=task.kwargs,
            heldout_kwargs=task.heldout,
            warm=warm,
            seed=0,
            log=print,
        )
    print(f"built {folder} in {time.perf_counter() - started:.0f} s", flush=True)


class ToolDemos:
    """What both ToolMath warm starts train from: a fresh tiny model and tokenizer, calculator
    episodes (`calls`: the call, then the answer it gives) and direct answers (`direct`: the
    right number in `\\boxed{}`, which a model this size cannot compute), as (ids, mask), and
    probe prompts for the chance that a reply starts with a call. Every example starts with the
    same system prompt (the tool's description, ~450 ids): it is run once per batch and shared,
    as in the learners' forward."""

    def __init__(self, task: Task, direct_count: int) -> None:
        import gymnasium as gym

        from rlvr.agents.hf import HFPolicy
        from rlvr.agents.tiny import TinyModelConfig, build_model, train_tokenizer

        warm = task.warm
        env = gym.make(task.env_id, **dict(task.kwargs))
        oracle = gym.make(task.env_id, **dict(task.kwargs))
        texts = []
        for seed in range(1_000_000, 1_000_500):
            texts += [m["content"] for m in _script(env, oracle, seed, use_tool=True)[0]]
        shape = TinyModelConfig(**warm.get("model", {}))
        tokenizer = train_tokenizer(texts, shape.vocab_size)
        self.policy = HFPolicy(build_model(tokenizer, shape, seed=0), tokenizer, seed=0)
        self.calls, self.direct = (
            [_episode_ids(self.policy, *_script(env, oracle, seed, kind)) for seed in range(count)]
            for kind, count in ((True, warm["demos"]), (False, direct_count))
        )
        self.probes = [
            self.policy.encode_prompt(_script(env, oracle, seed, True)[0][:2])
            for seed in range(900_000, 900_064)
        ]

    def train(
        self,
        optimizer: Any,
        rng: Any,
        batch: int,
        call_share: float,
        steps: int,
        done: Callable[[], bool] | None = None,
        every: int = 100,
    ) -> int:
        """Up to `steps` supervised steps on batches of `batch` episodes, each a calculator
        episode with chance `call_share`; `done` (if given) is asked every `every` steps and
        stops it. Returns the steps taken."""
        policy = self.policy
        policy.model.train()
        for step in range(steps):
            if done is not None and step % every == 0 and done():
                return step
            calls = int(rng.binomial(batch, call_share))
            picked = [self.calls[i] for i in rng.choice(len(self.calls), calls, replace=False)]
            picked += [
                self.direct[i] for i in rng.choice(len(self.direct), batch - calls, replace=False)
            ]
            loss = _shared_prefix_loss(policy, picked)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if step % 100 == 0:
                print(f"tool warm-start step {step}: loss {loss.item():.3f}", flush=True)
        return steps

    def save(self, task: Task, folder: Path, **extra: Any) -> None:
        """The model, and what RL starts from (`tool_warm_figures`) in `warm_start.json`."""
        self.policy.model.eval()
        self.policy.save(folder)
        figures = tool_warm_figures(task, self.policy, self.probes, self.calls) | extra
        print(f"tool warm start: {json.dumps(figures)}", flush=True)
        (folder / "warm_start.json").write_text(json.dumps(figures, indent=1) + "\n")


def build_tool_mix_model(task: Task, folder: Path) -> None:
    """ToolMath's natural warm start: one supervised phase on demonstrations of which a share
    `call_share` use the calculator and the rest answer directly, for a fixed `steps` steps (no
    stopping rule on what the model does). It calls on some problems and answers in its head on
    others, as a model fine-tuned on mixed data would; RL must find which pays."""
    import numpy as np
    import torch

    warm = task.warm
    demos = ToolDemos(task, direct_count=warm["demos"])
    optimizer = torch.optim.AdamW(demos.policy.trainable_parameters(), lr=warm["lr"])
    rng = np.random.default_rng(0)

    def progress() -> bool:  # printed only: the phase runs its fixed steps whatever it shows
        judged = _quick_records(task, demos.policy, 64, 1.0)
        called = [record for record in judged if _called_a_tool(record)]
        right = sum(_solved(record) for record in called)
        print(f"tool mix warm-start: sampled, {len(called)}/64 call, {right} of them right")
        demos.policy.model.train()
        return False

    demos.train(optimizer, rng, warm["batch"], warm["call_share"], warm["steps"], progress, 250)
    demos.save(task, folder, steps=warm["steps"])


class RepoDemos(ToolDemos):
    """Repo-v0's scripted demonstrations, in the two pools `ToolDemos.train` mixes: `calls`, the
    careful fixer (the env's oracle: run the tests, read the file, apply the reference fix, run
    the tests, submit) and `direct`, the hasty one (apply the reference fix, submit), both
    played in the env so that tool results are the real ones. Both fix every task; what the
    hasty one lacks is the file's lines in view when it writes the patch, which a model this
    size must then recall instead of copy."""

    def __init__(self, task: Task) -> None:  # fills the pools its own way: no super().__init__
        import gymnasium as gym

        from rlvr.agents.hf import HFPolicy
        from rlvr.agents.tiny import TinyModelConfig, build_model, train_tokenizer

        warm = task.warm
        env = gym.make(task.env_id, **dict(task.kwargs))
        try:
            careful = [_repo_script(env, seed, careful=True) for seed in range(warm["demos"])]
            hasty = [_repo_script(env, seed, careful=False) for seed in range(warm["demos"])]
        finally:
            env.close()
        texts = [m["content"] for messages, _ in careful[:300] for m in messages]
        shape = TinyModelConfig(**warm.get("model", {}))
        tokenizer = train_tokenizer(texts, shape.vocab_size)
        self.policy = HFPolicy(build_model(tokenizer, shape, seed=0), tokenizer, seed=0)
        self.calls = [_episode_ids(self.policy, *demo) for demo in careful]
        self.direct = [_episode_ids(self.policy, *demo) for demo in hasty]
        longest = max(len(ids) for ids, _ in self.calls + self.direct)
        if longest > shape.max_positions:
            raise SystemExit(f"a demonstration has {longest} ids > max_positions")

    def save(self, task: Task, folder: Path, **extra: Any) -> None:
        self.policy.model.eval()
        self.policy.save(folder)
        figures = dict(extra)
        for name, temperature in (("greedy", 0.0), ("sampled", 1.0)):
            judged = _quick_records(task, self.policy, 32, temperature)
            figures |= _rate(f"{name}_accuracy", [_solved(record) for record in judged])
            figures |= {f"{name}_{key}": value for key, value in repo_figures(judged).items()}
        print(f"repo warm start: {json.dumps(figures)}", flush=True)
        (folder / "warm_start.json").write_text(json.dumps(figures, indent=1) + "\n")


def _repo_script(env: Any, seed: int, careful: bool) -> tuple[list[dict], list[int]]:
    """One demonstration episode of Repo-v0 (train split): the oracle's careful five steps, or
    the hasty two (the reference fix, then submit); its messages and the replies' positions."""
    from rlvr.envs.tools.parsing import format_tool_call

    env.reset(seed=seed)
    base = env.unwrapped
    fix = base.judge.parse(base.task).fix
    hasty = iter([format_tool_call("apply_patch", patch=fix), format_tool_call("submit")])
    while True:
        reply = base.oracle_reply() if careful else next(hasty)
        _, reward, terminated, truncated, info = env.step(reply)
        if terminated or truncated:
            break
    if reward != 1.0:
        raise RuntimeError(f"a scripted repository episode was not solved: {info.get('verdict')}")
    replies = [i for i, m in enumerate(info["messages"]) if m["role"] == "assistant"]
    return info["messages"][: replies[-1] + 1], replies


def build_repo_mix_model(task: Task, folder: Path) -> None:
    """Repo-v0's warm start: supervised for a fixed number of steps on scripted fixers of which
    a share `careful_share` inspect (run the tests, read the file) before patching and the rest
    patch at once (`RepoDemos`). What RL may change: how often the model inspects first, and
    how often its patch applies and fixes the bug."""
    import numpy as np
    import torch

    warm = task.warm
    demos = RepoDemos(task)
    optimizer = torch.optim.AdamW(demos.policy.trainable_parameters(), lr=warm["lr"])
    rng = np.random.default_rng(0)
    demos.train(optimizer, rng, warm["batch"], warm["careful_share"], warm["steps"])
    demos.save(task, folder, steps=warm["steps"])


def build_tool_model(task: Task, folder: Path) -> None:
    """The "recover a suppressed skill" ToolMath warm start, in two supervised phases:

    1. calculator episodes until *sampled* (temperature 1, as RL samples) held-out accuracy
       reaches `tool_target`: the model learns to copy the numbers into a call and the result
       into `\\boxed{}` without garbling a digit;
    2. mostly direct answers (a share `direct_tool_share` of calculator episodes keeps the skill
       alive) at a lower learning rate until greedy decoding no longer starts a reply with a
       call on more than `greedy_calls` of the probe prompts: greedily it now answers in its
       head and fails; sampled, it still calls sometimes.

    RL must then bring back a choice the warm start was trained out of. This is a labelled
    experiment, not the suite's ToolMath task (`build_tool_mix_model` is): the stop of phase 2
    is knife-edge, and "RL taught the calculator" would overstate what it shows.
    """
    import numpy as np
    import torch

    from rlvr.agents.hf import HFPolicy

    warm = task.warm
    calculator = folder.with_name(f"{folder.name}-calculator")  # phase 1, kept: it is the slow one
    demos = ToolDemos(task, direct_count=4000)
    rng = np.random.default_rng(0)

    def sampled_accuracy() -> bool:
        accuracy = _quick_accuracy(task, demos.policy, temperature=1.0)
        print(f"tool warm-start, calculator phase: sampled accuracy {accuracy:.3f}", flush=True)
        demos.policy.save(calculator.with_name(f"{calculator.name}-partial"))
        demos.policy.model.train()
        return accuracy >= warm["tool_target"]

    def calls_rare() -> bool:
        chances = _call_chances(demos.policy, demos.probes, demos.calls)
        greedy = sum(greedy for _, greedy in chances) / len(chances)
        mean = sum(chance for chance, _ in chances) / len(chances)
        print(
            f"tool warm-start, direct phase: P(reply starts a call) {mean:.3f}, "
            f"greedy calls {greedy:.3f}",
            flush=True,
        )
        demos.policy.model.train()
        return greedy <= warm["greedy_calls"]

    if (calculator / "config.json").exists():
        demos.policy = HFPolicy(calculator)
    else:
        optimizer = torch.optim.AdamW(demos.policy.trainable_parameters(), lr=warm["lr"])
        demos.train(optimizer, rng, warm["batch"], 1.0, warm["tool_steps"], sampled_accuracy)
        demos.policy.model.eval()
        demos.policy.save(calculator)
    # a fresh optimizer: phase 2 is the same whether phase 1 ran now or was loaded
    optimizer = torch.optim.AdamW(demos.policy.trainable_parameters(), lr=warm["direct_lr"])
    demos.train(
        optimizer,
        rng,
        warm["batch"],
        warm["direct_tool_share"],
        warm["direct_steps"],
        calls_rare,
        every=1,  # it falls fast
    )
    demos.save(task, folder)


def tool_warm_figures(
    task: Task,
    policy: Any,
    probes: Sequence[list[int]],
    calls: Sequence[tuple],
    episodes: int = 200,
) -> dict[str, float]:
    """What RL starts from: greedy and sampled (temperature 1) tool-call rate and accuracy on
    held-out tasks, the accuracy of sampled episodes that called, and the mean probability that
    a reply starts with a call."""
    figures: dict[str, float] = {}
    for name, temperature in (("greedy", 0.0), ("sampled", 1.0)):
        judged = _quick_records(task, policy, episodes, temperature)
        called = [_called_a_tool(record) for record in judged]
        solved = [_solved(record) for record in judged]
        figures |= _rate(f"{name}_accuracy", solved) | _rate(f"{name}_tool_call_rate", called)
        figures |= _rate(
            f"{name}_accuracy_when_called", [s for s, c in zip(solved, called, strict=True) if c]
        )
    chances = _call_chances(policy, probes, calls)
    figures["call_probability"] = sum(chance for chance, _ in chances) / len(chances)
    return figures


def retry_demos(
    task: Task, count: int, right_share: float, seed: int
) -> list[tuple[list[dict], list[int], list[int]]]:
    """Two-attempt demonstrations of a self-correction task, played in its env (train split),
    as (messages, positions of the replies, positions of the replies to learn):

    - `round(count * right_share)` episodes whose first attempt is the reference reply (it
      ends the episode; learnt);
    - the others: a first attempt with a near miss of the answer in the reference's format
      (`_near_miss`; not learnt: the model must not learn to err), the env's feedback, and
      the reference reply as the second attempt (learnt).

    Episode i is the env's task of seed `seed + i`; which episodes are right first is drawn
    with `seed`."""
    import gymnasium as gym
    import numpy as np

    if not 0.0 <= right_share <= 1.0:
        raise ValueError(f"right_share must be in [0, 1], got {right_share}")
    rng = np.random.default_rng(seed)
    right = set(rng.permutation(count)[: round(count * right_share)].tolist())
    env = gym.make(task.env_id, **dict(task.kwargs))
    demos = []
    try:
        for i in range(count):
            _, info = env.reset(seed=seed + i)
            reference = env.unwrapped.oracle_reply()
            if i not in right:
                gold = env.unwrapped.task.answer
                wrong = reference.replace(
                    f"\\boxed{{{gold}}}", f"\\boxed{{{_near_miss(gold, rng)}}}"
                )
                _, _, terminated, _, info = env.step(wrong)
                if terminated:
                    raise RuntimeError(f"{task.env_id}: a wrong first attempt ended the episode")
            _, _, terminated, _, info = env.step(reference)
            if not terminated or info["verdict"]["status"] != "correct":
                raise RuntimeError(f"{task.env_id}: the reference reply was not judged correct")
            messages = info["messages"]
            replies = [k for k, m in enumerate(messages) if m["role"] == "assistant"]
            demos.append((messages[: replies[-1] + 1], replies, replies[-1:]))
    finally:
        env.close()
    return demos


def _near_miss(answer: str, rng: Any) -> str:
    """A wrong answer close to an integer `answer`: off by 1-9, 10 or 100 (a slip, a carry)."""
    try:
        value = int(answer)
    except ValueError:
        raise ValueError(f"retry demos need integer answers, got {answer!r}") from None
    size = int(rng.choice([*range(1, 10), 10, 100]))
    return str(value + size * int(rng.choice([-1, 1])))


def build_retry_model(task: Task, base: Path, folder: Path) -> None:
    """The self-correction task's warm start: the model at `base` (the math task's) supervised
    on `retry_demos` (`demos` of them, `right_share` right first), `batch` episodes a step at
    `lr`, until greedy decoding on `eval_episodes` held-out tasks gives a second attempt that
    beats the first by `delta_target` (accuracy after the second attempt minus after the
    first), or the first attempt passes `first_cap` (the demos teach the retry's format and
    some re-solving; the rest is RL's to find), or `steps` run out. The figures at each check
    go to `warm_start.json` beside the model."""
    import numpy as np
    import torch

    from rlvr.agents.hf import HFPolicy
    from rlvr.agents.tiny import supervised_loss

    warm = task.warm
    policy = HFPolicy(base)
    demos = [
        _episode_ids(policy, messages, replies, learnt)
        for messages, replies, learnt in retry_demos(task, warm["demos"], warm["right_share"], 0)
    ]
    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=warm["lr"])
    rng = np.random.default_rng(0)
    history = []
    for step in range(warm["steps"] + 1):
        if step % warm["eval_every"] == 0 or step == warm["steps"]:
            judged = _quick_records(task, policy, warm["eval_episodes"], 0.0)
            figures = self_correction(judged, [_solved(record) for record in judged])
            history.append({"step": step, **figures})
            print(
                f"retry warm-start step {step}: first attempt {figures['first_attempt']:.3f}, "
                f"delta {figures['delta']:+.3f}, fix {figures['fix_rate']:.3f}, "
                f"repeat {figures['repeat_rate']:.3f}, {time.process_time():.0f} CPU s",
                flush=True,
            )
            done = figures["delta"] >= warm["delta_target"]
            if done or figures["first_attempt"] > warm["first_cap"] or step == warm["steps"]:
                break
            policy.model.train()
        picked = rng.choice(len(demos), warm["batch"], replace=False)
        loss = supervised_loss(policy, [demos[i] for i in picked])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    policy.model.eval()
    policy.save(folder)
    (folder / "warm_start.json").write_text(
        json.dumps({"warm": warm, "history": history}, indent=1)
    )


def build_schema_model(task: Task, folder: Path) -> None:
    """SQL's warm start: supervised on reference queries until greedy held-out accuracy on a
    few tasks reaches `target`. Each batch holds `per_schema` examples of every schema, and the
    examples of one schema (most of the prompt) share its forward. The tokenizer learns from
    each distinct prompt line once and every reference query, so that a query takes ~20 ids,
    not ~36 (COUNT spelt in five), and fits `max_new_tokens`."""
    import numpy as np
    import torch

    from rlvr.agents.hf import HFPolicy
    from rlvr.agents.tiny import (
        TinyModelConfig,
        build_model,
        reference_episodes,
        train_tokenizer,
    )

    warm = task.warm
    shape = TinyModelConfig(vocab_size=warm["vocab"], max_positions=warm["max_positions"])
    corpus = reference_episodes(task.env_id, 500, seed=1_000_000, env_kwargs=task.kwargs)
    # Each distinct line once: whole prompts would repeat the five schemas hundreds of times
    # and leave no merges for the queries (COUNT spelt in five ids, replies past the budget).
    lines = {
        line for messages, _, _ in corpus for m in messages for line in m["content"].split("\n")
    }
    tokenizer = train_tokenizer(
        [*sorted(lines), *(reply for _, reply, _ in corpus)], shape.vocab_size
    )
    policy = HFPolicy(build_model(tokenizer, shape, seed=0), tokenizer, seed=0)
    eos = tokenizer.eos_token_id
    buckets: dict[str, list[tuple[list, list]]] = {}
    for messages, reply, _ in reference_episodes(
        task.env_id, warm["demos"], seed=0, env_kwargs=task.kwargs
    ):
        prompt, answer = policy.encode_prompt(messages), [*policy._encode(reply), eos]
        schema = messages[-1]["content"].split("Question:")[0]
        example = (prompt + answer, [0] * len(prompt) + [1] * len(answer))
        buckets.setdefault(schema, []).append(example)
    groups = list(buckets.values())
    optimizer = torch.optim.AdamW(policy.trainable_parameters(), lr=warm["lr"])
    rng = np.random.default_rng(0)
    for step in range(warm["steps"]):
        if step % warm["eval_every"] == 0:
            accuracy = _quick_accuracy(task, policy)
            print(
                f"schema warm-start step {step}: greedy accuracy {accuracy:.3f}, "
                f"{time.process_time():.0f} CPU s",
                flush=True,
            )
            if accuracy >= warm["target"]:
                break
            policy.model.train()
        # Every schema in every batch: batches of one schema let the model ignore the schema
        # (all rows share it) and swing from domain to domain between steps.
        loss = sum(
            _shared_prefix_loss(policy, [group[i] for i in rng.choice(len(group), per, False)])
            for group in groups
            for per in [min(warm["per_schema"], len(group))]
        ) / len(groups)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    policy.model.eval()
    policy.save(folder)


def _shared_prefix_loss(policy: Any, examples: Sequence[tuple[list, list]]) -> Any:
    """Mean cross-entropy of the masked ids of `examples`, their common first ids run once."""
    import torch

    from rlvr.agents.learners.common import Batch, forward

    width = max(len(ids) for ids, _ in examples)
    common = min(len(ids) for ids, _ in examples)
    first = examples[0][0]
    common = next(
        (i for i in range(common) if any(ids[i] != first[i] for ids, _ in examples)), common
    )
    rows = len(examples)
    ids = torch.full((rows, width), policy.tokenizer.pad_token_id, dtype=torch.long)
    attention = torch.zeros((rows, width), dtype=torch.long)
    mask = torch.zeros((rows, width - 1))
    for row, (sequence, flags) in enumerate(examples):
        ids[row, : len(sequence)] = torch.tensor(sequence)
        attention[row, : len(sequence)] = 1
        mask[row, : len(sequence) - 1] = torch.tensor(flags[1:], dtype=torch.float)
    zeros = torch.zeros(rows)
    batch = Batch(
        ids,
        attention,
        mask,
        torch.zeros_like(mask),
        zeros,
        torch.arange(rows),
        zeros.bool(),
        torch.full((rows,), common, dtype=torch.long),
    )
    logprobs, _ = forward(policy.model, batch)
    return -(logprobs * mask).sum() / mask.sum()


def _call_chances(
    policy: Any, prompts: Sequence[list[int]], calls: Sequence[tuple]
) -> list[tuple[float, bool]]:
    """Per prompt of `prompts`: the probability that the reply's first id is a tool call's, and
    whether greedy decoding picks it."""
    import torch

    first_call_id = next(ids[i] for ids, mask in calls[:1] for i in range(len(ids)) if mask[i])
    chances = []
    with torch.no_grad():
        for prompt in prompts:
            logits = policy.model(input_ids=torch.tensor([prompt])).logits[0, -1]
            chance = float(logits.softmax(-1)[first_call_id])
            chances.append((chance, int(logits.argmax()) == first_call_id))
    return chances


def _quick_accuracy(task: Task, policy: Any, episodes: int = 64, temperature: float = 0.0) -> float:
    """Accuracy on a few held-out tasks, greedy or sampled (a warm start's stopping signal)."""
    judged = _quick_records(task, policy, episodes, temperature)
    return sum(_solved(record) for record in judged) / max(len(judged), 1)


def _quick_records(task: Task, policy: Any, episodes: int, temperature: float) -> list[Any]:
    from rlvr.agents.policy import SamplingParams
    from rlvr.rollout.episodes import evaluate

    report = evaluate(
        task.env_id,
        policy,
        episodes=episodes,
        seed=10_000_000,
        batch_size=episodes,
        sampling=SamplingParams(temperature=temperature, max_new_tokens=task.max_new_tokens),
        env_kwargs=task.heldout,
    )
    return report.judged


def _script(env: Any, oracle: Any, seed: int, use_tool: bool) -> tuple[list[dict], list[int]]:
    """The messages of one demonstration episode and the positions of its replies: the oracle's
    (calculator call, then the answer), or the answer alone in one reply."""
    _, info = oracle.reset(seed=seed)
    while True:  # play the oracle to the end to read the right answer
        _, _, terminated, truncated, info = oracle.step(oracle.unwrapped.oracle_reply())
        if terminated or truncated:
            break
    final = [m["content"] for m in info["messages"] if m["role"] == "assistant"][-1]
    answer = final[final.rindex("\\boxed{") :].splitlines()[0]
    _, info = env.reset(seed=seed)
    while True:
        reply = env.unwrapped.oracle_reply() if use_tool else f"The answer is {answer}."
        _, _, terminated, truncated, info = env.step(reply)
        if terminated or truncated:
            break
    replies = [i for i, m in enumerate(info["messages"]) if m["role"] == "assistant"]
    return info["messages"][: replies[-1] + 1], replies  # nothing after the last reply


def _episode_ids(
    policy: Any, messages: list[dict], replies: list[int], learnt: Sequence[int] | None = None
) -> tuple[list, list]:
    """(ids, mask) of a scripted episode, laid out as training rollouts are: the prompt, then
    each reply's ids (mask 1, or 0 for a reply not in `learnt` when given) and the env's
    follow-up ids (mask 0)."""
    eos = policy.tokenizer.eos_token_id
    ids = policy.encode_prompt(messages[: replies[0]])
    mask = [0] * len(ids)
    for k, at in enumerate(replies):
        reply = [*policy._encode(messages[at]["content"]), eos]
        flag = int(learnt is None or at in learnt)
        ids, mask = ids + reply, mask + [flag] * len(reply)
        if k + 1 < len(replies):
            follow = policy.encode_followup(
                messages[: at + 1], messages[at + 1 : replies[k + 1]], eos
            )
            ids, mask = ids + follow, mask + [0] * len(follow)
    return ids, mask


# --- provenance: what a result was made from ----------------------------------------------------


def provenance(
    out: Path, name: str, learner: str, seed: int, budget: float, eval_every: float
) -> dict[str, Any]:
    """What a run's figures were made from, recorded in its result.json: the code (commit, and
    whether the tree had uncommitted changes), the warm start's and the held-out set's
    fingerprints, every setting of the task and the learner, the library versions and the seed.
    The report puts in one table only runs that agree on these (`learning_suite_report`)."""
    return {
        **git_state(),
        "title": TASKS[name].title,
        "warm_start": warm_start_fingerprint(model_folder(out, name)),
        "heldout": heldout_fingerprint(heldout_tasks(out, name)),
        "settings": run_settings(name, learner, budget, eval_every),
        "versions": library_versions(),
        "seed": seed,
    }


def run_settings(name: str, learner: str, budget: float, eval_every: float) -> dict[str, Any]:
    """Every setting of a run but its seed: the task's (the Task fields, env kwargs included, at
    the budget and evaluation period it ran with, and the evaluation's sampling) and the
    learner's (learning rate, batch geometry, algorithm fields)."""
    import dataclasses

    task = TASKS[name]
    fields = {k: v for k, v in dataclasses.asdict(task).items() if k != "title"}
    fields |= {"budget": budget, "eval_every": eval_every}
    evaluation = {"seed": EVAL_SEED, "temperature": 0.0}
    if learner.partition("@")[0] == "trl":
        trainer: dict[str, Any] = trl_settings(learner, task.lr)
    else:
        trainer = our_settings(task, learner)
    task_fields = {"name": name, **fields, "evaluation": evaluation}
    return _jsonable({"task": task_fields, "learner": trainer})


def git_state() -> dict[str, Any]:
    """The commit the suite's code is at and whether tracked files differ from it (None: not a
    git checkout)."""

    def git(*arguments: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(HERE.parent), *arguments],
                capture_output=True,
                text=True,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    changes = git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"commit": commit, "dirty": None if changes is None else bool(changes)}


def warm_start_fingerprint(folder: Path) -> str:
    """A hash of a warm start's files (weights, config, tokenizer; not the build log
    `warm_start.json`): runs share a warm start exactly when they share this."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.name != "warm_start.json":
            digest.update(path.name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def heldout_fingerprint(heldout: Mapping[str, list[int]]) -> str:
    """A hash of the held-out task indexes (and the level-up ones)."""
    import hashlib

    text = json.dumps(dict(heldout), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def library_versions() -> dict[str, str | None]:
    """The versions of what a run's figures depend on (None: not installed)."""
    import platform
    from importlib import metadata

    versions: dict[str, str | None] = {"python": platform.python_version()}
    for package in ("rlvr-gym", "torch", "transformers", "trl", "numpy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def _jsonable(value: Any) -> Any:
    """Settings as plain JSON: dataclasses as dicts, tuples as lists, in a stable key order."""
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {str(key): _jsonable(value[key]) for key in sorted(value, key=str)}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    return value


# --- the runs ------------------------------------------------------------------------------------


def run_folder(out: Path, experiment: str, task: str, learner: str, seed: int) -> Path:
    """Where a run of an experiment (`EXPERIMENTS`, or `custom`) keeps its result and model."""
    return out / "runs" / experiment / task / f"{learner}-s{seed}"


def run_worker(args: argparse.Namespace) -> None:
    """One run (or the baseline evaluation) in this process; writes its result.json."""
    import torch

    torch.set_num_threads(1)
    import rlvr  # noqa: F401  (registers the environments)

    out = Path(args.out)
    if args.worker == "build":
        build_model(out, args.task)
        return
    if args.worker == "baseline":
        write_baseline(out, args.task)
        return
    folder = run_folder(out, args.experiment, args.task, args.worker, args.seed)
    folder.mkdir(parents=True, exist_ok=True)
    task = TASKS[args.task]
    args.budget = task.budget if args.budget is None else args.budget
    args.eval_every = task.eval_every if args.eval_every is None else args.eval_every
    baseline = load_baseline(out, args.task)
    # before the run: the code and the warm start it starts from
    origin = provenance(out, args.task, args.worker, args.seed, args.budget, args.eval_every)
    run = run_trl if args.worker.partition("@")[0] == "trl" else run_ours
    result = run(args, task, folder)
    result |= {
        "experiment": args.experiment,
        "task": args.task,
        "learner": args.worker,
        "seed": args.seed,
    }
    result["before"] = baseline["figures"]
    result["curve"].insert(0, {"cpu": 0.0, "wall": 0.0, "step": 0, **baseline["figures"]})
    result["load"] = os.getloadavg()[0]
    result["provenance"] = origin | {"baseline_repeat_identical": baseline["repeat_identical"]}
    (folder / "result.json").write_text(json.dumps(result, indent=1) + "\n")


def write_baseline(out: Path, name: str) -> None:
    """The warm start's held-out figures, measured twice: the two must agree exactly. The record
    names the warm start and the held-out set it was measured on (`load_baseline` checks)."""
    from rlvr.agents.hf import HFPolicy

    task = TASKS[name]
    policy = HFPolicy(model_folder(out, name))
    heldout = heldout_tasks(out, name)
    first = measure(task, policy, heldout, generalisation=True)
    second = measure(task, policy, heldout)
    folder = out / "baseline"
    folder.mkdir(parents=True, exist_ok=True)
    same = first["fingerprint"] == second["fingerprint"]
    record = {
        "figures": first,
        "repeat_identical": same,
        "repeat_accuracy": second["accuracy"],
        "warm_start": warm_start_fingerprint(model_folder(out, name)),
        "heldout": heldout_fingerprint(heldout),
    }
    (folder / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    if not same:
        raise SystemExit(f"{name}: two evaluations of the same weights differ")


def load_baseline(out: Path, name: str) -> dict[str, Any]:
    """The warm start's measured figures, refused when the model or the held-out set changed
    since they were measured (a rebuilt warm start must be measured again)."""
    path = out / "baseline" / f"{name}.json"
    record = json.loads(path.read_text())
    now = {
        "warm_start": warm_start_fingerprint(model_folder(out, name)),
        "heldout": heldout_fingerprint(heldout_tasks(out, name)),
    }
    for key, value in now.items():
        if record.get(key) != value:
            raise SystemExit(
                f"{path} was measured on another {key.replace('_', ' ')} than {name}'s now: "
                f"delete it to measure it again"
            )
    return record


class Budget:
    """Training time of this process: CPU seconds (what the budget counts) and wall seconds."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self.wall = 0.0

    def timed(self, work: Callable[[], Any]) -> Any:
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            return work()
        finally:
            self.cpu += time.process_time() - cpu
            self.wall += time.perf_counter() - wall


def run_ours(args: argparse.Namespace, task: Task, folder: Path) -> dict[str, Any]:
    settings = our_settings(task, args.worker)
    stages = settings.pop("stages", ONE_STAGE)
    heldout = heldout_tasks(Path(args.out), args.task)
    budget, curve = Budget(), []
    next_eval = args.eval_every
    trainer, stage_end = None, 0.0
    for number, stage in enumerate(stages):
        trainer = _stage_trainer(args, task, folder, settings, stage, number, trainer)
        last = number == len(stages) - 1
        stage_end = args.budget if last else stage_end + stage.share * args.budget
        while budget.cpu < stage_end:
            budget.timed(trainer.train_step)
            if budget.cpu >= next_eval and budget.cpu < args.budget:
                curve.append(_point(task, trainer.policy, heldout, budget, trainer.step))
                next_eval += args.eval_every
    assert trainer is not None  # a recipe has at least one stage
    final = measure(task, trainer.policy, heldout, generalisation=True)
    curve.append({"cpu": budget.cpu, "wall": budget.wall, "step": trainer.step, **final})
    trainer.metrics.close()
    trainer.policy.save(folder / "final")
    return {"after": final, "curve": curve, "steps": trainer.step, **_times(budget)}


def _stage_trainer(
    args: argparse.Namespace,
    task: Task,
    folder: Path,
    settings: Mapping[str, Any],
    stage: Stage,
    number: int,
    previous: Any,
) -> Any:
    """The trainer of stage `number` of a run: the task's env and the learner's settings as the
    stage changes them, on the previous stage's policy (the warm start for the first)."""
    import dataclasses

    from rlvr.agents.policy import SamplingParams
    from rlvr.agents.rollouts import EnvSpec
    from rlvr.agents.train import TrainConfig, Trainer

    settings = dict(settings)
    algo = settings["algo"]
    temperature = settings.pop("temperature", 1.0)  # `NAME@temp=`: the rollouts' sampling
    env = EnvSpec(
        task.env_id, kwargs={**task.kwargs, **stage.env}, heldout_kwargs=dict(task.heldout)
    )
    config = TrainConfig(
        envs=[env],
        model=str(model_folder(Path(args.out), args.task)),
        output_dir=str(folder),
        steps=10**9,
        sampling=SamplingParams(temperature=temperature, max_new_tokens=task.max_new_tokens),
        max_turns=task.max_turns,
        seed=args.seed + number * STAGE_SEED,
        eval_episodes=8,
        tensorboard=False,
        plot=False,
        progress=False,
        **{**settings, algo: dataclasses.replace(settings[algo], **stage.learner)},
    )
    if previous is None:
        trainer = Trainer(config)
        trainer.metrics.truncate_after(-1)
        return trainer
    previous.metrics.close()
    previous.close()
    trainer = Trainer(config, policy=previous.policy)
    trainer.step = previous.step  # one metrics file, its steps counting on
    return trainer


def _point(
    task: Task, policy: Any, heldout: Mapping[str, list[int]], budget: Budget, step: int
) -> dict[str, Any]:
    figures = measure(task, policy, heldout)
    return {"cpu": budget.cpu, "wall": budget.wall, "step": step, **figures}


def _times(budget: Budget) -> dict[str, float]:
    return {"cpu_seconds": budget.cpu, "wall_seconds": budget.wall}


def run_trl(args: argparse.Namespace, task: Task, folder: Path) -> dict[str, Any]:
    sys.path.insert(0, str(HERE))
    import trl_baseline
    from transformers import AutoTokenizer

    from rlvr.agents.hf import HFPolicy

    model = model_folder(Path(args.out), args.task)
    tokenizer = AutoTokenizer.from_pretrained(model)  # its own copy: HFPolicy sets padding
    heldout = heldout_tasks(Path(args.out), args.task)
    curve: list[dict[str, Any]] = []
    next_eval = [args.eval_every]
    clock = trl_baseline.StepClock(budget=args.budget, cpu=True)
    budget = Budget()

    def on_row(row: dict[str, Any], trained: Any) -> None:
        budget.cpu, budget.wall = clock.cpu_seconds, clock.train_seconds
        if clock.cpu_seconds >= next_eval[0] and clock.cpu_seconds < args.budget:
            policy = HFPolicy(trained, tokenizer)
            curve.append(_point(task, policy, heldout, budget, row["step"]))
            next_eval[0] += args.eval_every

    clock.on_row = on_row
    settings = trl_settings(args.worker, task.lr)
    prompts, generations = settings["prompts"], settings["group"]
    steps = int(args.budget * 5) + 10  # more than it can do in the budget
    trainer = trl_baseline.make_trainer(
        model_path=str(model),
        env_id=task.env_id,
        env_kwargs=task.kwargs,
        seeds=trl_baseline.task_seeds(args.seed, steps * prompts),
        prompts_per_step=prompts,
        group_size=generations,
        max_new_tokens=task.max_new_tokens,
        lr=settings["lr"],
        steps=steps,
        output_dir=str(folder / "trl"),
        seed=args.seed,
        callbacks=[clock.callback],
        multi_turn=task.max_turns is not None,
        max_turns=task.max_turns,
    )
    trainer.train()
    budget.cpu, budget.wall = clock.cpu_seconds, clock.train_seconds
    final = measure(task, HFPolicy(trainer.model, tokenizer), heldout, generalisation=True)
    step = trainer.state.global_step
    curve.append({"cpu": budget.cpu, "wall": budget.wall, "step": step, **final})
    (folder / "rewards.json").write_text(json.dumps(clock.rewards))
    return {"after": final, "curve": curve, "steps": step, **_times(budget)}


def split_learners(text: str) -> list[str]:
    """The learners of `--learners`: comma-separated names, where an item with "=" and no "@"
    is one more setting of the learner before it (`grpo@lr=1e-3,group=4,trl` is two)."""
    learners: list[str] = []
    for item in filter(None, text.split(",")):
        if "=" in item and "@" not in item and learners and "@" in learners[-1]:
            learners[-1] += f",{item}"
        else:
            learners.append(item)
    return learners


# --- the experiments: what docs/agents.md shows ---------------------------------------------------


@dataclass(frozen=True)
class Experiment:
    """A named set of runs, one table of docs/agents.md: its results are stored in
    benchmarks/results/learning_suite/<name>/ (`--store`), and the report draws it only when
    every (task, learner, seed) listed here is stored."""

    tasks: tuple[str, ...]
    seeds: tuple[int, ...]
    learners: tuple[str, ...] = ("grpo", "ppo", "trl")
    budget: float | None = None
    """Training CPU seconds per run (None: each task's `Task.budget`)."""
    eval_every: float | None = None
    """Training CPU seconds between held-out evaluations (None: each task's `Task.eval_every`)."""


CUSTOM = "custom"
"""The experiment name of runs made without `--experiment` (never stored)."""
# The seeds of the published tables: none was used to tune a task, a warm start or a learner
# (tuning runs use seeds 0-2). 11-15 are the seeds an outsider re-ran the suite on (issue 27).
FRESH_SEEDS = (11, 12, 13, 14, 15)
EXPERIMENTS: dict[str, Experiment] = {
    # the math comparison at three training budgets: does a lead survive longer training?
    # RLOO (the learner added through the Learner table, issue 28) runs here, beside GRPO
    "math-30": Experiment(
        ("math",),
        FRESH_SEEDS,
        learners=("grpo", "ppo", "rloo", "trl"),
        budget=30.0,
        eval_every=15.0,
    ),
    "math-120": Experiment(("math",), FRESH_SEEDS, budget=120.0, eval_every=30.0),
    # three seeds: a 300 s run is ten times a 30 s one on this 2-core machine
    "math-300": Experiment(("math",), FRESH_SEEDS[:3], budget=300.0, eval_every=60.0),
    # SCoRe's recipe (`grpo-score`, tuned on seeds 0-2) beside our GRPO, PPO and TRL
    "selfcorrect": Experiment(
        ("selfcorrect",), FRESH_SEEDS, learners=("grpo", "grpo-score", "ppo", "trl")
    ),
    "toolmath": Experiment(("toolmath",), FRESH_SEEDS),
    # labelled: RL brings back a choice the warm start was trained out of
    "toolmath-suppressed": Experiment(("toolmath-suppressed",), FRESH_SEEDS),
    "sql": Experiment(("sql",), FRESH_SEEDS),
    "repo": Experiment(("repo",), FRESH_SEEDS),
    "ablation": Experiment(
        ("math",),
        (0, 1, 2),
        learners=("grpo", "grpo-base", "grpo-overlong", "grpo-curriculum"),
        budget=30.0,
        eval_every=15.0,
    ),
}


# --- the schedule --------------------------------------------------------------------------------


def schedule(tasks: Sequence[str], learners: Sequence[str], seeds: Sequence[int]) -> list[tuple]:
    """(task, learner, seed) in the order to run: seed by seed, task by task, the learners'
    order rotating with the seed so that none always runs first."""
    order = []
    for position, seed in enumerate(seeds):
        shift = position % len(learners)
        rotated = [*learners[shift:], *learners[:shift]]
        order += [(task, learner, seed) for task in tasks for learner in rotated]
    return order


def spawn(args: argparse.Namespace, worker: str, task: str, seed: int = 0) -> bool:
    """Run one worker in its own process; whether it succeeded."""
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        worker,
        "--task",
        task,
        "--seed",
        str(seed),
        "--out",
        args.out,
        "--experiment",
        args.experiment,
        "--budget",
        str(args.budget if args.budget is not None else TASKS[task].budget),
        "--eval-every",
        str(args.eval_every if args.eval_every is not None else TASKS[task].eval_every),
    ]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    return subprocess.run(command, env=env).returncode == 0


def plan(args: argparse.Namespace) -> tuple[list[str], list[str], list[int]]:
    """The tasks, learners and seeds to run (or report): the experiment's, or the part of it
    that --tasks, --learners and --seeds pick; without --experiment, those flags or the
    defaults. Sets args.budget and args.eval_every from the experiment."""
    if args.experiment not in (None, CUSTOM, *EXPERIMENTS):
        raise SystemExit(
            f"unknown experiment {args.experiment!r}: choose from {', '.join(EXPERIMENTS)}, "
            f"or add it to EXPERIMENTS"
        )
    experiment = EXPERIMENTS.get(args.experiment)
    defaults = (
        (list(DEFAULT_TASKS), ["grpo", "ppo", "trl"], [0, 1, 2])
        if experiment is None
        else (list(experiment.tasks), list(experiment.learners), list(experiment.seeds))
    )
    tasks = args.tasks.split(",") if args.tasks else defaults[0]
    learners = split_learners(args.learners) if args.learners else defaults[1]
    try:
        seeds = [int(seed) for seed in args.seeds.split(",")] if args.seeds else defaults[2]
    except ValueError:
        raise SystemExit(f"--seeds {args.seeds!r}: give integers separated by commas") from None
    unknown = [task for task in tasks if task not in TASKS]
    if unknown:
        raise SystemExit(f"unknown task(s) {unknown}: choose from {', '.join(TASKS)}")
    if experiment is not None:
        for flag, picked, allowed in (
            ("--tasks", tasks, defaults[0]),
            ("--learners", learners, defaults[1]),
            ("--seeds", seeds, defaults[2]),
        ):
            outside = [value for value in picked if value not in allowed]
            if outside:
                raise SystemExit(
                    f"{flag} {outside} are not in experiment {args.experiment} ({allowed}): "
                    f"pick a part of it, or add an experiment to EXPERIMENTS"
                )
        if args.budget is not None or args.eval_every is not None:
            raise SystemExit(
                f"experiment {args.experiment} sets the budget ({experiment.budget}) and "
                f"--eval-every ({experiment.eval_every}): drop --budget/--eval-every"
            )
        args.budget, args.eval_every = experiment.budget, experiment.eval_every
    return tasks, learners, seeds


def check_resumable(path: Path, expected: Mapping[str, Any]) -> None:
    """A finished run is kept (the suite resumes) only when it was made with the settings, warm
    start and held-out set it would be made with now."""
    from learning_suite_results import first_difference

    made = json.loads(path.read_text()).get("provenance")
    if made is None:
        raise SystemExit(
            f"{path} has no provenance (made before results recorded it): use another --out"
        )
    for key, value in expected.items():
        where = first_difference(made.get(key), value, key)
        if where is not None:
            raise SystemExit(
                f"{path} was made with another {where} than this command would use: "
                f"use another --out or --experiment, or delete the run to redo it"
            )


def run_all(
    args: argparse.Namespace, tasks: list[str], learners: list[str], seeds: list[int]
) -> None:
    """Build the warm starts and baselines, then every run not yet finished."""
    import rlvr  # noqa: F401  (registers the environments)

    out = Path(args.out)
    for task in tasks:
        built = (model_folder(out, task) / "config.json").exists()
        if not built and not spawn(args, "build", task):
            raise SystemExit(f"building the {task} model failed")
        measured = (out / "baseline" / f"{task}.json").exists()
        if not measured and not spawn(args, "baseline", task):
            raise SystemExit(f"the {task} baseline failed")
    if args.prepare_only:
        return
    for task, learner, seed in schedule(tasks, learners, seeds):
        budget = args.budget if args.budget is not None else TASKS[task].budget
        every = args.eval_every if args.eval_every is not None else TASKS[task].eval_every
        result = run_folder(out, args.experiment, task, learner, seed) / "result.json"
        if result.exists():
            expected = {
                "settings": run_settings(task, learner, budget, every),
                "warm_start": warm_start_fingerprint(model_folder(out, task)),
                "heldout": heldout_fingerprint(heldout_tasks(out, task)),
            }
            check_resumable(result, expected)
            continue
        print(f"run {task} {learner} seed {seed} (load {os.getloadavg()[0]:.1f})", flush=True)
        if not spawn(args, learner, task, seed):  # the others still run; rerun resumes
            print(f"run {task} {learner} seed {seed} FAILED", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--task", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument(
        "--experiment",
        help=f"a named experiment ({', '.join(EXPERIMENTS)}): its tasks, learners, seeds and "
        "budget; --tasks, --learners, --seeds then pick a part of it",
    )
    parser.add_argument(
        "--tasks",
        help=f"comma-separated, of {', '.join(TASKS)} (default: {', '.join(DEFAULT_TASKS)})",
    )
    parser.add_argument(
        "--learners",
        help="comma-separated: grpo, ppo, rloo, trl, or a variant (grpo-base, grpo-ds, "
        "grpo-overlong, grpo-curriculum; grpo-score and ppo-score train in SCoRe's stages), "
        "each optionally NAME@lr=X,group=G,prompts=P,temp=T (GRPO also mu=M; a SCoRe learner "
        "also share, pin1, pin2, bonus, pg1) (default: grpo,ppo,trl)",
    )
    parser.add_argument("--seeds", help="comma-separated integers (default: 0,1,2)")
    parser.add_argument(
        "--budget", type=float, help="training CPU seconds per run (default: each task's own)"
    )
    parser.add_argument(
        "--eval-every",
        type=float,
        help="training CPU seconds between held-out evaluations (default: each task's own)",
    )
    parser.add_argument(
        "--out",
        default="runs/bench/suite",
        help="models, baselines and runs (default: %(default)s)",
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="no runs: the table and plot of the runs in --out (into --out/reports/<experiment>, "
        "named -partial while runs are missing)",
    )
    parser.add_argument(
        "--prepare-only", action="store_true", help="only build the warm starts and baselines"
    )
    parser.add_argument(
        "--store",
        action="store_true",
        help="no runs: copy the experiment's finished results (per-run summaries, no models) "
        "from --out into --results, for the docs (learning_suite_report.py --docs)",
    )
    parser.add_argument(
        "--results",
        default=str(HERE / "results" / "learning_suite"),
        help="stored results (default: benchmarks/results/learning_suite)",
    )
    args = parser.parse_args()
    if args.worker:
        args.experiment = args.experiment or CUSTOM
        run_worker(args)
        return
    sys.path.insert(0, str(HERE))
    import learning_suite_report as report
    import learning_suite_results as results

    tasks, learners, seeds = plan(args)
    args.experiment = args.experiment or CUSTOM
    if args.store:
        if args.experiment == CUSTOM:
            raise SystemExit("--store needs --experiment: only named experiments are stored")
        results.run_cli(lambda: results.store(Path(args.out), args.experiment, Path(args.results)))
        return
    if not args.report_only:
        run_all(args, tasks, learners, seeds)
        if args.prepare_only:
            return
    results.run_cli(
        lambda: report.report_runs(Path(args.out), args.experiment, tasks, learners, seeds)
    )


if __name__ == "__main__":
    main()
