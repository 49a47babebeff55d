"""The episode loops: evaluation, training rollouts and leaderboard replay all play episodes here.

One module for each thing that changes on its own:

- `rlvr.rollout.records`: `EpisodeRecord`, what one episode leaves behind; `Start`, which
  episode an env plays; `Act`, the actor contract of both loops;
- `rlvr.rollout.episodes`: the single-agent loop `play_episodes`, and `evaluate`,
  `run_episodes` and `policy_actor` on top of it;
- `rlvr.rollout.reports`: `EvalReport` (mean reward, success rate, pass@k);
- `rlvr.rollout.hosts`: where a batch's envs run (`EnvBatch`, `LocalEnvs`, `EnvHost`);
- `rlvr.rollout.tasks`: which task an episode poses (`task_fingerprint`, `distinct_tasks`);
- `rlvr.rollout.games`: the multi-agent loop `play_games`, its actors, and `play_match`.

Each public name is also importable from here (`from rlvr.rollout import evaluate`).

This package imports Gymnasium, numpy, the envs and the ground's Policy protocol
(`rlvr.core.policy`) only: it sits below `rlvr.agents` and `rlvr.distributed` in the layer order
that `lint-imports` enforces (docs/design.md).
"""

from rlvr.rollout.episodes import evaluate, play_episodes, policy_actor, run_episodes
from rlvr.rollout.games import (
    GameRecord,
    MatchReport,
    game_policy_actor,
    play_games,
    play_match,
    seat_positions,
    seat_router,
)
from rlvr.rollout.hosts import EnvBatch, EnvHost, EnvWorkersError, LocalEnvs, reset_env
from rlvr.rollout.records import Act, EpisodeRecord, ResetOptions, Start, StepResult
from rlvr.rollout.reports import EvalReport
from rlvr.rollout.tasks import distinct_tasks, task_fingerprint

__all__ = [
    "Act",
    "EnvBatch",
    "EnvHost",
    "EnvWorkersError",
    "EpisodeRecord",
    "EvalReport",
    "GameRecord",
    "LocalEnvs",
    "MatchReport",
    "ResetOptions",
    "Start",
    "StepResult",
    "distinct_tasks",
    "evaluate",
    "game_policy_actor",
    "play_episodes",
    "play_games",
    "play_match",
    "policy_actor",
    "reset_env",
    "run_episodes",
    "seat_positions",
    "seat_router",
    "task_fingerprint",
]
