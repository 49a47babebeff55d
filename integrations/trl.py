"""rlvr environments inside TRL's `GRPOTrainer` (extra `trl`; written against TRL 1.16).

    from trl import GRPOConfig, GRPOTrainer
    from rlvr.integrations.trl import dataset, reward_funcs

    rewards = reward_funcs("rlvr/Code-v0")
    trainer = GRPOTrainer(
        model=...,
        reward_funcs=rewards,
        args=GRPOConfig(..., reward_weights=[f.weight for f in rewards]),
        train_dataset=dataset("rlvr/Code-v0", n=64),
    )

- `dataset(env_id, n, split=...)`: a `datasets.Dataset` of chat prompts (the env's system
  prompt and the judge's prompt for each task) and the task columns (`rlvr.integrations.columns`).
- `reward_funcs(env_id, **env_kwargs)`: TRL reward functions that rebuild each row's task from
  those columns and judge the completion with the env's own judge: the reward TRL logs is the
  env's verdict. A reply our machinery could not judge gets `None` (TRL drops a completion all
  of whose rewards are None), never 0.
- `environment_factory(env_id, **env_kwargs)`: for tool envs (`ToolUse`, e.g.
  rlvr/ToolMath-v0), the class TRL's `environment_factory=` takes: one env per rollout, reset
  on the row's task, whose tools become the model's tools through TRL's tool-calling loop.

None of this imports TRL; `dataset` imports `datasets`.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rlvr.integrations.columns import decode_task
from rlvr.integrations.errors import IntegrationConfigError
from rlvr.integrations.rows import prompt_rows
from rlvr.integrations.scoring import (
    INFRA_ERROR,
    Completion,
    EnvJudge,
    Score,
    final_reply,
    judged_env,
)
from rlvr.verifiers.types import Task

logger = logging.getLogger(__name__)

TERMS = ("correctness", "format")


def dataset(
    env_id: str, n: int | None = None, *, split: str | None = None, **env_kwargs: Any
) -> Any:
    """The first `n` tasks of the env as a `datasets.Dataset` for `GRPOTrainer`.

    Columns: `prompt` (chat messages: system prompt and task prompt, never the gold), `env_id`,
    and the task columns `task_id`, `task_prompt`, `answer` (JSON), `metadata` (JSON), which
    TRL passes to the reward functions. `split` ("train", "test") goes to the env; None keeps
    the env's default (the training split of generated tasks).
    """
    try:
        from datasets import Dataset
    except ImportError:
        raise ImportError("dataset() needs HF datasets: pip install 'rlvr-gym[trl]'") from None
    return Dataset.from_list(prompt_rows(env_id, n, split=split, env_kwargs=env_kwargs))


def reward_funcs(env_id: str, *, workers: int = 8, **env_kwargs: Any) -> list[RewardFunction]:
    """GRPOTrainer reward functions judging completions with the env's judge.

    One function, `correctness` (the verifier's score), and `format` too when the env rewards a
    readable answer (`format_weight > 0`). Each has a `weight`: pass
    `GRPOConfig(reward_weights=[f.weight for f in funcs])` and TRL's total reward is the env's
    reward. `env_kwargs` configure the judge as `gym.make` would (`scoring=`, `format_weight=`,
    `backend=`...); the tasks come from the dataset's columns. The functions share one env,
    made now, judged in up to `workers` threads; `close()` on any of them releases it.
    """
    judge = EnvJudge(env_id, env_kwargs, workers=workers)
    weight = float(getattr(judge.judge, "format_weight", 0.0) or 0.0)
    funcs = [RewardFunction(judge, "correctness", 1.0 - weight)]
    if weight > 0:
        funcs.append(RewardFunction(judge, "format", weight))
    return funcs


class RewardFunction:
    """One term of an env's reward, as a TRL reward function (TRL names it by `__name__`).

    Called by TRL with the batch's `prompts`, `completions` and dataset columns (lists, one
    entry per completion); returns one float per completion, or None for a completion whose
    reply our machinery could not judge, or whose row belongs to another env (`env_id` column:
    one dataset may mix envs, each judged by its own functions).
    """

    def __init__(self, judge: EnvJudge, term: str, weight: float) -> None:
        if term not in TERMS:
            raise IntegrationConfigError(f"term must be one of {TERMS}, got {term!r}")
        self.judge = judge
        self.term = term
        self.weight = weight
        self.__name__ = term

    def __call__(
        self, prompts: Sequence[Any] | None = None, completions: Sequence[Completion] = (), **kwargs
    ) -> list[float | None]:
        scores = self.scores(completions, kwargs)
        if self.term == TERMS[0]:  # one function reports for the batch
            _report(self.judge.env_id, scores, kwargs)
        return [None if score is None else getattr(score, self.term) for score in scores]

    def scores(self, completions: Sequence[Completion], columns: Mapping[str, Any]) -> list:
        """The `Score` of each completion (None for rows of other envs)."""
        count = len(completions)
        env_ids = columns.get("env_id")  # absent: every row is this env's
        rows = [i for i in range(count) if env_ids is None or env_ids[i] == self.judge.env_id]
        tasks = _tasks(columns, count, rows, self.judge)
        replies = [final_reply(completions[i]) for i in rows]
        judged = self.judge.judge_replies(replies, [tasks[i] for i in rows])
        environments = columns.get("environments")
        results: list[Score | None] = [None] * count
        for i, score in zip(rows, judged):
            ended = getattr(environments[i], "outcome_score", None) if environments else None
            results[i] = ended if ended is not None else score
        return results

    def close(self) -> None:
        self.judge.close()

    def __repr__(self) -> str:
        return f"RewardFunction({self.judge.env_id!r}, {self.term!r}, weight={self.weight})"


def _column(columns: Mapping[str, Any], name: str, count: int) -> list[Any]:
    values = columns[name]
    if len(values) != count:
        raise IntegrationConfigError(f"column {name!r} has {len(values)} values for {count}")
    return list(values)


def _tasks(
    columns: Mapping[str, Any], count: int, rows: list[int], judge: EnvJudge
) -> dict[int, Task]:
    """The task of each of `rows`, rebuilt from the task columns (each distinct task once)."""
    fields = {
        name: _column(columns, name, count)
        for name in ("task_id", "task_prompt", "answer", "metadata")
        if name in columns
    }
    built: dict[tuple, Task] = {}
    tasks = {}
    for i in rows:
        row = {name: values[i] for name, values in fields.items()}
        key = tuple(row.values())
        if key not in built:
            built[key] = judge.task(decode_task(row))
        tasks[i] = built[key]
    return tasks


def _report(env_id: str, scores: Sequence[Score | None], columns: Mapping[str, Any]) -> None:
    """The batch's infrastructure-error rate as a TRL metric and each verdict in TRL's
    completions table (when TRL passes its loggers)."""
    judged = [score for score in scores if score is not None]
    log_metric, log_extra = columns.get("log_metric"), columns.get("log_extra")
    if judged and callable(log_metric):
        errors = sum(score.infra_error for score in judged)
        log_metric(f"rlvr/{env_id}/infra_error_rate", errors / len(judged))
        if errors:
            logger.warning("%s: %d of %d replies could not be judged", env_id, errors, len(judged))
    if callable(log_extra):
        log_extra("rlvr_verdict", [None if score is None else score.status for score in scores])


# --- tool envs: TRL's environment_factory ---------------------------------------------------------

_JSON_TO_PYTHON = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}


def environment_factory(env_id: str, **env_kwargs: Any) -> type:
    """For a tool env (its interaction a `ToolUse`, e.g. rlvr/ToolMath-v0): the class to pass
    as `GRPOTrainer(environment_factory=...)`.

    TRL makes one instance per rollout and calls `reset(**row)` with the row's columns: the
    instance resets its own env on the row's task (the episode's state, its tool calls, starts
    afresh). Each tool of the env is a method, named and documented as the tool, so TRL shows
    it to the model through the chat template and runs the model's calls. The final answer is
    judged by `reward_funcs(env_id)`, which TRL gives the instances: a rollout in which a tool
    failed on our side (`ToolInfraError`) gets None rewards; one a tool ended (a tool that
    returns an `Outcome`) gets that outcome's reward.
    """
    from rlvr.envs.tools.env import ToolUse

    probe = judged_env(env_id, env_kwargs)
    try:
        interaction = probe.interaction
        if not isinstance(interaction, ToolUse):
            raise IntegrationConfigError(
                f"{env_id} has no tools (its interaction is {type(interaction).__name__}); "
                "train it with reward_funcs alone"
            )
        methods = {tool.name: _tool_method(tool) for tool in interaction.tools}
    finally:
        probe.close()
    clash = set(methods) & {"reset", "get_reward"}
    if clash:
        raise IntegrationConfigError(f"{env_id}: tools named {sorted(clash)} clash with TRL's API")
    name = "".join(part for part in env_id.replace("/", "-").split("-") if part.isalnum())
    attributes = {**methods, "_env_id": env_id, "_env_kwargs": dict(env_kwargs)}
    return type(f"{name}ToolEnvironment", (ToolEnvironment,), attributes)


class ToolEnvironment:
    """Base of the classes `environment_factory` makes: one rlvr tool env, one rollout at a time.

    TRL exposes every public method but `reset` and `get_reward` as a tool, so everything else
    here is private. After a rollout, `infra_error` tells whether a tool failed on our side, and
    `outcome_score` holds the reward of an episode a tool ended (None otherwise).
    """

    _env_id: str
    _env_kwargs: dict[str, Any]

    def __init__(self) -> None:
        self._env = judged_env(self._env_id, self._env_kwargs)
        self.infra_error = False
        self.outcome_score: Score | None = None

    def reset(self, **row: Any) -> None:
        """Start the episode on the row's task; the prompt is already in the row."""
        task = decode_task(row)
        self._env.reset(options={"task": task.to_dict()})
        self.infra_error = False
        self.outcome_score = None

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        from rlvr.envs.tools.parsing import ToolCall

        if self.outcome_score is not None:
            return "The episode is over: give your final answer."
        result = self._env.interaction.toolbox.call(ToolCall(name, arguments))  # type: ignore[union-attr]
        if result.infra_error:
            self.infra_error = True
            self.outcome_score = INFRA_ERROR
        elif result.outcome is not None:
            self.outcome_score = Score.of(result.outcome)
            return result.outcome.feedback
        return result.content

    def _close(self) -> None:
        self._env.close()

    def __del__(self) -> None:  # TRL never closes its environments
        env = getattr(self, "_env", None)
        if env is not None:
            try:  # noqa: SIM105  (not contextlib: at interpreter exit it may be gone already)
                env.close()
            except Exception:
                pass


def _tool_method(tool: Any) -> Callable[..., str]:
    """A method calling `tool` through the env's toolbox, with the signature, type hints and
    Google-style docstring TRL (transformers' `get_json_schema`) reads a tool's schema from."""
    properties = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", ()))

    def method(self: ToolEnvironment, **arguments: Any) -> str:
        return self._call(tool.name, arguments)

    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    lines = [tool.description or tool.name, "", "Args:"]
    for name, schema in properties.items():
        kind = _JSON_TO_PYTHON.get(schema.get("type"), str)
        default = inspect.Parameter.empty if name in required else None
        parameters.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=kind
            )
        )
        annotations[name] = kind if name in required else kind | None
        lines.append(f"    {name}: {schema.get('description') or name}")
    method.__name__ = method.__qualname__ = tool.name
    method.__doc__ = "\n".join(lines if properties else lines[:1])
    method.__annotations__ = annotations
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    return method
