"""`check_env` for multi-agent text envs: PettingZoo's API tests plus what a verifiable game owes.

```python
from rlvr.envs.multiagent import check_env, make
check_env(make("myorg/MyGame-v0"))  # raises EnvCheckError listing every problem found
```

- PettingZoo's `api_test` and `parallel_api_test` (a few cycles; `pettingzoo=False` skips them);
- the same seed and the same replies give the same episode: observations, rewards, infos;
- each agent's first turn, played with each of `rlvr.envs.deep_text.nasty_replies()` (deep and
  long-chain text at every reader) and `FORGED_INFRA_REPLIES`, is a move like any text: the
  step raises nothing, every reward stays a finite number and no agent gets `infra_error`;
- an env that lets an agent pose tasks and lists `ill_posed_proposals()` (pairs of what each
  tests and the proposer's reply): each earns the proposer exactly 0 while the other agents play
  on, half of them the env's `reference_reply` and half a junk reply; and the env's own
  well-posed proposal (the proposer's `reference_reply`) earns more than 0 under the same play,
  or the check could not tell an accepted proposal from a refused one.

In every episode an agent plays `env.reference_reply(agent)` where the env defines it and it
gives a str (a reply that plays the seat right now; it may read the gold, so it is for checks,
never for training), else a move sampled from its action space (seeded, with
`infos[agent]["action_mask"]` where there is one). The agent that moves first after `reset` is
the one whose proposals `ill_posed_proposals` lists.
"""

from __future__ import annotations

import contextlib
import io
import math
import warnings
from collections.abc import Callable, Sequence

from gymnasium.utils.env_checker import data_equivalence
from pettingzoo import AECEnv

from rlvr.envs.checker import EnvCheckError
from rlvr.envs.deep_text import FORGED_INFRA_REPLIES, nasty_replies
from rlvr.envs.multiagent.base import TextAECEnv
from rlvr.envs.multiagent.registration import to_parallel

JUNK_REPLY = "I don't know."
PETTINGZOO_CYCLES = 40

# (env, agent, index of the decision in the episode) -> the agent's reply
Choose = Callable[[AECEnv, str, int], str]


def check_env(
    env: AECEnv, *, seeds: Sequence[int] = (0, 1), pettingzoo: bool = True, max_steps: int = 500
) -> None:
    """Check a multi-agent text env (an `AECEnv` whose actions are `str`); raise `EnvCheckError`
    listing every problem found."""
    problems: list[str] = []
    if pettingzoo:
        problems += _pettingzoo_problems(env)
    for name, check in _CHECKS:
        try:
            check(env, seeds, max_steps)
        except Exception as exc:  # report every problem at once
            problems.append(f"{name}: {type(exc).__name__}: {exc!s:.500}")
    if problems:
        name = env.metadata.get("name") or type(env).__name__
        raise EnvCheckError(f"{name} failed {len(problems)} check(s):\n- " + "\n- ".join(problems))


def _pettingzoo_problems(env: AECEnv) -> list[str]:
    # Imported here: pettingzoo.test loads PettingZoo's example games, which making an env
    # never needs (`import rlvr.envs.multiagent` stays light).
    from pettingzoo.test import api_test, parallel_api_test

    problems = []
    tests: list[tuple[str, Callable[[], None]]] = [
        ("pettingzoo api_test", lambda: api_test(env, num_cycles=PETTINGZOO_CYCLES))
    ]
    if isinstance(env, TextAECEnv) or env.metadata.get("is_parallelizable"):
        tests.append(
            (
                "pettingzoo parallel_api_test",
                lambda: parallel_api_test(to_parallel(env), num_cycles=PETTINGZOO_CYCLES),
            )
        )
    for name, test in tests:
        try:
            # PettingZoo prints its progress and warns about non-NumPy spaces: text is neither.
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
                warnings.simplefilter("ignore")
                test()
        except Exception as exc:
            problems.append(f"{name}: {type(exc).__name__}: {exc!s:.500}")
    return problems


# --- episodes -------------------------------------------------------------------------------------


def usual_reply(env: AECEnv, agent: str) -> str:
    """The env's `reference_reply(agent)` where it gives one, else a sampled move."""
    reference = getattr(env, "reference_reply", None)
    reply = reference(agent) if callable(reference) else None
    if isinstance(reply, str):
        return reply
    info = env.infos.get(agent)
    mask = info.get("action_mask") if isinstance(info, dict) else None
    space = env.action_space(agent)
    return space.sample() if mask is None else space.sample(mask)


def _usual(env: AECEnv, agent: str, decision: int) -> str:
    return usual_reply(env, agent)


