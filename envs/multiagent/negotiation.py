"""`rlvr/Negotiation-v0`: two agents split a pool of items, each valuing them privately."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from rlvr.envs.errors import EnvConfigError
from rlvr.envs.multiagent.base import Round, TextAECEnv
from rlvr.envs.multiagent.parallel import TextParallelEnv
from rlvr.envs.options import declare, whole
from rlvr.envs.replies import last_tagged, shorten

ITEMS = ("book", "hat", "ball")
TOTAL_VALUE = 10
MAX_COUNT = 4
_PAIR = re.compile(r"([a-z]+)\s*[=:]\s*(\d{1,3})")
_ACCEPT = re.compile(r"<accept\s*/?>", re.IGNORECASE)
_MAX_PROPOSAL_CHARS = 200


class NegotiationEnv(TextAECEnv):
    """Split books, hats and balls; each agent values them privately; a deal pays its value.

    ## Description
    A pool of items (1 to 4 each of book, hat and ball) is split between two agents who take
    turns talking. Each agent has private per-item values (whole numbers, the pool worth 10 to
    each) that only it sees. A turn is free text that may hold one proposal,
    `<propose>book=1, hat=0, ball=2</propose>` (what the speaker takes; the partner gets the
    rest), or `<accept>`, which accepts the partner's proposal of the turn before. A proposal
    not accepted at once lapses. The deal parser is strict: every item named once (singular or
    plural), whole numbers within the pool, nothing else inside the tag. Turn-based (AEC);
    `parallel_env()` takes one turn per `step`.

    ## Agents
    `player_0` (speaks first), `player_1`.

    ## Action Space
    `TextSpace`: the turn's text. Everything the speaker writes is relayed to the partner
    (clipped to an eighth of `max_text_length`), with a one-line summary of a proposal.

    ## Observation Space
    `TextSpace`: the rules, the pool and the agent's own values after `reset`; then the
    partner's turn. An agent never sees the other's values (unless the other writes them).

    ## Rewards
    At a deal, each agent gets the value of its share divided by 10 (in [0, 1]; general-sum).
    No deal within `max_turns`: 0 for both. A malformed turn (an unreadable or impossible
    proposal, both `<accept>` and `<propose>`, `<accept>` with nothing to accept) ends the
    negotiation at once with no deal: the mover's loss, and, as for any invalid deal, nothing
    for both. `infos[agent]["outcome"]` is "deal", "no_deal" or "malformed" at the end.

    ## Starting State
    Counts and values drawn with `np_random`: counts uniform in 1..4, each agent's values
    uniform among the whole-number vectors worth 10 in total. Pin them with
    `options={"counts": [3, 1, 2], "values": {"player_0": [2, 4, 0], "player_1": [...]}}`.

    ## Episode End
    A deal, `max_turns` turns without one, or a malformed turn. Every agent is then terminated.

    ## Arguments
    - `max_turns`: turns in all, both agents counted (default 6).
    - `render_mode`, `max_text_length`: as for every `TextAECEnv`.

    ## Version History
    - v0: initial release.
    """

    metadata: ClassVar[dict[str, Any]] = {**TextAECEnv.metadata, "name": "negotiation_v0"}
    reset_options: ClassVar[frozenset[str]] = frozenset({"counts", "values"})
    argument_checks = declare(max_turns=whole(2))

    def __init__(
        self,
        *,
        max_turns: int = 6,
        render_mode: str | None = None,
        max_text_length: int = 1 << 16,
    ) -> None:
        super().__init__(
            ("player_0", "player_1"), render_mode=render_mode, max_text_length=max_text_length
        )
        self.max_turns = max_turns
        self.counts: tuple[int, ...] = ()
        self.values: dict[str, tuple[int, ...]] = {}
        self._turn = 0
        self._on_table: tuple[str, tuple[int, ...]] | None = None  # (proposer, its share)

    # --- the game -------------------------------------------------------------------------------

    def _start(self, options: dict[str, Any]) -> dict[str, str]:
        self.counts = _pinned_counts(options["counts"]) if "counts" in options else self._draw()
        given = options.get("values", {})
        if not isinstance(given, Mapping) or not set(given) <= set(self.possible_agents):
            raise EnvConfigError(f"options['values'] maps agents to values, got {given!r}")
        self.values = {
            agent: _pinned_values(given[agent], self.counts)
            if agent in given
            else self._draw_values()
            for agent in self.possible_agents
        }
        self._turn = 0
        self._on_table = None
        return {agent: self._opening(agent) for agent in self.possible_agents}

    def _movers(self) -> list[str]:
        return [self.possible_agents[self._turn % 2]]

    def _play(self, moves: dict[str, str]) -> Round:
        ((mover, reply),) = moves.items()
        partner = self._partner(mover)
        self._turn += 1
        proposal, problem = self.read_turn(reply)
        if problem is not None:
            text = f"{mover}'s turn was malformed ({problem}): the negotiation ends, no deal."
            return self._end("malformed", text, info={"malformed_by": mover})
        if isinstance(proposal, str):  # "accept", the only text read_turn returns
            assert self._on_table is not None  # read_turn refuses an accept with nothing on it
            proposer, share = self._on_table
            deal = {proposer: share, self._partner(proposer): _rest(self.counts, share)}
            return self._end("deal", f"{mover} accepts: deal.", deal=deal)
        self._on_table = None if proposal is None else (mover, proposal)
        if self._turn >= self.max_turns:
            return self._end("no_deal", f"{self.max_turns} turns without a deal: no deal.")
        return Round(messages={partner: self._relay(reply, proposal)})

    def read_turn(self, reply: str) -> tuple[tuple[int, ...] | str | None, str | None]:
        """(share, None) for a proposal, ("accept", None), (None, None) for talk only, or
        (None, why) for a malformed turn."""
        accepts = _ACCEPT.search(reply) is not None
        body = last_tagged(reply, "propose")
        if accepts and body is not None:
            return None, "both <accept> and <propose>"
        if accepts:
            if self._on_table is None:
                return None, "<accept> with nothing to accept"
            return "accept", None
        if body is None:
            if re.search(r"<propose\b", reply, re.IGNORECASE):
                return None, "a <propose> tag that is not closed"
            return None, None
        share, problem = self._read_share(body)
        return (share, None) if problem is None else (None, problem)

    def _read_share(self, body: str) -> tuple[tuple[int, ...], str | None]:
        text = body.strip().lower()
        if len(text) > _MAX_PROPOSAL_CHARS:
            return (), f"a proposal of {len(text)} characters"
        if _PAIR.sub("", text).strip(" \t\n,;.") != "":
            return (), f"{shorten(body, 60)!r} is not a list of item=number"
        share = dict.fromkeys(ITEMS, -1)
        for name, number in _PAIR.findall(text):
            item = name[:-1] if name.endswith("s") and name[:-1] in ITEMS else name
            if item not in share:
                return (), f"unknown item {name!r}; the items are {', '.join(ITEMS)}"
            if share[item] != -1:
                return (), f"{item} named twice"
            share[item] = int(number)
        missing = [item for item, n in share.items() if n == -1]
        if missing:
            return (), f"the proposal does not say how many of {', '.join(missing)}"
        for item, count in zip(ITEMS, self.counts):
            if share[item] > count:
                return (), f"{share[item]} {item}s asked, the pool has {count}"
        return tuple(share[item] for item in ITEMS), None

    # --- texts and outcomes ---------------------------------------------------------------------

    def _opening(self, agent: str) -> str:
        values = ", ".join(f"{item}={value}" for item, value in zip(ITEMS, self.values[agent]))
        order = (
            "You speak first." if agent == self.possible_agents[0] else "Your partner speaks first."
        )
        return (
            f"You and a partner must agree how to split these items: {_pool(self.counts)}. "
            f"Your private values per item are {values}; the whole pool is worth "
            f"{TOTAL_VALUE} to you. Your partner has private values of its own; neither of you "
            f"sees the other's. You take turns, {self.max_turns} turns in all. In a turn, write "
            "freely (your partner reads it all) and optionally either propose a split with "
            "<propose>book=B, hat=H, ball=L</propose>, the numbers YOU get (your partner gets "
            "the rest), or accept your partner's last proposal with <accept>. A proposal not "
            "accepted in the very next turn lapses. A malformed turn (an unreadable or "
            "impossible proposal, both <accept> and <propose>, or <accept> with nothing to "
            "accept) ends the negotiation with nothing for either of you. Your reward is the "
            f"value of what you get divided by {TOTAL_VALUE}; no deal gives 0. {order}"
        )

    def _relay(self, reply: str, proposal: tuple[int, ...] | None) -> str:
        text = f"Your partner says:\n{self.quote(reply)}"
        if proposal is not None:
            yours = _rest(self.counts, proposal)
            text += (
                f"\n\nProposal on the table: you would get {_share_text(yours)} and your "
                f"partner {_share_text(proposal)}. Reply <accept> to take it."
            )
        if self._turn == self.max_turns - 1:
            text += "\n\nThis is the last turn."
        return text

    def _end(
        self,
        outcome: str,
        text: str,
        *,
        deal: dict[str, tuple[int, ...]] | None = None,
        info: dict[str, Any] | None = None,
    ) -> Round:
        rewards = dict.fromkeys(self.possible_agents, 0.0)
        extra: dict[str, Any] = {"outcome": outcome, **(info or {})}
        if deal is not None:
            for agent, share in deal.items():
                rewards[agent] = float(np.dot(share, self.values[agent])) / TOTAL_VALUE
            extra["deal"] = {agent: _share_dict(share) for agent, share in deal.items()}
        return Round(
            messages=dict.fromkeys(self.possible_agents, text),
            rewards=rewards,
            game_over=True,
            reward_terms={agent: {"value": reward} for agent, reward in rewards.items()},
            info=dict.fromkeys(self.possible_agents, extra),
        )

    def _partner(self, agent: str) -> str:
        return self.possible_agents[1 - self.possible_agents.index(agent)]

    def _draw(self) -> tuple[int, ...]:
        return POOLS[int(self.np_random.integers(len(POOLS)))]

    def _draw_values(self) -> tuple[int, ...]:
        choices = _value_vectors(self.counts)
        return choices[int(self.np_random.integers(len(choices)))]


def _value_vectors(counts: Sequence[int]) -> list[tuple[int, ...]]:
    """Every whole-number value vector that makes the pool worth `TOTAL_VALUE`."""
    return [
        values
        for values in itertools.product(range(TOTAL_VALUE + 1), repeat=len(ITEMS))
        if int(np.dot(counts, values)) == TOTAL_VALUE
    ]


# Pools some whole-number values make worth TOTAL_VALUE (not 4 of each: 4(a+b+c) is never 10).
POOLS = [
    counts
    for counts in itertools.product(range(1, MAX_COUNT + 1), repeat=len(ITEMS))
    if _value_vectors(counts)
]


def _pinned_counts(counts: Any) -> tuple[int, ...]:
    if not _ints(counts) or tuple(counts) not in POOLS:
        raise EnvConfigError(
            f"options['counts'] must be {len(ITEMS)} ints in 1..{MAX_COUNT} ({', '.join(ITEMS)}) "
            f"that whole-number values can make worth {TOTAL_VALUE}, got {counts!r}"
        )
    return tuple(counts)


def _pinned_values(values: Any, counts: Sequence[int]) -> tuple[int, ...]:
    if not _ints(values) or min(values) < 0 or int(np.dot(counts, values)) != TOTAL_VALUE:
        raise EnvConfigError(
            f"options['values'] entries must be {len(ITEMS)} ints >= 0 making the pool worth "
            f"{TOTAL_VALUE}, got {values!r} for counts {list(counts)}"
        )
    return tuple(values)


def _ints(values: Any) -> bool:
    return (
        isinstance(values, (list, tuple))
        and len(values) == len(ITEMS)
        and all(isinstance(v, int) and not isinstance(v, bool) for v in values)
    )


def _rest(counts: Sequence[int], share: Sequence[int]) -> tuple[int, ...]:
    return tuple(count - taken for count, taken in zip(counts, share))


def _share_dict(share: Sequence[int]) -> dict[str, int]:
    return {item: int(n) for item, n in zip(ITEMS, share)}


def _share_text(share: Sequence[int]) -> str:
    return ", ".join(f"{item}={n}" for item, n in zip(ITEMS, share))


def _pool(counts: Sequence[int]) -> str:
    return ", ".join(f"{n} {item}{'s' if n > 1 else ''}" for item, n in zip(ITEMS, counts))


def env(**kwargs: Any) -> NegotiationEnv:
    """The AEC env (PettingZoo module style); it enforces call order itself."""
    return NegotiationEnv(**kwargs)


def parallel_env(**kwargs: Any) -> TextParallelEnv:
    """The Parallel env: one turn per step."""
    return TextParallelEnv(NegotiationEnv(**kwargs))


raw_env = NegotiationEnv
