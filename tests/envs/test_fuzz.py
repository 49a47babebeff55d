"""A fuzz test over every registered env (issue 17): random make kwargs, reset options and
actions, from plausible values to junk (wrong types, huge and empty strings, NUL bytes, lone
surrogates, nested containers).

And deep, long-chain text (issue 25: `rlvr.envs.deep_text`: unary, attribute, call and operator
chains, nested brackets of every kind, deep JSON, tags and SQL subqueries, at depths from a few
to tens of thousands, in every shape a reader looks at) at every reader of model text: each
single-agent env's step, each multi-agent env at every seat and phase (proposals, tests,
specs, solutions, moves, deals, debate arguments, judge verdicts), and each parser on its own.
Any text must come back as a verdict: not one exception, not an `infra_error`.

Every outcome must be a clean result (text observations, a reward in [0, 1], an `info` dict) or
one of rlvr's own errors (`EnvError`: `EnvConfigError`, `DatasetError`, `NotTextError`, ...)
from the public call; never another exception type, never a reward above 0 for a task whose
answer is malformed, never a hang (a deadline per example, a timeout per test).

The budget is fixed: profile "ci" (the default) draws the same examples on every run
(`derandomize`), so CI is reproducible and bounded. `HYPOTHESIS_PROFILE=explore` draws new,
more examples each run, to look for bugs (a failure prints the example to reproduce it).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import rlvr.envs
from rlvr.envs import DatasetError, EnvConfigError, EnvError
from rlvr.envs.deep_text import (
    DEEP_FORMS,
    FORGED_INFRA_REPLIES,
    SHAPES,
    every_shape,
    nasty_replies,
)
from rlvr.envs.multiagent import registry as multiagent_registry
from rlvr.envs.multiagent.checker import usual_reply
from rlvr.envs.multiagent.code_problems import read_proposal
from rlvr.envs.multiagent.connect4 import Connect4Env
from rlvr.envs.multiagent.negotiation import NegotiationEnv
from rlvr.envs.multiagent.problems import pose
from rlvr.envs.options import CheckedArguments, declaration
from rlvr.envs.replies import last_answer_line, last_tagged
from rlvr.envs.tools.calculator import CalculatorError
from rlvr.envs.tools.calculator import evaluate as calculator
from rlvr.envs.tools.parsing import parse_tool_calls
from rlvr.verifiers.code.extract import extract_code
from rlvr.verifiers.math import MathVerifier
from rlvr.verifiers.math.extract import extract_answers
from rlvr.verifiers.sql.errors import SQLParseError, UnsafeQuery
from rlvr.verifiers.sql.extract import extract_sql
from rlvr.verifiers.sql.guard import check_query
from rlvr.verifiers.types import Task

SINGLE_AGENT_IDS = sorted(env_id for env_id in gym.registry if env_id.startswith("rlvr/"))
MULTIAGENT_IDS = sorted(env_id for env_id in multiagent_registry if env_id.startswith("rlvr/"))
CASE_KEYS = ["args", "kwargs", "expected", "raises", "compare"]
GOAL_KEYS = ["category", "attributes", "options", "max_price_cents", "target"]
MAX_STEPS = 4  # replies per episode: enough to reach a verdict in every built-in env

_common = {
    "deadline": 20_000,  # ms per example: a slow make or step is a finding, not a pass
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "print_blob": True,
}
settings.register_profile("ci", derandomize=True, database=None, **_common)
settings.register_profile("explore", max_examples=200, **_common)
PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
EXAMPLES = {"make": 30, "episode": 60, "deep": 40, "parser": 100}  # per env, under "ci"


def budget(kind: str) -> settings:
    if os.environ.get("HYPOTHESIS_PROFILE", "ci") == "ci":
        # No shrinking in CI: a deep reply is already simple, and shrinking replays episodes.
        phases = [Phase.explicit, Phase.reuse, Phase.generate] if kind == "deep" else None
        return settings(PROFILE, max_examples=EXAMPLES[kind], phases=phases or tuple(Phase))
    return settings(PROFILE)


# --- values ----------------------------------------------------------------------------------

lone_surrogates = st.integers(0xD800, 0xDFFF).map(chr)
nasty_text = st.one_of(
    st.text(max_size=40),
    st.text(st.one_of(st.characters(), lone_surrogates, st.just("\x00")), max_size=40),
    st.sampled_from(["", " ", "\n", "\x00", "a\x00b", "\ud800", "x" * (1 << 17), "\\boxed{"]),
)
small_ints = st.one_of(
    st.integers(-3, 12), st.integers(-1000, 1000), st.sampled_from([2**31, 2**63, -(2**63)])
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    small_ints,
    st.floats(allow_nan=True, allow_infinity=True),
    nasty_text,
    st.binary(max_size=16),
)
junk = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner),
        st.dictionaries(st.one_of(nasty_text, small_ints), inner, max_size=3),
    ),
    max_leaves=8,
)
# Values an env might accept, so that make gets past the first check now and then.
plausible = st.sampled_from(
    [
        1, 2, 3, 0, -1, 0.5, True, False, None, "train", "test", "local", "docker", "sqlite",
        "postgres", "auto", "all", "fraction", "ansi", "human", [1, 2], [], {}, ["arithmetic"],
        "none", "details", "binary",
    ]
)  # fmt: skip
values = st.one_of(plausible, junk)
malformed_answers = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(["", "  ", "\x00", "\ud800", float("nan"), float("inf"), b"42"]),
    st.lists(junk, max_size=3),
    st.dictionaries(st.text(max_size=5), junk, max_size=3),
)


# Answers in a family's shape with junk inside: a code task's tests, a WebShop goal.
code_answers = st.fixed_dictionaries(
    {"entry_point": st.one_of(st.just("f"), junk)},
    optional={
        key: st.one_of(junk, st.lists(st.dictionaries(st.sampled_from(CASE_KEYS), junk)))
        for key in ("cases", "check", "asserts", "preamble", "setup", "reference")
    },
)
goal_answers = st.fixed_dictionaries(dict.fromkeys(GOAL_KEYS, junk))
answers = st.one_of(malformed_answers, junk, code_answers, goal_answers)


def accepted_names(entry: Callable[..., Any]) -> list[str]:
    """The argument names an env's class declares (none for a factory function)."""
    if isinstance(entry, type) and issubclass(entry, CheckedArguments):
        spec = declaration(entry)
        return sorted(spec.accepted if spec.accepted is not None else spec.checks)
    return []


