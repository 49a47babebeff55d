"""Small environments used by the tests of the generic machinery (not registered globally)."""

from __future__ import annotations

from typing import Any

from rlvr.envs import Outcome, Start, TextEnv, Verdict

CAPITALS = [
    {"prompt": "What is the capital of France?", "answer": "Paris"},
    {"prompt": "What is the capital of Peru?", "answer": "Lima"},
    {"prompt": "What is the capital of Japan?", "answer": "Tokyo"},
    {"prompt": "What is the capital of Kenya?", "answer": "Nairobi"},
    {"prompt": "What is the capital of Chile?", "answer": "Santiago"},
]


def exact_match(reply: str, task: Any) -> bool:
    return reply.strip().lower() == str(task.answer).lower()


class GuessNumberEnv(TextEnv):
    """Guess a number from 1 to 16 in at most 6 turns; the env says "higher" or "lower".

    A multi-turn example of the TextEnv contract: reward 1.0 on the turn the number is found.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(system_prompt="Reply with a single number.", **kwargs)
        self.secret = 0
        self.low, self.high = 1, 16

    def _start(self, options: dict[str, Any]) -> Start:
        if "task_index" in options:
            self.secret = int(options["task_index"]) % 16 + 1
        else:
            self.secret = int(self.np_random.integers(1, 17))
        self.low, self.high = 1, 16
        return Start("I picked a number from 1 to 16. Guess it.", task_id=f"guess-{self.secret}")

    def _answer(self, reply: str) -> Outcome:
        try:
            guess = int(reply.strip())
        except ValueError:
            verdict = Verdict.unparsable("reply with a number")
            return Outcome("Reply with a single number.", 0.0, False, verdict)
        if guess == self.secret:
            return Outcome("Correct!", 1.0, True, Verdict.correct(str(guess)))
        if guess < self.secret:
            self.low = max(self.low, guess + 1)
            return Outcome("Higher.", 0.0, False, Verdict.incorrect(str(guess)))
        self.high = min(self.high, guess - 1)
        return Outcome("Lower.", 0.0, False, Verdict.incorrect(str(guess)))

    def oracle_reply(self) -> str:
        return str((self.low + self.high) // 2)
