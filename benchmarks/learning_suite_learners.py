"""The learning suite's learners (`learning_suite.py`): the settings of our GRPO, PPO and RLOO
and their variants, TRL's, the `NAME@key=value` changes `--learners` takes, and SCoRe's staged
recipe. Stdlib only until a learner's config is built: the report imports `LABELS` without
torch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from learning_suite_tasks import Task

# --- the learners --------------------------------------------------------------------------------

LR = 2e-4
GRPO_GEOMETRY = {"prompts_per_step": 16, "group_size": 8}
PPO_GEOMETRY = {"prompts_per_step": 32, "group_size": 4}


def learner_settings(name: str, lr: float | None = None) -> dict[str, Any]:
    """TrainConfig fields of one of our learners (`grpo`, `ppo`, `rloo`, and the variants
    measured for the features: `grpo-base` is GRPO without them; `grpo-score` and `ppo-score`
    train in SCoRe's stages, under the key "stages") at learning rate `lr` (None: `LR`).
    `NAME@lr=X,group=G,prompts=P,temp=T` changes the learning rate, the batch geometry and the
    rollouts' sampling temperature of any of them (`mu=M`: GRPO's passes per batch; `shared=K`:
    `TrainConfig.shared_turns`, the first K replies of a group sampled once, `greedy=1` greedily:
    `shared_greedy`); a SCoRe
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
        elif key == "shared":
            settings["shared_turns"] = int(value)
        elif key == "greedy":
            settings["shared_greedy"] = bool(int(value))
        elif score is not None and key in SCORE_SETTINGS:
            score[SCORE_SETTINGS[key]] = float(value)
        else:
            mu = ["mu"] if settings["algo"] == "grpo" else []
            allowed = ", ".join(
                [
                    "lr",
                    "group",
                    "prompts",
                    "temp",
                    "shared",
                    "greedy",
                    *mu,
                    *(SCORE_SETTINGS if score else ()),
                ]
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


def trl_settings(name: str, task: Task) -> dict[str, Any]:
    """TRL's learning rate and batch geometry: our GRPO's (learning rate `Task.lr`, None: `LR`),
    or as `trl@lr=X,group=G,prompts=P,temp=T` says (`temp`, the sampling temperature, is
    recorded only when given: TRL's default is 1, as ours); and the task's micro-batch, if it
    has one."""
    settings: dict[str, Any] = {
        "lr": LR if task.lr is None else task.lr,
        "group": GRPO_GEOMETRY["group_size"],
        "prompts": GRPO_GEOMETRY["prompts_per_step"] if task.prompts is None else task.prompts,
    }
    if task.temperature is not None:
        settings["temperature"] = task.temperature
    for change in filter(None, name.partition("@")[2].split(",")):
        key, _, value = change.partition("=")
        if key == "temp":
            settings["temperature"] = float(value)
        elif key in settings:
            settings[key] = float(value) if key == "lr" else int(value)
        else:
            raise SystemExit(f"unknown TRL setting {key!r} in {name}: use lr, group, prompts, temp")
    if task.micro_batch is not None:
        settings["micro_batch"] = task.micro_batch
    return settings


def our_settings(task: Task, learner: str) -> dict[str, Any]:
    """TrainConfig fields of our learner `learner` on `task`: its variant at the task's learning
    rate, with the task's own GRPO fields (`Task.grpo`), micro-batch (`Task.micro_batch`), and
    temperature and prompts per update (`Task.temperature`, `Task.prompts`) unless the
    learner's name sets them."""
    import dataclasses

    own = {change.partition("=")[0] for change in learner.partition("@")[2].split(",")}
    settings = learner_settings(learner, task.lr)
    if task.temperature is not None and "temp" not in own:
        settings["temperature"] = task.temperature
    if task.prompts is not None and "prompts" not in own:
        settings["prompts_per_step"] = task.prompts
    if settings["algo"] == "grpo":
        settings["grpo"] = dataclasses.replace(settings["grpo"], **task.grpo)
    if task.micro_batch is not None:
        algo = settings["algo"]
        settings[algo] = dataclasses.replace(settings[algo], micro_batch_size=task.micro_batch)
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