def make_kwargs(names: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    keys = st.sampled_from([*names, "bogus", "\x00"]) if names else st.just("bogus")
    return st.dictionaries(keys, values, max_size=3)


def reset_options(understood: list[str]) -> st.SearchStrategy[Any]:
    task = st.fixed_dictionaries(
        {"prompt": st.one_of(nasty_text, junk), "answer": answers},
        optional={"id": junk, "metadata": junk, "info": junk},
    )
    keys = st.sampled_from([*understood, "bogus"])
    return st.one_of(
        st.none(),
        st.fixed_dictionaries({"task": task}),
        st.fixed_dictionaries({"task_index": st.one_of(small_ints, junk)}),
        st.dictionaries(keys, values, max_size=2),
        junk,
    )


def replies_to(answer: Any) -> list[str]:
    """What an adversary replies to a task whose answer it can read: the answer in every form a
    family might accept."""
    shown = str(answer)
    return [shown, repr(answer), f"\\boxed{{{shown}}}", f"Answer: {shown}", "None", ""]


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), small_ints, st.floats(), nasty_text),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(nasty_text, inner, max_size=3),
    max_leaves=8,
)
TOOL_NAMES = ["calculator", "python", "search", "open", "click", "back", "add_to_cart", "buy"]
TAGS = ["answer", "move", "propose", "winner", "problem"]


