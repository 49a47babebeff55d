"""What the learning suite's warm starts train from (`learning_suite_warm.py`): scripted
demonstration episodes (ToolMath's calculator and direct answers, Repo-v0's careful and hasty
fixers) as training ids and masks, the supervised loss on them, and the quick held-out checks a
warm start stops on."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from learning_suite_heldout import called_a_tool, rate, repo_figures, solved
from learning_suite_tasks import Task


class ToolDemos:
    """What both ToolMath warm starts train from: a fresh tiny model and tokenizer, calculator
    episodes (`calls`: the call, then the answer it gives) and direct answers (`direct`: the
    right number in `\\boxed{}`, which a model this size cannot compute), as (ids, mask), and
    probe prompts for the chance that a reply starts with a call. Every example starts with the
    same system prompt (the tool's description, ~450 ids): it is run once per batch and shared,
    as in the learners' forward."""

    def __init__(self, task: Task, direct_count: int) -> None:
        import gymnasium as gym

        from rlvr.agents.hf import HFPolicy
        from rlvr.agents.tiny import TinyModelConfig, build_model, train_tokenizer

        warm = task.warm
        env = gym.make(task.env_id, **dict(task.kwargs))
        oracle = gym.make(task.env_id, **dict(task.kwargs))
        texts = []
        for seed in range(1_000_000, 1_000_500):
            texts += [m["content"] for m in _script(env, oracle, seed, use_tool=True)[0]]
        shape = TinyModelConfig(**warm.get("model", {}))
        tokenizer = train_tokenizer(texts, shape.vocab_size)
        self.policy = HFPolicy(build_model(tokenizer, shape, seed=0), tokenizer, seed=0)
        self.calls, self.direct = (
            [episode_ids(self.policy, *_script(env, oracle, seed, kind)) for seed in range(count)]
            for kind, count in ((True, warm["demos"]), (False, direct_count))
        )
        self.probes = [
            self.policy.encode_prompt(_script(env, oracle, seed, True)[0][:2])
            for seed in range(900_000, 900_064)
        ]

    def train(
        self,
        optimizer: Any,
        rng: Any,
        batch: int,
        call_share: float,
        steps: int,
        done: Callable[[], bool] | None = None,
        every: int = 100,
    ) -> int:
        """Up to `steps` supervised steps on batches of `batch` episodes, each a calculator
        episode with chance `call_share`; `done` (if given) is asked every `every` steps and
        stops it. Returns the steps taken."""
        policy = self.policy
        policy.model.train()
        for step in range(steps):
            if done is not None and step % every == 0 and done():
                return step
            calls = int(rng.binomial(batch, call_share))
            picked = [self.calls[i] for i in rng.choice(len(self.calls), calls, replace=False)]
            picked += [
                self.direct[i] for i in rng.choice(len(self.direct), batch - calls, replace=False)
            ]
            loss = shared_prefix_loss(policy, picked)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            if step % 100 == 0:
                print(f"tool warm-start step {step}: loss {loss.item():.3f}", flush=True)
        return steps

    def save(self, task: Task, folder: Path, **extra: Any) -> None:
        """The model, and what RL starts from (`tool_warm_figures`) in `warm_start.json`."""
        self.policy.model.eval()
        self.policy.save(folder)
        figures = tool_warm_figures(task, self.policy, self.probes, self.calls) | extra
        print(f"tool warm start: {json.dumps(figures)}", flush=True)
        (folder / "warm_start.json").write_text(json.dumps(figures, indent=1) + "\n")


class RepoDemos(ToolDemos):
    """Repo-v0's scripted demonstrations, in the two pools `ToolDemos.train` mixes: `calls`, the
    careful fixer (read the file the fix changes, replace the buggy line, submit) and `direct`,
    the hasty one (replace the line, submit), both played in the env so that tool results are
    the real ones. Both fix every task; what the hasty one lacks is the file's lines in view
    when it writes the edit, which a model this size must then recall instead of copy.

    The edit is the reference fix as one `replace_in_file` of the changed line, not the unified
    diff itself: a warm start built on diffs (800 steps, ~70 CPU minutes) solved no episode,
    because it garbled the diff's context lines and headers (docs/repo.md). With
    `warm["edit"] == "sed"` it is one `run` of `sed` over `*/MODULE.py` instead
    (`sed_fix`): no package name to copy, and a few characters around the bug, not a line."""

    def __init__(self, task: Task) -> None:  # fills the pools its own way: no super().__init__
        import gymnasium as gym

        from rlvr.agents.hf import HFPolicy
        from rlvr.agents.tiny import TinyModelConfig, build_model, train_tokenizer

        warm = task.warm
        env = gym.make(task.env_id, **dict(task.kwargs))
        try:
            edit = warm.get("edit", "replace")
            careful = [_repo_script(env, seed, True, edit) for seed in range(warm["demos"])]
            hasty = [_repo_script(env, seed, False, edit) for seed in range(warm["demos"])]
        finally:
            env.close()
        texts = [m["content"] for messages, _ in careful[:300] for m in messages]
        shape = TinyModelConfig(**warm.get("model", {}))
        tokenizer = train_tokenizer(texts, shape.vocab_size)
        self.policy = HFPolicy(build_model(tokenizer, shape, seed=0), tokenizer, seed=0)
        self.calls = [episode_ids(self.policy, *demo) for demo in careful]
        self.direct = [episode_ids(self.policy, *demo) for demo in hasty]
        longest = max(len(ids) for ids, _ in self.calls + self.direct)
        if longest > shape.max_positions:
            raise SystemExit(f"a demonstration has {longest} ids > max_positions")

    def save(self, task: Task, folder: Path, **extra: Any) -> None:
        self.policy.model.eval()
        self.policy.save(folder)
        figures = dict(extra)
        # held out (the test split: repositories and bugs never trained on), and unseen
        # repositories of the training split, whose bugs the demonstrations may have fixed
        for split, kwargs in (("", task.heldout), ("train_", task.kwargs)):
            for name, temperature in (("greedy", 0.0), ("sampled", 1.0)):
                judged = quick_records(task, self.policy, 32, temperature, kwargs)
                prefix = f"{split}{name}"
                figures |= rate(f"{prefix}_accuracy", [solved(record) for record in judged])
                figures |= {f"{prefix}_{key}": value for key, value in repo_figures(judged).items()}
        print(f"repo warm start: {json.dumps(figures)}", flush=True)
        (folder / "warm_start.json").write_text(json.dumps(figures, indent=1) + "\n")


def _repo_script(
    env: Any, seed: int, careful: bool, edit: str = "replace"
) -> tuple[list[dict], list[int]]:
    """One demonstration episode of Repo-v0 (train split): the careful three steps (read the
    file, fix it, submit) or the hasty two (fix, submit), the fix as `edit` says ("replace":
    `replace_in_file` of the changed line, "sed": `sed_fix`); its messages and the replies'
    positions."""
    from rlvr.envs.repo.env import first_patched_path
    from rlvr.envs.tools.parsing import format_tool_call

    env.reset(seed=seed)
    base = env.unwrapped
    fix = base.judge.parse(base.task).fix
    path = first_patched_path(fix)
    old, new = replacement(fix)
    if edit == "sed":
        command = sed_fix(path, base.task.answer["files"][path], old, new)
        change = format_tool_call("run", command=command)
    elif edit == "replace":
        change = format_tool_call("replace_in_file", path=path, old=old, new=new)
    else:
        raise ValueError(f"unknown repo demonstration edit {edit!r}: use 'replace' or 'sed'")
    replies = [change, format_tool_call("submit")]
    if careful:
        replies.insert(0, format_tool_call("read_file", path=path))
    for reply in replies:
        _, reward, terminated, truncated, info = env.step(reply)
        if terminated or truncated:
            break
    if reward != 1.0:
        raise RuntimeError(f"a scripted repository episode was not solved: {info.get('verdict')}")
    at = [i for i, m in enumerate(info["messages"]) if m["role"] == "assistant"]
    return info["messages"][: at[-1] + 1], at


def replacement(fix: str) -> tuple[str, str]:
    """A one-hunk unified diff as `replace_in_file`'s (old, new): its removed and added lines,
    the first line's indentation dropped from both (a model copies less, and the text still
    occurs once in the generated tasks: the demonstrations check it by solving)."""
    from rlvr.envs.repo.patches import parse_patch

    hunks = [hunk for patch in parse_patch(fix) for hunk in patch.hunks]
    if len(hunks) != 1:
        raise ValueError("the fix is not one hunk: it has no single replace_in_file form")
    removed = [text for kind, text in hunks[0].lines if kind == "-"]
    added = [text for kind, text in hunks[0].lines if kind == "+"]
    if not removed:
        raise ValueError("the fix removes no line: it has no replace_in_file form")
    indent = len(removed[0]) - len(removed[0].lstrip(" \t"))

    def joined(block: list[str]) -> str:  # the lines end in "\n": drop the last one's
        return "".join(block)[indent:].removesuffix("\n") if block else ""

    return joined(removed), joined(added)


def sed_fix(path: str, source: str, old: str, new: str) -> str:
    """The fix that turns line `old` of file `path` (whose text is `source`) into `new`, as
    `sed -i 's/OLD/NEW/' */MODULE.py`: OLD is the shortest run of whole words around the change
    that occurs once in `source` (the line itself at worst), the glob stands for the package.
    Escaped for sed's basic regular expressions and single-quoted for the shell."""
    if "\n" in old + new:
        raise ValueError(f"the fix of {path} spans lines: sed's s command edits one line")
    start = 0  # the change is old[start:old_end] -> new[start:new_end]
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    tail = 0
    while tail < min(len(old), len(new)) - start and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    old_end, new_end = len(old) - tail, len(new) - tail
    low, high = start, old_end
    while True:
        while low > 0 and (old[low - 1].isalnum() or old[low - 1] == "_"):
            low -= 1
        while high < len(old) and (old[high].isalnum() or old[high] == "_"):
            high += 1
        if old[low:high].strip() and source.count(old[low:high]) == 1:
            break
        if (low, high) == (0, len(old)):
            raise ValueError(f"the line {old!r} occurs more than once in {path}: no sed fix")
        low, high = max(0, low - 1), min(len(old), high + 1)
    pattern = re.sub(r"([\\.*\[\]^$/])", r"\\\1", old[low:high])  # BRE specials
    changed = re.sub(r"([\\&/])", r"\\\1", old[low:start] + new[start:new_end] + old[old_end:high])
    script = f"s/{pattern}/{changed}/".replace("'", "'\\''")  # inside single quotes
    module = path.split("/", 1)[1]
    return f"sed -i '{script}' */{module}"


def tool_warm_figures(
    task: Task,
    policy: Any,
    probes: Sequence[list[int]],
    calls: Sequence[tuple],
    episodes: int = 200,
) -> dict[str, float]:
    """What RL starts from: greedy and sampled (temperature 1) tool-call rate and accuracy on
    held-out tasks, the accuracy of sampled episodes that called, and the mean probability that
    a reply starts with a call."""
    figures: dict[str, float] = {}
    for name, temperature in (("greedy", 0.0), ("sampled", 1.0)):
        judged = quick_records(task, policy, episodes, temperature)
        called = [called_a_tool(record) for record in judged]
        right = [solved(record) for record in judged]
        figures |= rate(f"{name}_accuracy", right) | rate(f"{name}_tool_call_rate", called)
        figures |= rate(
            f"{name}_accuracy_when_called", [s for s, c in zip(right, called, strict=True) if c]
        )
    chances = call_chances(policy, probes, calls)
    figures["call_probability"] = sum(chance for chance, _ in chances) / len(chances)
    return figures


def shared_prefix_loss(policy: Any, examples: Sequence[tuple[list, list]]) -> Any:
    """Mean cross-entropy of the masked ids of `examples`, their common first ids run once."""
    import torch

    from rlvr.agents.learners.common import Batch, forward

    width = max(len(ids) for ids, _ in examples)
    common = min(len(ids) for ids, _ in examples)
    first = examples[0][0]
    common = next(
        (i for i in range(common) if any(ids[i] != first[i] for ids, _ in examples)), common
    )
    rows = len(examples)
    ids = torch.full((rows, width), policy.tokenizer.pad_token_id, dtype=torch.long)
    attention = torch.zeros((rows, width), dtype=torch.long)
    mask = torch.zeros((rows, width - 1))
    for row, (sequence, flags) in enumerate(examples):
        ids[row, : len(sequence)] = torch.tensor(sequence)
        attention[row, : len(sequence)] = 1
        mask[row, : len(sequence) - 1] = torch.tensor(flags[1:], dtype=torch.float)
    zeros = torch.zeros(rows)
    batch = Batch(
        ids,
        attention,
        mask,
        torch.zeros_like(mask),
        zeros,
        torch.arange(rows),
        zeros.bool(),
        torch.full((rows,), common, dtype=torch.long),
    )
    logprobs, _ = forward(policy.model, batch)
    return -(logprobs * mask).sum() / mask.sum()


def call_chances(
    policy: Any, prompts: Sequence[list[int]], calls: Sequence[tuple]
) -> list[tuple[float, bool]]:
    """Per prompt of `prompts`: the probability that the reply's first id is a tool call's, and
    whether greedy decoding picks it."""
    import torch

    first_call_id = next(ids[i] for ids, mask in calls[:1] for i in range(len(ids)) if mask[i])
    chances = []
    with torch.no_grad():
        for prompt in prompts:
            logits = policy.model(input_ids=torch.tensor([prompt])).logits[0, -1]
            chance = float(logits.softmax(-1)[first_call_id])
            chances.append((chance, int(logits.argmax()) == first_call_id))
    return chances


def quick_accuracy(task: Task, policy: Any, episodes: int = 64, temperature: float = 0.0) -> float:
    """Accuracy on a few held-out tasks, greedy or sampled (a warm start's stopping signal)."""
    judged = quick_records(task, policy, episodes, temperature)
    return sum(solved(record) for record in judged) / max(len(judged), 1)


def quick_records(
    task: Task,
    policy: Any,
    episodes: int,
    temperature: float,
    env_kwargs: Mapping[str, Any] | None = None,
) -> list[Any]:
    """Judged episodes on tasks no demonstration used (seeds from 10,000,000): held out, or
    those of `env_kwargs`."""
    from rlvr.agents.policy import SamplingParams
    from rlvr.rollout.episodes import evaluate

    report = evaluate(
        task.env_id,
        policy,
        episodes=episodes,
        seed=10_000_000,
        batch_size=episodes,
        sampling=SamplingParams(temperature=temperature, max_new_tokens=task.max_new_tokens),
        env_kwargs=task.heldout if env_kwargs is None else env_kwargs,
    )
    return report.judged


def _script(env: Any, oracle: Any, seed: int, use_tool: bool) -> tuple[list[dict], list[int]]:
    """The messages of one demonstration episode and the positions of its replies: the oracle's
    (calculator call, then the answer), or the answer alone in one reply."""
    _, info = oracle.reset(seed=seed)
    while True:  # play the oracle to the end to read the right answer
        _, _, terminated, truncated, info = oracle.step(oracle.unwrapped.oracle_reply())
        if terminated or truncated:
            break
    final = [m["content"] for m in info["messages"] if m["role"] == "assistant"][-1]
    answer = final[final.rindex("\\boxed{") :].splitlines()[0]
    _, info = env.reset(seed=seed)
    while True:
        reply = env.unwrapped.oracle_reply() if use_tool else f"The answer is {answer}."
        _, _, terminated, truncated, info = env.step(reply)
        if terminated or truncated:
            break
    replies = [i for i, m in enumerate(info["messages"]) if m["role"] == "assistant"]
    return info["messages"][: replies[-1] + 1], replies  # nothing after the last reply


def episode_ids(
    policy: Any, messages: list[dict], replies: list[int], learnt: Sequence[int] | None = None
) -> tuple[list, list]:
    """(ids, mask) of a scripted episode, laid out as training rollouts are: the prompt, then
    each reply's ids (mask 1, or 0 for a reply not in `learnt` when given) and the env's
    follow-up ids (mask 0)."""
    eos = policy.tokenizer.eos_token_id
    ids = policy.encode_prompt(messages[: replies[0]])
    mask = [0] * len(ids)
    for k, at in enumerate(replies):
        reply = [*policy._encode(messages[at]["content"]), eos]
        flag = int(learnt is None or at in learnt)
        ids, mask = ids + reply, mask + [flag] * len(reply)
        if k + 1 < len(replies):
            follow = policy.encode_followup(
                messages[: at + 1], messages[at + 1 : replies[k + 1]], eos
            )
            ids, mask = ids + follow, mask + [0] * len(follow)
    return ids, mask
