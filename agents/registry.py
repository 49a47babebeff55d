"""Build a policy from a short spec string, as the command line takes them."""

from __future__ import annotations

from collections.abc import Callable

from rlvr.agents.policy import Policy
from rlvr.agents.scripted import FixedPolicy, OraclePolicy, RandomPolicy

AGENT_SPECS: dict[str, str] = {
    "oracle": "replies with the gold answer (upper bound, sanity check)",
    "random": "random words (lower bound)",
    "fixed:TEXT": "always replies TEXT",
}

_BUILDERS: dict[str, Callable[[str], Policy]] = {
    "oracle": lambda _: OraclePolicy(),
    "random": lambda argument: RandomPolicy(seed=int(argument or 0)),
    "fixed": lambda argument: FixedPolicy(argument),
}


def make_policy(spec: str) -> Policy:
    """`oracle`, `random[:SEED]`, `fixed:TEXT`, or another registered `kind:argument`."""
    kind, _, argument = spec.partition(":")
    builder = _BUILDERS.get(kind)
    if builder is None:
        raise ValueError(f"unknown agent {spec!r}; use one of: {', '.join(AGENT_SPECS)}")
    return builder(argument)


def register_agent(kind: str, builder: Callable[[str], Policy], help: str) -> None:
    """Make `kind:argument` specs build policies with `builder(argument)`."""
    _BUILDERS[kind] = builder
    AGENT_SPECS[f"{kind}:ARG"] = help