def shaped(tool_names: list[str]) -> st.SearchStrategy[str]:
    """Replies in the shapes the envs read (a tool call, a code or SQL block, a boxed or tagged
    answer), with junk inside: these reach the parsers and verifiers behind the shape."""
    call = st.fixed_dictionaries(
        {"name": st.one_of(st.sampled_from(tool_names or TOOL_NAMES), nasty_text)},
        optional={"arguments": json_values},
    )
    return st.one_of(
        call.map(lambda c: f"<tool_call>{json.dumps(c, ensure_ascii=False)}</tool_call>"),
        st.tuples(st.sampled_from(["python", "sql", "json", ""]), nasty_text).map(
            lambda block: f"```{block[0]}\n{block[1]}\n```"
        ),
        st.tuples(st.sampled_from(["SELECT ", "\\boxed{", "Answer: "]), nasty_text).map("".join),
        st.tuples(st.sampled_from(TAGS), nasty_text).map(lambda t: f"<{t[0]}>{t[1]}</{t[0]}>"),
    )


def actions(tool_names: list[str], max_size: int = MAX_STEPS) -> st.SearchStrategy[list[Any]]:
    reply = st.one_of(nasty_text, shaped(tool_names), shaped(tool_names), junk)
    return st.lists(reply, min_size=1, max_size=max_size)


def tool_names_of(env: Any) -> list[str]:
    tools = getattr(getattr(env.unwrapped, "interaction", None), "tools", None) or []
    return [tool.name for tool in tools]


# --- outcomes --------------------------------------------------------------------------------


def ours(error: BaseException) -> bool:
    return isinstance(error, EnvError)


