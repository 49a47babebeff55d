"""`rlvr/Debate-v0`: two agents argue for their answers to a math question with a gold answer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from rlvr.envs.judge import TaskJudge
from rlvr.envs.math.env import TASK_ARGUMENTS, MathJudge, math_tasks
from rlvr.envs.multiagent.base import Round, TextAECEnv
from rlvr.envs.multiagent.parallel import TextParallelEnv
from rlvr.envs.options import declare, one_of, whole
from rlvr.envs.replies import last_tagged
from rlvr.envs.tasks import TaskSource
from rlvr.verifiers.types import Task, Verdict

DEBATERS = ("debater_0", "debater_1")
JUDGE = "judge_0"
LABELS = {"debater_0": "A", "debater_1": "B"}
JUDGES = ("verifier", "policy")
MAX_ROUNDS = 5
WHO_WINS = {
    "verifier": "When exactly one final answer is correct, its debater wins (+1) and the other "
    "loses (-1); otherwise neither scores.",
    "policy": "When exactly one final answer is correct, its debater wins (+1) and the other "
    "loses (-1); otherwise neither scores. A judge reads the debate and names the debater it "
    "believes is right (its decision is scored, not yours).",
}


class DebateEnv(TextAECEnv):
    """Two debaters answer a math question and argue, simultaneously, over a few rounds.

    ## Description
    A question with a gold answer (procedural math, as in `Math-v0`, or your tasks) goes to
    `debater_0` (A) and `debater_1` (B). In each of `rounds` rounds both write an argument at
    the same time (neither sees the other's argument of the same round), ending with their
    current final answer in `\\boxed{}`; then each reads the other's. The last round's answers
    are the ones judged. With `judge="verifier"` (default) `MathVerifier` checks both final
    answers against the gold. With `judge="policy"` a third agent, `judge_0`, reads the whole
    debate (never the gold) and names the winner with `<winner>A</winner>` or
    `<winner>B</winner>`. Simultaneous rounds (AEC cycles through the movers; the Parallel API
    takes all their arguments in one `step`).

    ## Agents
    `debater_0`, `debater_1`, and `judge_0` when `judge="policy"`.

    ## Action Space
    `TextSpace`: an argument (a debater) or a decision (the judge).

    ## Observation Space
    `TextSpace`: the question and the rules after `reset`; a debater then reads the other's
    argument each round; the judge reads the whole debate once it ends. The gold answer is in
    no observation, message or info.

    ## Rewards
    From the gold, whichever judge: each debater's final stated answer is checked by the math
    family's judge (`MathJudge`, `MathVerifier` underneath). When exactly one is correct its
    debater gets +1 and the other -1; when both or neither are, 0 for both (zero-sum always).
    What a debater writes about the outcome ("I win", a `<winner>` tag) is just text. A policy
    judge earns 1.0 when it names the only debater the gold confirms, else 0 (also when both or
    neither are right: `infos[judge_0]["decisive"]` is False); its decision never pays or costs
    a debater, so a debater gains nothing by persuading it of a wrong answer. A malformed reply
    is its author's loss: a debater without a readable final answer is incorrect; a judge reply
    naming no winner scores the judge 0. `infos[agent]["winner"]` is the debater the gold
    confirms (None if no single one), `infos[judge_0]["pick"]` the judge's choice, and
    `infos[agent]["verdict"]` each debater's verdict. A verifier failure (ours) leaves the
    outcome unknown: every agent scores 0 and has `infra_error` set (drop the samples).

    ## Starting State
    A task drawn with `np_random`, or pinned with `options={"task_index": i}` or
    `options={"task": {"prompt": ..., "answer": ...}}`.

    ## Episode End
    After the last round (verifier judge) or the judge's decision (policy judge).

    ## Arguments
    - `judge`: "verifier" (default) or "policy".
    - `rounds`: arguments per debater, 1 to 5 (default 2).
    - `split`, `difficulty`, `families`, `seed`: the math generator, as in `Math-v0`.
    - `tasks`: a task source or list of tasks with math gold answers, replacing the generator.
    - `timeout`: time limit in seconds of one math check (default 5).
    - `render_mode`, `max_text_length`: as for every `TextAECEnv`.

    ## Version History
    - v0: initial release: math questions; verifier or policy judge.
    """

    metadata: ClassVar[dict[str, Any]] = {
        **TextAECEnv.metadata,
        "name": "debate_v0",
        "is_parallelizable": True,
    }
    reset_options: ClassVar[frozenset[str]] = frozenset({"task", "task_index"})
    argument_checks = declare(**TASK_ARGUMENTS, judge=one_of(*JUDGES), rounds=whole(1, MAX_ROUNDS))

    def __init__(
        self,
        *,
        judge: str = "verifier",
        rounds: int = 2,
        split: str | None = None,
        difficulty: int | Sequence[int] | None = None,
        families: str | Sequence[str] | None = None,
        seed: int | None = None,
        tasks: TaskSource | Iterable[Task | Mapping[str, Any]] | None = None,
        timeout: float = 5.0,
        render_mode: str | None = None,
        max_text_length: int = 1 << 16,
    ) -> None:
        # The judge of rlvr/Math-v0 poses the questions (and checks given ones).
        questions = MathJudge(
            math_tasks(tasks, split=split, difficulty=difficulty, families=families, seed=seed),
            timeout=timeout,
        )
        self._set_up(questions, judge, rounds, render_mode, max_text_length)

    def _set_up(
        self,
        questions: TaskJudge,
        judge: str,
        rounds: int,
        render_mode: str | None,
        max_text_length: int,
    ) -> None:
        """The debate around `questions`, the judge of a single-agent family: it poses the
        question and judges the final answers against the gold."""
        self.questions = questions
        self.tasks = questions.tasks
        agents = (*DEBATERS, JUDGE) if judge == "policy" else DEBATERS
        super().__init__(agents, render_mode=render_mode, max_text_length=max_text_length)
        if judge == "policy":  # the judge round is a turn of one: not parallelizable by PettingZoo
            # This instance's metadata, not the class's (PettingZoo reads env.metadata).
            self.metadata = {**self.metadata, "is_parallelizable": False}  # type: ignore[misc]
        self.judge = judge
        self.rounds = rounds
        self.task: Task | None = None
        self._arguments: dict[str, list[str]] = {}

    # --- what a family changes ------------------------------------------------------------------

    final_answer: ClassVar[str] = "your current final answer in \\boxed{}"
    """How a debater ends an argument, in the rules ("End every argument with ...")."""

    def _question(self) -> str:
        """The question as the debaters and the judge read it."""
        assert self.task is not None
        return f"Question: {self.task.prompt}"

    def close(self) -> None:
        self.questions.close()

    # --- the debate -----------------------------------------------------------------------------

    def _start(self, options: dict[str, Any]) -> dict[str, str]:
        known = {name: value for name, value in options.items() if name in self.reset_options}
        self.task = self.questions.pose(self.np_random, known)  # the base warned of the rest
        self.task_id = self.task.id
        self._arguments = {debater: [] for debater in DEBATERS}
        openings = {debater: self._debater_opening(debater) for debater in DEBATERS}
        if self.judge == "policy":
            openings[JUDGE] = self._judge_opening()
        return openings

    def _movers(self) -> list[str]:
        if len(self._arguments[DEBATERS[0]]) < self.rounds:
            return list(DEBATERS)
        return [JUDGE]

    def _play(self, moves: dict[str, str]) -> Round:
        if JUDGE in moves:
            return self._judged(moves[JUDGE])
        for debater in DEBATERS:
            self._arguments[debater].append(moves[debater])
        done = len(self._arguments[DEBATERS[0]])
        if done < self.rounds:
            return Round(messages={d: self._exchange(d, done) for d in DEBATERS})
        if self.judge == "verifier":
            return self._verified()
        return Round(messages={JUDGE: self._transcript()})

    # --- judging --------------------------------------------------------------------------------

    def _final_verdicts(self) -> dict[str, Verdict]:
        assert self.task is not None
        # The family's judge: a verifier that raises is an error verdict (ours), never a score.
        return {d: self.questions.verdict(self._arguments[d][-1], self.task) for d in DEBATERS}

    def _gold_outcome(self) -> tuple[dict[str, Verdict], str | None, bool]:
        """Each debater's verdict, the debater the gold confirms (None unless exactly one is
        right) and whether our verifier failed (the outcome is then unknown)."""
        verdicts = self._final_verdicts()
        failed = any(verdict.infra_error for verdict in verdicts.values())
        return verdicts, None if failed else _only_correct(verdicts), failed

    def _verified(self) -> Round:
        verdicts, winner, failed = self._gold_outcome()
        text = "The debate is over: " + (
            "no debater wins." if winner is None else f"Debater {LABELS[winner]} wins."
        )
        return self._final_round(dict.fromkeys(DEBATERS, text), verdicts, winner, failed)

    def _judged(self, reply: str) -> Round:
        named = (last_tagged(reply, "winner") or "").strip().upper()
        pick = {label: debater for debater, label in LABELS.items()}.get(named)
        verdicts, winner, failed = self._gold_outcome()
        named_text = "no winner" if pick is None else f"Debater {LABELS[pick]}"
        outcome = "no debater wins" if winner is None else f"Debater {LABELS[winner]} wins"
        text = f"The judge named {named_text}. By the answers' check, {outcome}."
        messages = dict.fromkeys(self.possible_agents, text)
        return self._final_round(messages, verdicts, winner, failed, judge_pick=pick)

    def _final_round(
        self,
        messages: dict[str, str],
        verdicts: dict[str, Verdict],
        winner: str | None,
        failed: bool,
        judge_pick: str | None = None,
    ) -> Round:
        """The debate's end: the debaters paid from the gold alone (zero-sum), the policy judge
        (if any) for naming `winner`, every agent flagged when our verifier failed."""
        rewards = _zero_sum(winner)
        terms: dict[str, dict[str, float]] = {d: {"debate": rewards[d]} for d in DEBATERS}
        info: dict[str, dict[str, Any]] = {d: {"winner": winner} for d in DEBATERS}
        if self.judge == "policy":
            right = judge_pick is not None and judge_pick == winner
            rewards[JUDGE] = 1.0 if right else 0.0
            terms[JUDGE] = {"judgement": rewards[JUDGE]}
            info[JUDGE] = {"winner": winner, "pick": judge_pick, "decisive": winner is not None}
        return Round(
            messages=messages,
            rewards=rewards,
            game_over=True,
            verdicts=verdicts,
            reward_terms=terms,
            infra_error=frozenset(self.possible_agents) if failed else frozenset(),
            info=info,
        )

    # --- texts ----------------------------------------------------------------------------------

    def _debater_opening(self, debater: str) -> str:
        assert self.task is not None
        return (
            f"You are Debater {LABELS[debater]} in a debate of {self.rounds} round(s) with "
            "another debater on the question below. In each round both of you write an "
            f"argument at the same time, then read the other's. End every argument with "
            f"{self.final_answer}; your last round's answer is the one judged. "
            f"{WHO_WINS[self.judge]}\n\n{self._question()}\n\nRound 1: your argument."
        )

    def _judge_opening(self) -> str:
        assert self.task is not None
        return (
            f"You judge a debate of {self.rounds} round(s) between Debater A and Debater B on "
            "the question below. Once it ends you read both sides and name the debater whose "
            "final answer is correct, as <winner>A</winner> or <winner>B</winner>; you are "
            "rewarded when you name the only one that is right (the debaters are scored by a "
            f"check of their answers, not by you).\n\n{self._question()}"
        )

    def _exchange(self, debater: str, done: int) -> str:
        other = DEBATERS[1 - DEBATERS.index(debater)]
        last = " (the last: its final answer is judged)" if done + 1 == self.rounds else ""
        return (
            f"Round {done}: Debater {LABELS[other]} argued:\n"
            f"{self.quote(self._arguments[other][-1])}\n\nRound {done + 1}{last}: your argument."
        )

    def _transcript(self) -> str:
        parts = 2 * self.rounds + 2
        rounds = [
            f"Round {r + 1}\n"
            + "\n\n".join(
                f"Debater {LABELS[d]}:\n{self.quote(self._arguments[d][r], parts)}"
                for d in DEBATERS
            )
            for r in range(self.rounds)
        ]
        return (
            "The debate:\n\n"
            + "\n\n".join(rounds)
            + "\n\nName the winner: <winner>A</winner> or <winner>B</winner>."
        )


def _only_correct(verdicts: Mapping[str, Verdict]) -> str | None:
    correct = [debater for debater, verdict in verdicts.items() if verdict.is_correct]
    return correct[0] if len(correct) == 1 else None


def _zero_sum(winner: str | None) -> dict[str, float]:
    if winner is None:
        return dict.fromkeys(DEBATERS, 0.0)
    return {d: 1.0 if d == winner else -1.0 for d in DEBATERS}


def env(**kwargs: Any) -> DebateEnv:
    """The AEC env (PettingZoo module style); it enforces call order itself."""
    return DebateEnv(**kwargs)


def parallel_env(**kwargs: Any) -> TextParallelEnv:
    """The Parallel env: both arguments of a round in one step (then the judge's decision)."""
    return TextParallelEnv(DebateEnv(**kwargs))


raw_env = DebateEnv
