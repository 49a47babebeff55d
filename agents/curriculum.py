"""What a training step samples: DAPO's dynamic sampling and a curriculum over env difficulty.

- **Dynamic sampling** (Yu et al., 2025, DAPO): a group whose rewards are all equal has zero
  advantage in GRPO, so it costs a rollout and a forward/backward and teaches nothing (and under
  a token-mean loss it also dilutes the step of the groups that do teach). `informative_groups`
  keeps the groups whose rewards differ; `sample_informative` samples more tasks until the step
  has `prompts_per_step` of them or `max_sampling_rounds` rounds were played.
- **Curriculum**: `DifficultyCurriculum` keeps, per env, the level of an env argument
  (`difficulty` by default) its training tasks are drawn at, and moves it once the mean reward
  of the last `window` episodes at that level crosses `promote_at` (up) or `demote_at` (down).
  Held-out evaluation is untouched: it keeps the env's own kwargs. The rollouts play each env
  through one spec per level (`rollout_specs`), the level set in its kwargs.
"""

from __future__ import annotations

import dataclasses
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rlvr.agents.rollouts import EnvSpec, Episode
from rlvr.config import check_numbers


def informative_groups(episodes: Sequence[Episode]) -> list[list[Episode]]:
    """The groups (episodes sharing `group`, in first-seen order) whose judged rewards differ.

    Episodes with an infrastructure error stay with their group (the learner drops them) but do
    not count: a group needs two judged episodes with different rewards.
    """
    groups: dict[int, list[Episode]] = {}
    for episode in episodes:
        groups.setdefault(episode.group, []).append(episode)
    return [members for members in groups.values() if _rewards_differ(members)]


def _rewards_differ(members: Sequence[Episode]) -> bool:
    rewards = {episode.reward for episode in members if not episode.infra_error}
    return len(rewards) > 1


def flat_group_fraction(episodes: Sequence[Episode]) -> float:
    """Share of the groups whose judged rewards are all equal (no GRPO signal)."""
    groups = {episode.group for episode in episodes}
    if not groups:
        return 0.0
    return 1.0 - len(informative_groups(episodes)) / len(groups)


def renumber(groups: Sequence[Sequence[Episode]]) -> list[Episode]:
    """Copies of the episodes of `groups` with `group` set to the group's position (0, 1, ...),
    so that groups gathered over several sampling rounds never share a number (the episodes
    given keep theirs)."""
    return [
        dataclasses.replace(episode, group=number)
        for number, members in enumerate(groups)
        for episode in members
    ]


def sample_informative(
    episodes: list[Episode], sample: Callable[[int], list[Episode]], wanted: int, max_rounds: int
) -> tuple[list[Episode], list[Episode], int]:
    """Dynamic sampling from a step's first batch `episodes`: while it has fewer than `wanted`
    informative groups and fewer than `max_rounds` rounds were played, `sample(count)` plays
    `count` more tasks. Returns the episodes to train on (the first `wanted` informative groups,
    renumbered), every episode sampled, and the rounds played."""
    sampled, kept, rounds = list(episodes), informative_groups(episodes), 1
    while len(kept) < wanted and rounds < max_rounds:
        missing = wanted - len(kept)
        # draw as many tasks as the informative share so far says are needed (a full batch
        # at most), not one round per missing group
        share = max(len(kept), 1) / (rounds * wanted)
        more = sample(min(wanted, math.ceil(missing / share)))
        # sampled groups keep distinct numbers across rounds (for the flat-group share)
        offset = max(episode.group for episode in sampled) + 1
        for episode in more:
            episode.group += offset
        sampled += more
        kept += informative_groups(more)
        rounds += 1
    if not kept:  # nothing to learn from: hand over the first batch (the update is zero)
        return episodes, sampled, rounds
    return renumber(kept[:wanted]), sampled, rounds


@dataclass(frozen=True)
class CurriculumConfig:
    """Train on one difficulty level of each env at a time, moving up as the policy masters it."""

    levels: tuple[int, ...] = (1, 2, 3, 4, 5)
    """The levels of the env argument, easiest first (rlvr/Math-v0 has 1 to 5)."""
    argument: str = "difficulty"
    """The env's keyword argument that sets the level."""
    start: int | None = None
    """The level to start at (None: the first of `levels`)."""
    promote_at: float = 0.8
    """Move up a level once the mean training reward at the current level reaches this."""
    demote_at: float = 0.0
    """Move down a level once it falls to this or below (0: never move down)."""
    window: int = 128
    """Episodes at the current level the mean reward is measured over (the last ones)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", tuple(self.levels))
        check_numbers(self)
        if not self.levels or len(set(self.levels)) != len(self.levels):
            raise ValueError(
                f"curriculum levels must be distinct, easiest first, e.g. (1, 2, 3); got "
                f"{self.levels}"
            )
        if self.start is not None and self.start not in self.levels:
            raise ValueError(f"curriculum start {self.start} is not one of levels {self.levels}")
        if not 0.0 <= self.demote_at < self.promote_at <= 1.0:
            raise ValueError(
                "need 0 <= demote_at < promote_at <= 1 (mean rewards), got "
                f"demote_at={self.demote_at}, promote_at={self.promote_at}"
            )
        if self.window < 1:
            raise ValueError(f"curriculum window must be >= 1 episode, got {self.window}")


class DifficultyCurriculum:
    """The current level of one env and the rewards measured at it (see `CurriculumConfig`)."""

    def __init__(self, config: CurriculumConfig) -> None:
        self.config = config
        start = config.start if config.start is not None else config.levels[0]
        self.index = config.levels.index(start)
        self.rewards: deque[float] = deque(maxlen=config.window)

    @property
    def level(self) -> int:
        return self.config.levels[self.index]

    def record(self, rewards_by_level: Sequence[tuple[int, float]]) -> int:
        """Add `(level, reward)` of each judged episode of a step (those at other levels than
        the current one are ignored), move if a threshold is crossed, and return the level."""
        self.rewards.extend(reward for level, reward in rewards_by_level if level == self.level)
        if len(self.rewards) < self.config.window:
            return self.level
        mean = sum(self.rewards) / len(self.rewards)
        if mean >= self.config.promote_at and self.index + 1 < len(self.config.levels):
            self._move(+1)
        elif self.config.demote_at > 0 and mean <= self.config.demote_at and self.index > 0:
            self._move(-1)
        return self.level

    def _move(self, by: int) -> None:
        self.index += by
        self.rewards.clear()

    def state_dict(self) -> dict[str, Any]:
        return {"index": self.index, "rewards": list(self.rewards)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.index = int(state["index"])
        self.rewards = deque(state["rewards"], maxlen=self.config.window)


def rollout_specs(
    envs: Sequence[EnvSpec], curriculum: CurriculumConfig | None
) -> tuple[list[EnvSpec], list[tuple[int, int | None]]]:
    """The specs the rollouts play, and for each its (env index, curriculum level): the envs as
    given, or with a curriculum one spec per env and level (the level set in its kwargs)."""
    if curriculum is None:
        return list(envs), [(env, None) for env in range(len(envs))]
    specs: list[EnvSpec] = []
    levels: list[tuple[int, int | None]] = []
    for env, spec in enumerate(envs):
        for level in curriculum.levels:
            kwargs = {**spec.kwargs, curriculum.argument: level}
            specs.append(dataclasses.replace(spec, kwargs=kwargs))
            levels.append((env, level))
    return specs, levels