def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[bool, Any]:
    """`(True, result)`, or `(False, error)` for one of rlvr's errors; anything else fails."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return True, fn(*args, **kwargs)
    except Exception as exc:
        if not ours(exc):
            raise AssertionError(
                f"{getattr(fn, '__qualname__', fn)} raised {type(exc).__name__}, not one of "
                f"rlvr's errors: {exc!s:.300}"
            ) from exc
        if isinstance(exc, (EnvConfigError, DatasetError)):
            assert "\n" not in str(exc), f"a configuration error of several lines: {exc!s:.500}"
        return False, exc


def assert_clean_reward(reward: Any, malformed: bool, lowest: float = 0.0) -> None:
    """A float in [lowest, 1] (multi-agent games pay -1 for a loss), not above 0 when the task
    is malformed."""
    assert isinstance(reward, float) and math.isfinite(reward), reward
    assert lowest <= reward <= 1.0, reward
    if malformed:
        assert reward <= 0.0, f"reward {reward} for a task whose answer is malformed"


def malformed_task(options: Any, understood: list[str]) -> tuple[bool, Any]:
    """Whether `options` pins a task (for an env that `understood` the option) with a malformed
    answer, and that answer."""
    pinned = "task" in understood and isinstance(options, dict)
    if not pinned or not isinstance(options.get("task"), dict):
        return False, None
    answer = options["task"].get("answer")
    malformed = answer is None or isinstance(answer, (bool, bytes, float, list, tuple))
    malformed |= isinstance(answer, str) and not answer.strip(" \x00")
    malformed |= isinstance(answer, dict) and "entry_point" not in answer
    return malformed, answer


# --- single-agent ----------------------------------------------------------------------------


def gym_entry(env_id: str) -> Callable[..., Any]:
    entry = gym.spec(env_id).entry_point
    if callable(entry):
        return entry
    module, _, name = entry.partition(":")
    return getattr(__import__(module, fromlist=[name]), name)


def make_single_agent(env_id: str, **kwargs: Any) -> Any:
    """`gym.make(env_id, **kwargs)`; with a render_mode that is not text, the env's own class
    (gym.make reads render_mode before the env does, and calls `.endswith` on it: an
    AttributeError of gymnasium's own, which rlvr cannot reach)."""
    if isinstance(kwargs.get("render_mode", ""), str):
        return gym.make(env_id, **kwargs)
    return gym_entry(env_id)(**{**gym.spec(env_id).kwargs, **kwargs})


@pytest.fixture(scope="module")
def made() -> Iterator[dict[str, Any]]:
    """One env per id for the module's episodes (made once: making is what the other test
    fuzzes), closed at the end."""
    envs: dict[str, Any] = {}
    yield envs
    for env in envs.values():
        env.close()


def _made(made: dict[str, Any], env_id: str, make: Callable[[str], Any]) -> Any:
    if env_id not in made:
        made[env_id] = make(env_id)
    return made[env_id]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("env_id", SINGLE_AGENT_IDS)
def test_make_with_random_kwargs(env_id):
    @budget("make")
    @given(kwargs=make_kwargs(accepted_names(gym_entry(env_id))))
    def run(kwargs):
        made, env = call(make_single_agent, env_id, **kwargs)
        if made:
            env.close()

    run()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("env_id", SINGLE_AGENT_IDS)
def test_episodes_with_random_options_and_actions(env_id, made):
    env = _made(made, env_id, gym.make)
    understood = sorted(getattr(env.unwrapped, "reset_options", ()) or ("task", "task_index"))

    @budget("episode")
    @given(
        options=reset_options(understood),
        seed=st.one_of(st.none(), st.integers(0, 2**63)),
        data=st.data(),
    )
    def run(options, seed, data):
        started, _ = call(
            env.reset, seed=seed if seed is None or seed >= 0 else None, options=options
        )
        if not started:
            env.reset(seed=0)  # a refused reset leaves the env usable
            options = None
        malformed, answer = malformed_task(options, understood)
        replies = data.draw(actions(tool_names_of(env)))
        if malformed:
            replies = [*replies_to(answer)[: MAX_STEPS - 1], *replies][:MAX_STEPS]
        for reply in replies:
            stepped, result = call(env.step, reply)
            if not stepped:
                continue
            observation, reward, terminated, truncated, info = result
            assert isinstance(observation, str) and isinstance(info, dict)
            assert isinstance(terminated, bool) and isinstance(truncated, bool)
            assert_clean_reward(reward, malformed)
            if terminated or truncated:
                break

    run()


# --- multi-agent -----------------------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("env_id", MULTIAGENT_IDS)
def test_multiagent_make_with_random_kwargs(env_id):
    @budget("make")
    @given(kwargs=make_kwargs(accepted_names(multiagent_registry[env_id].load())))
    def run(kwargs):
        made, env = call(rlvr.envs.multiagent.make, env_id, **kwargs)
        if made:
            env.close()

    run()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("env_id", MULTIAGENT_IDS)
def test_multiagent_episodes_with_random_options_and_actions(env_id, made):
    env = _made(made, env_id, rlvr.envs.multiagent.make)
    understood = sorted(env.reset_options)

    @budget("episode")
    @given(options=reset_options(understood), data=st.data())
    def run(options, data):
        started, _ = call(env.reset, seed=0, options=options)
        if not started:
            env.reset(seed=0)
            options = None
        malformed, answer = malformed_task(options, understood)
        replies = data.draw(actions([], max_size=3 * MAX_STEPS))
        if malformed:
            replies = [*replies_to(answer), *replies]
        for reply in replies:
            if not env.agents:
                break
            agent = env.agent_selection
            done = env.terminations[agent] or env.truncations[agent]
            stepped, _ = call(env.step, None if done else reply)
            if not stepped:
                continue
            for reward in env.rewards.values():
                assert_clean_reward(reward, malformed, lowest=-1.0)

    run()


# --- deep and long-chain text (issue 25) ------------------------------------------------------

# Depths from a few to tens of thousands, with several inside the windows where recursive
# readers fail (a few hundred to a few thousand levels: parseable, too deep to walk).
DEPTHS = (1, 7, 40, 150, 333, 700, 1200, 2500, 8000, 40_000)
OMNIBUS_DEPTHS = DEPTHS[:-2]  # one text in every shape at once: keep the reply under a megabyte


def deep_texts(depths: tuple[int, ...] = DEPTHS) -> st.SearchStrategy[str]:
    return st.builds(
        lambda kind, depth: DEEP_FORMS[kind](depth),
        st.sampled_from(sorted(DEEP_FORMS)),
        st.sampled_from(depths),
    )


deep_replies = st.one_of(
    st.sampled_from(nasty_replies()),  # the checkers' fixed handful, drawn often
    st.builds(every_shape, deep_texts(OMNIBUS_DEPTHS)),
    st.builds(
        lambda shape, text: SHAPES[shape](text), st.sampled_from(sorted(SHAPES)), deep_texts()
    ),
    st.sampled_from(FORGED_INFRA_REPLIES),
)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("env_id", SINGLE_AGENT_IDS)
def test_deep_and_long_chain_replies_are_verdicts(env_id, made):
    env = _made(made, env_id, gym.make)

    @budget("deep")
    @given(replies=st.lists(deep_replies, min_size=1, max_size=MAX_STEPS))
    def run(replies):
        env.reset(seed=0)
        for reply in replies:
            _, reward, terminated, truncated, info = env.step(reply)  # any text: never raises
            assert_clean_reward(reward, malformed=False)
            assert info["infra_error"] is False, f"{reply[:60]!r} set infra_error"
            if terminated or truncated:
                break

    run()


MULTIAGENT_VARIANTS = [
    pytest.param(env_id, {}, id=env_id) for env_id in MULTIAGENT_IDS
] + [  # the policy judges read verdicts from text
    pytest.param(env_id, {"judge": "policy"}, id=f"{env_id}-judge=policy")
    for env_id in ("rlvr/Debate-v0", "rlvr/SQLDebate-v0")
]


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("env_id", "kwargs"), MULTIAGENT_VARIANTS)
def test_multiagent_deep_and_long_chain_replies_at_every_seat(env_id, kwargs, made):
    key = f"{env_id} {sorted(kwargs.items())}"
    env = _made(made, key, lambda _: rlvr.envs.multiagent.make(env_id, **kwargs))
    assert set(kwargs) <= set(env.__dict__) | {"judge"}

    fed: set[str] = set()  # the seats that got deep text

    @budget("deep")
    @given(data=st.data())
    def run(data):
        env.reset(seed=0)
        for agent in env.agent_iter(4 * MAX_STEPS * len(env.possible_agents)):
            _, reward, terminated, truncated, info = env.last()
            assert_clean_reward(reward, malformed=False, lowest=-1.0)
            assert info["infra_error"] is False, f"{agent}: infra_error {info.get('verdict')}"
            if terminated or truncated:
                env.step(None)
                continue
            nasty = data.draw(st.booleans(), label=f"{agent} writes deep text")
            if nasty:
                fed.add(agent)
            env.step(data.draw(deep_replies) if nasty else usual_reply(env, agent))

    run()
    assert fed == set(env.possible_agents)  # every seat was tried


