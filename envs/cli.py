"""`rlvr envs` (list environments) and `rlvr play ENV_ID` (play one in the terminal)."""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from rlvr.config import Seed, flag_type


def add_commands(subparsers: Any) -> None:
    envs = subparsers.add_parser("envs", help="list registered environments")
    envs.add_argument("--all", action="store_true", help="include every Gymnasium env")
    envs.set_defaults(func=list_envs)

    play = subparsers.add_parser("play", help="play an environment in the terminal")
    play.add_argument("env_id", help="e.g. rlvr/Math-v0")
    play.add_argument(
        "--seed", type=flag_type(Seed), default=None, help="seed of the first episode"
    )
    play.add_argument(
        "--kwargs", type=flag_type(Mapping[str, Any]), default={}, help="env kwargs as JSON"
    )
    play.set_defaults(func=play_env)


def card_summary(env_id: str) -> str:
    """First line of the env class's docstring (its env card)."""
    return entry_point_summary(gym.spec(env_id).entry_point)


def entry_point_summary(entry: Any) -> str:
    """First docstring line of an entry point (a class, a factory or "module:attribute")."""
    if isinstance(entry, str):
        module_name, _, attr = entry.partition(":")
        try:
            entry = getattr(__import__(module_name, fromlist=[attr]), attr)
        except (ImportError, AttributeError) as exc:
            return f"(cannot import {module_name}:{attr}: {exc})"
    doc = inspect.getdoc(entry) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


MULTIAGENT_MARK = "[multi-agent]"
NO_FAMILY = "not in a family"


def list_envs(args: argparse.Namespace) -> int:
    """The ids grouped by family (a header line each, from the descriptors), each with its card
    summary; multi-agent ids (rlvr.envs.multiagent.make) are marked as such. Ids no family owns
    (registered by your code, or Gymnasium's own with --all) come last."""
    import rlvr  # noqa: F401  (registers the environments)
    from rlvr.envs.multiagent import registry as multiagent_registry
    from rlvr.envs.registration import user_env_ids
    from rlvr.families import families

    ours = {*(i for i in gym.registry if gym.registry[i].namespace == "rlvr"), *user_env_ids()}
    listed = {*(gym.registry if args.all else ours), *multiagent_registry}
    width = max((len(env_id) for env_id in listed), default=0)
    groups = [(_family_header(f.name, f.docs), f.env_ids) for f in families()]
    owned = {env_id for _, ids in groups for env_id in ids}
    groups.append((NO_FAMILY, sorted(listed - owned)))
    first = True
    for header, ids in groups:
        shown = [env_id for env_id in ids if env_id in listed]
        if not shown:
            continue
        print(("" if first else "\n") + header)
        first = False
        for env_id in shown:
            if env_id in multiagent_registry:
                summary = entry_point_summary(multiagent_registry[env_id].entry_point)
                print(f"{env_id:<{width}}  {MULTIAGENT_MARK} {summary}")
            else:
                print(f"{env_id:<{width}}  {card_summary(env_id)}")
    return 0


def _family_header(name: str, docs: str) -> str:
    return f"family {name}" + (f"  ({docs})" if docs else "")


def play_env(args: argparse.Namespace) -> int:
    """Show each observation, read the reply (end it with a line holding only '.')."""
    import rlvr  # noqa: F401
    from rlvr.envs.errors import EnvError
    from rlvr.envs.multiagent import make
    from rlvr.envs.multiagent import registry as multiagent_registry

    multiagent = args.env_id in multiagent_registry
    try:  # an unknown id or bad kwargs: one line, not a traceback
        env = (make if multiagent else gym.make)(args.env_id, **args.kwargs)
    except (gym.error.Error, EnvError, TypeError, ValueError) as exc:
        print(f"error: {args.env_id}: {exc}", file=sys.stderr)
        return 1
    print("Type your reply; end it with a line holding only '.'. Commands: /new, /quit.\n")
    if multiagent:
        return play_multiagent(env, args.seed)
    seed = args.seed
    try:
        while True:
            observation, info = env.reset(seed=seed)
            seed = None if seed is None else seed + 1
            print(f"--- task {info['task_id']} ---\n{observation}\n")
            total, done = 0.0, False
            while not done:
                reply = _read_reply()
                if reply is None or reply.strip() == "/quit":
                    return 0
                if reply.strip() == "/new":
                    break
                observation, reward, terminated, truncated, info = env.step(reply)
                total += float(reward)
                done = terminated or truncated
                print(f"\n{observation}\n[reward {reward:.3f}, return {total:.3f}]\n")
    finally:
        env.close()


def play_multiagent(env: Any, seed: int | None) -> int:
    """Play every seat of a multi-agent env in turn: each agent's observation, then its reply."""
    try:
        while True:
            env.reset(seed=seed)
            seed = None if seed is None else seed + 1
            for agent in env.agent_iter():
                observation, reward, terminated, truncated, _ = env.last()
                if terminated or truncated:
                    print(f"--- {agent}: {observation}\n[final reward {reward:.3f}]")
                    env.step(None)
                    continue
                print(f"--- {agent} to move ---\n{observation}\n")
                reply = _read_reply()
                if reply is None or reply.strip() == "/quit":
                    return 0
                if reply.strip() == "/new":
                    break
                env.step(reply)
            print()
    finally:
        env.close()


def _read_reply() -> str | None:
    lines: list[str] = []
    for line in sys.stdin:
        line = line.rstrip("\n")
        if line == ".":
            return "\n".join(lines)
        if not lines and line.startswith("/"):
            return line
        lines.append(line)
    return "\n".join(lines) if lines else None
