"""The one table of agent kinds: how a spec string such as `hf:runs/tiny` becomes a `Policy`,
and how `rlvr bench` runs that kind of agent.

A spec is `KIND` or `KIND:ARGUMENT`. Each kind is an `AgentKind`: its builder (a callable, or an
import string `"module:function"` loaded only when a policy of that kind is built, so reading the
table imports nothing heavy), its help, and how the leaderboard runner spreads it:

- `parallelism="processes"`: shards run in worker processes, each building its own policy (cheap
  scripted agents, whose time goes into the envs and verifiers: Python CPU work);
- `"threads"`: shards run in threads, each with its own policy (API clients waiting on the
  network);
- `"serial"`: shards run one after another (the default, and the only choice for unknown
  thread safety);
- `shared=True`: one policy is built and every shard uses it (a local model, loaded once).

Like `rlvr.agents.policy`, this module imports neither torch nor the policies it describes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, cast, get_args

from rlvr.agents.policy import Policy

Parallelism = Literal["processes", "threads", "serial"]
PARALLELISMS: tuple[str, ...] = get_args(Parallelism)

Builder = Callable[[str], Policy]
"""`builder(argument) -> Policy`; `argument` is the spec's part after the first ':' (or "")."""


@dataclass(frozen=True)
class AgentKind:
    """One kind of agent, as specs name it."""

    name: str
    """The part of a spec before ':' (`hf` in `hf:runs/tiny`)."""
    build: Builder | str
    """`build(argument) -> Policy`, or the import string `"module:function"` of such a function."""
    help: str
    """One line for `--agent`'s help."""
    usage: str = ""
    """How a spec of this kind is written (default `NAME:ARG`)."""
    parallelism: Parallelism = "serial"
    """How `rlvr bench --parallel auto` runs it: processes, threads or serial."""
    shared: bool = False
    """Build one policy and share it between every shard (when loading is the expensive part)."""

    def __post_init__(self) -> None:
        if not self.name or ":" in self.name:
            raise ValueError(
                f"an agent kind's name must be non-empty without ':', got {self.name!r}"
            )
        if self.parallelism not in PARALLELISMS:
            raise ValueError(
                f"agent kind {self.name!r}: parallelism must be one of {PARALLELISMS}, "
                f"got {self.parallelism!r}"
            )
        if self.shared and self.parallelism == "processes":
            raise ValueError(
                f"agent kind {self.name!r}: a shared policy cannot run in processes (each worker "
                "would build its own); use parallelism='serial' or 'threads'"
            )
        if isinstance(self.build, str) and ":" not in self.build:
            raise ValueError(
                f"agent kind {self.name!r}: build={self.build!r} must be a callable or an import "
                "string 'module:function'"
            )

    @property
    def spec(self) -> str:
        return self.usage or f"{self.name}:ARG"

    def make(self, argument: str = "") -> Policy:
        """A policy of this kind from the spec's argument."""
        return self._builder()(argument)

    def _builder(self) -> Builder:
        if callable(self.build):
            return self.build
        module, _, attribute = self.build.partition(":")
        return cast(Builder, getattr(importlib.import_module(module), attribute))


# --- the built-in kinds ---------------------------------------------------------------------------


def _oracle(argument: str) -> Policy:
    from rlvr.agents.scripted import OraclePolicy

    return OraclePolicy()


def _random(argument: str) -> Policy:
    from rlvr.agents.scripted import RandomPolicy

    return RandomPolicy(seed=_seed(argument, "random:SEED"))


def _seed(argument: str, spec: str) -> int:
    try:
        return int(argument or 0)
    except ValueError:
        raise ValueError(f"{spec} takes an integer seed, got {argument!r}") from None


def _legal(argument: str) -> Policy:
    from rlvr.agents.scripted import LegalMovePolicy

    return LegalMovePolicy(seed=_seed(argument, "legal:SEED"))


def _fixed(argument: str) -> Policy:
    from rlvr.agents.scripted import FixedPolicy

    return FixedPolicy(argument)


def _hf(path: str) -> Policy:
    if not path:
        raise ValueError("hf:PATH needs a model folder or hub id, e.g. hf:runs/tiny")
    from rlvr.agents.hf import HFPolicy  # imports torch: only when asked for

    return HFPolicy(path)


def _openai(argument: str) -> Policy:
    url, _, model = argument.partition("#")
    if not url:
        raise ValueError(
            "openai:URL needs the server's base URL, e.g. openai:http://127.0.0.1:8000/v1"
        )
    from rlvr.agents.openai_chat import OpenAIChatPolicy

    return OpenAIChatPolicy(url, model or "default")


AGENT_KINDS: dict[str, AgentKind] = {
    kind.name: kind
    for kind in (
        AgentKind(
            "oracle",
            _oracle,
            "replies with the gold answer (upper bound, sanity check)",
            usage="oracle",
            parallelism="processes",
        ),
        AgentKind(
            "random",
            _random,
            "random words (lower bound)",
            usage="random[:SEED]",
            parallelism="processes",
        ),
        AgentKind(
            "fixed", _fixed, "always replies TEXT", usage="fixed:TEXT", parallelism="processes"
        ),
        AgentKind(
            "hf",
            _hf,
            "a transformers model folder or hub id (needs the agents extra)",
            usage="hf:PATH",
            parallelism="serial",
            shared=True,
        ),
        AgentKind(
            "openai",
            _openai,
            "an OpenAI-compatible chat server, e.g. openai:http://127.0.0.1:8000/v1#qwen",
            usage="openai:URL[#MODEL]",
            parallelism="threads",
        ),
        AgentKind(
            "legal",
            _legal,
            "a random legal move in a multi-agent game with a move list, e.g. rlvr/Connect4-v0",
            usage="legal[:SEED]",
            parallelism="processes",
        ),
    )
}
"""Every agent kind by name; `register_agent` adds yours."""


def agent_kind(spec: str) -> AgentKind:
    """The kind a spec names (`hf` for `hf:runs/tiny`); ValueError listing the kinds if none."""
    kind = AGENT_KINDS.get(spec.partition(":")[0])
    if kind is None:
        raise ValueError(f"unknown agent {spec!r}; use one of: {agent_specs()}")
    return kind


def make_policy(spec: str) -> Policy:
    """`oracle`, `random[:SEED]`, `fixed:TEXT`, `hf:PATH`, `openai:URL[#MODEL]`, `legal[:SEED]`,
    or a registered `kind:argument`."""
    return agent_kind(spec).make(spec.partition(":")[2])


def agent_specs() -> str:
    """The specs of every kind, for help texts: `oracle, random[:SEED], fixed:TEXT, ...`."""
    return ", ".join(kind.spec for kind in AGENT_KINDS.values())


def agent_help() -> str:
    """The help text of an `--agent` flag (rlvr eval, rlvr bench): every kind's spec."""
    return f"One of: {agent_specs()}."


def register_agent(
    kind: str,
    build: Builder | str,
    help: str,
    *,
    usage: str = "",
    parallelism: Parallelism = "serial",
    shared: bool = False,
) -> AgentKind:
    """Make `kind:argument` specs build policies with `build(argument)` (a callable, or the
    import string `"module:function"` of one); replaces a kind of the same name. Worker processes
    started with spawn must register it too (a leaderboard suite's `imports`)."""
    entry = AgentKind(kind, build, help, usage, parallelism, shared)
    AGENT_KINDS[kind] = entry
    return entry