def _board_move(reply: str) -> Any:
    game = Connect4Env()
    game.reset(seed=0)
    return game.read_move(reply)


def _deal(reply: str) -> Any:
    negotiation = NegotiationEnv()
    negotiation.reset(seed=0)
    return negotiation.read_turn(reply)


def _math_verdict(reply: str) -> Any:
    verdict = MathVerifier(timeout=2.0).verify(reply, Task(id="t", prompt="p", answer="1/2"))
    assert not verdict.infra_error, verdict
    return verdict


# Each reader of model text and the exceptions that are its documented verdicts. (The math
# verifier's own parsers run behind its worker boundary, with a time limit: 2^2^...^2 is read
# there, and `parse_plain` is only reached through "math verdicts".)
PARSERS: dict[str, tuple[Callable[[str], Any], tuple[type[Exception], ...]]] = {
    "math answers": (extract_answers, ()),
    "math verdicts": (_math_verdict, ()),
    "answer lines": (last_answer_line, ()),
    "tags": (lambda reply: last_tagged(reply, "answer"), ()),
    "sql extraction": (extract_sql, ()),
    "sql guard": (check_query, (SQLParseError, UnsafeQuery)),
    "code extraction": (lambda reply: extract_code(reply, "f"), ()),
    "tool calls": (parse_tool_calls, ()),
    "calculator": (calculator, (CalculatorError,)),
    "moves": (_board_move, ()),
    "deals": (_deal, ()),
    "math problems": (pose, ()),
    "code proposals": (read_proposal, ()),
}


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "reader",
    list(PARSERS),
)
def test_every_parser_turns_deep_text_into_a_verdict(reader):
    parse, verdicts = PARSERS[reader]

    @budget("parser")
    @given(text=st.one_of(deep_texts(), deep_replies))
    def run(text):
        with contextlib.suppress(*verdicts):
            parse(text)

    run()