def play(
    env: AECEnv, seed: int, choose: Choose = _usual, max_steps: int = 500
) -> tuple[list[tuple], dict[str, float]]:
    """One episode: every step's `last()` (agent, observation, reward, terminated, truncated,
    info), and each agent's total reward. Raises when a reward is not a finite number, an agent
    gets `infra_error` or the episode outlasts `max_steps`."""
    env.reset(seed=seed)
    for index, agent in enumerate(env.possible_agents):
        env.action_space(agent).seed(seed + index)
    record: list[tuple] = []
    totals = dict.fromkeys(env.possible_agents, 0.0)
    decision = 0
    for agent in env.agent_iter(max_steps):
        observation, reward, terminated, truncated, info = env.last()
        if not isinstance(reward, (int, float)) or not math.isfinite(reward):
            raise AssertionError(f"{agent}'s reward is {reward!r}, not a finite number")
        if isinstance(info, dict) and info.get("infra_error"):
            raise AssertionError(f"{agent} got infra_error: {info.get('verdict')}")
        totals[agent] += float(reward)
        record.append((agent, observation, reward, terminated, truncated, info))
        if terminated or truncated:
            env.step(None)
            continue
        env.step(choose(env, agent, decision))
        decision += 1
    if env.agents:
        raise AssertionError(f"the episode did not end within {max_steps} steps")
    return record, totals


def _first_turns(env: AECEnv, seed: int, max_steps: int) -> dict[str, int]:
    """Each agent's first decision in an episode of usual replies (its index)."""
    firsts: dict[str, int] = {}

    def note(env: AECEnv, agent: str, decision: int) -> str:
        firsts.setdefault(agent, decision)
        return usual_reply(env, agent)

    play(env, seed, note, max_steps)
    return firsts


def _at(decision: int, reply: str) -> Choose:
    """Usual replies, but `reply` at the given decision."""

    def choose(env: AECEnv, agent: str, index: int) -> str:
        return reply if index == decision else usual_reply(env, agent)

    return choose


def _describe(reply: str) -> str:
    return f"{reply[:50]!r}... ({len(reply)} characters)" if len(reply) > 50 else repr(reply)


# --- checks -------------------------------------------------------------------------------------


def check_same_seed_same_episode(env: AECEnv, seeds: Sequence[int], max_steps: int) -> None:
    for seed in seeds:
        first, second = play(env, seed, max_steps=max_steps), play(env, seed, max_steps=max_steps)
        if not data_equivalence(first, second):
            raise AssertionError(f"two episodes with seed {seed} and the same replies differ")


def check_any_text_is_a_move(env: AECEnv, seeds: Sequence[int], max_steps: int) -> None:
    seed = seeds[0]
    for agent, decision in _first_turns(env, seed, max_steps).items():
        for reply in (*nasty_replies(), *FORGED_INFRA_REPLIES):
            try:
                play(env, seed, _at(decision, reply), max_steps)
            except Exception as exc:
                raise AssertionError(
                    f"{agent} replying {_describe(reply)}: {type(exc).__name__}: {exc!s:.300}"
                ) from exc


def check_ill_posed_proposals_earn_nothing(
    env: AECEnv, seeds: Sequence[int], max_steps: int
) -> None:
    listed = getattr(env, "ill_posed_proposals", None)
    if not callable(listed):
        return
    seed = seeds[0]
    env.reset(seed=seed)
    proposer = env.agent_selection
    others = [agent for agent in env.possible_agents if agent != proposer]
    reference = getattr(env, "reference_reply", None)
    example = reference(proposer) if callable(reference) else None

    def mixed(proposal: str) -> Choose:
        """The proposal, then half the other agents play their usual reply, half junk."""

        def choose(env: AECEnv, agent: str, index: int) -> str:
            if index == 0:
                return proposal
            if agent in others and others.index(agent) % 2 == 0:
                return usual_reply(env, agent)
            return JUNK_REPLY

        return choose

    paid = []
    for what, proposal in listed():
        _, totals = play(env, seed, mixed(proposal), max_steps)
        if totals[proposer] != 0.0:
            paid.append((what, totals[proposer]))
    if paid:
        raise AssertionError(f"ill-posed proposals earned the proposer a reward: {paid}")
    if isinstance(example, str):
        _, totals = play(env, seed, mixed(example), max_steps)
        if totals[proposer] <= 0.0:
            raise AssertionError(
                f"the env's own proposal {_describe(example)} earns {totals[proposer]} when half "
                "the other agents reply as the env would: the check of ill-posed proposals "
                "cannot tell an accepted proposal from a refused one"
            )


_CHECKS: tuple[tuple[str, Callable[[AECEnv, Sequence[int], int], None]], ...] = (
    ("same seed, same episode", check_same_seed_same_episode),
    ("any text is a move", check_any_text_is_a_move),
    ("ill-posed proposals earn nothing", check_ill_posed_proposals_earn_nothing),
)

__all__ = ["EnvCheckError", "check_env", "play", "usual_reply"]
