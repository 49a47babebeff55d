"""What one episode leaves behind, and what the episode loops ask of an actor.

`EpisodeRecord` is the record of one episode, whichever loop played it (`play_episodes` for a
single-agent env, `play_games` for one seat of a multi-agent game) and wherever its env ran: it
begins from the reset's info (`EpisodeRecord.begin`) and holds the episode's bookkeeping and end
rules (`add_turn`), so a loop only resets and steps its envs. Evaluation reports, training
episodes and leaderboard traces all hold these records.

`Start` says which episode an env plays; `Act` is the actor contract both loops share.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple, SupportsFloat

from rlvr.core.policy import Completion

StepResult = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]
"""What `env.step` returns: observation, reward, terminated, truncated, info."""


class Start(NamedTuple):
    """Which episode an env plays: its number, which sample of it, and the seed of its reset."""

    episode: int
    sample: int
    seed: int


@dataclass
class EpisodeRecord:
    """Everything that happened in one episode (enough to re-verify it later)."""

    episode: int
    sample: int
    seed: int
    task_id: str
    messages: list[dict[str, Any]]
    rewards: list[float]
    verdict: dict[str, Any] | None
    infra_error: bool
    truncated: bool
    task_hash: str | None = None
    """Fingerprint of the posed task, gold answer included (None if the env exposes no `task`)."""
    completion_tokens: int | None = None
    """Tokens the policy generated over the episode (None when the policy does not report them)."""
    prompt_tokens: int | None = None
    """Prompt tokens the policy reported (API servers do; None otherwise)."""

    @classmethod
    def begin(cls, start: Start, info: Mapping[str, Any], task_hash: str | None) -> EpisodeRecord:
        """The record of an episode just reset (`info` is what `reset` returned)."""
        episode, sample, seed = start
        return cls(
            episode,
            sample,
            seed,
            info["task_id"],
            messages=info["messages"],
            rewards=[],
            verdict=None,
            infra_error=False,
            truncated=False,
            task_hash=task_hash,
            completion_tokens=0,
            prompt_tokens=0,
        )

    def add_turn(self, reply: Completion, step: StepResult, max_turns: int | None = None) -> bool:
        """Record a reply and what `env.step(reply.text)` returned (`step`): its reward, the
        conversation after it, verdict, flags and token counts (an unknown count makes the
        episode's total unknown). Returns whether the episode goes on: not once the env ended
        it, nor after `max_turns` replies (truncated unless the env terminated it)."""
        _, reward, terminated, truncated, info = step
        self.rewards.append(float(reward))
        self.messages = info["messages"]
        self.verdict = info.get("verdict", self.verdict)
        self.infra_error = self.infra_error or bool(info["infra_error"])
        generated = reply.metadata.get("completion_tokens")
        if reply.token_ids is not None:
            generated = len(reply.token_ids)
        self.completion_tokens = _add(self.completion_tokens, generated)
        self.prompt_tokens = _add(self.prompt_tokens, reply.metadata.get("prompt_tokens"))
        cut = max_turns is not None and self.turns >= max_turns
        self.truncated = bool(truncated) or (cut and not terminated)
        return not (terminated or truncated or cut)

    @property
    def total_reward(self) -> float:
        return float(sum(self.rewards))

    @property
    def turns(self) -> int:
        return len(self.rewards)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "total_reward": self.total_reward}


def _add(total: int | None, count: Any) -> int | None:
    if total is None or not isinstance(count, int):
        return None
    return total + count


Act = Callable[[list[int], list[EpisodeRecord]], Sequence[Completion | None]]
"""`act(active, records) -> replies`: one reply for each still-running episode, where `active[k]`
is the episode's position in the batch and `records[k]` its record so far (read it, do not change
it: `records[k].messages` is the conversation to answer, `.turns` the replies already given).
A reply of None means the actor has none to give: the episode stops there, marked truncated."""

ResetOptions = Callable[[int], dict[str, Any] | None]
"""`reset_options(episode)`: the `options` of that episode's reset (e.g. to pin a task)."""
