"""`rlvr/Nim-v0`: one-heap Nim as text; an illegal or malformed move loses the game."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from rlvr.envs.errors import EnvConfigError
from rlvr.envs.multiagent.boardgame import BoardGameEnv
from rlvr.envs.multiagent.parallel import TextParallelEnv
from rlvr.envs.options import declare, whole

MAX_TAKE = 3


class NimEnv(BoardGameEnv):
    """One-heap Nim (the subtraction game) between two text agents.

    ## Description
    A heap of stones, its size drawn at reset from `min_stones..max_stones` with the env's
    `np_random`; players take turns removing 1, 2 or 3 stones, and whoever takes the last stone
    wins. The player to move loses against perfect play exactly when the heap is a multiple of
    4 (take `heap % 4` stones otherwise), a rule a tiny model can learn on a CPU: the benchmark
    in docs/multiagent.md measures self-play raising its win rate. Turn-based (AEC);
    `parallel_env()` takes one move per `step` (the mover's action; the other's is ignored).

    ## Agents
    `player_0` (moves first), `player_1`.

    ## Action Space
    `MoveSpace`: any text; the move is the body of the last `<move>N</move>` tag, N the number
    of stones to take, 1 to 3. `infos[agent]["action_mask"]` (int8, 3 entries, 1 = at most the
    heap) marks the legal moves of the agent to move, all zeros for the other (PettingZoo's
    convention); `action_space(agent).sample(mask)` draws a legal move.

    ## Observation Space
    `TextSpace`: the rules and the heap after `reset`; then the opponent's move and the heap.

    ## Rewards
    Win +1, loss -1 (zero-sum; no draws), given when the game ends. An illegal move (more stones
    than are left) or a malformed one (no `<move>` tag, not 1-3) loses the game at once: the
    mover gets -1 and the opponent +1, and `infos[agent]["outcome"]` says why (`last_stone` or
    `illegal_move`), as in `rlvr/Connect4-v0`.

    ## Starting State
    A heap of `min_stones..max_stones` stones (uniform, from the seed), `player_0` to move. No
    reset options.

    ## Episode End
    The last stone taken, or an illegal or malformed move. Every agent is then terminated; step
    each with `None` to remove it (PettingZoo's convention).

    ## Arguments
    - `min_stones`, `max_stones`: the range of heap sizes (default 10 to 25; whole numbers,
      1 <= min_stones <= max_stones).
    - `render_mode`: "ansi" or "human" (each agent's view as text).
    - `max_text_length`: longest observation/action in characters (default 65536).

    ## Version History
    - v0: initial release.
    """

    metadata: ClassVar[dict[str, Any]] = {**BoardGameEnv.metadata, "name": "nim_v0"}
    MOVE_COUNT = MAX_TAKE
    NOUN = "number of stones"
    RULES = (
        "We are playing Nim with one heap of stones. Players take turns removing 1, 2 or 3 stones "
        "from the heap; whoever takes the last stone wins. Reply with your move as <move>N</move>, "
        "N the number of stones you take, from 1 to {moves} and at most what is left: the last "
        "<move> tag in your reply counts. Taking more stones than are left, or a reply without a "
        "readable move, loses the game."
    )
    WIN_TEXT = "takes the last stone"
    WIN_OUTCOME = "last_stone"
    argument_checks = declare(min_stones=whole(1), max_stones=whole(1))

    def __init__(
        self,
        *,
        min_stones: int = 10,
        max_stones: int = 25,
        render_mode: str | None = None,
        max_text_length: int = 1 << 16,
    ) -> None:
        if min_stones > max_stones:  # each is checked as a whole number >= 1 already
            raise EnvConfigError(
                f"need min_stones <= max_stones, got {min_stones} > {max_stones} (e.g. "
                "min_stones=10, max_stones=25)"
            )
        self.min_stones, self.max_stones = min_stones, max_stones
        super().__init__(render_mode=render_mode, max_text_length=max_text_length)

    def _new_board(self) -> np.ndarray:
        return np.array(int(self.np_random.integers(self.min_stones, self.max_stones + 1)))

    @property
    def heap(self) -> int:
        """Stones left."""
        return int(self.board)

    def _legal(self) -> np.ndarray:
        return np.arange(1, MAX_TAKE + 1) <= self.heap

    def _illegal(self, move: int) -> str:
        left = "1 stone is" if self.heap == 1 else f"{self.heap} stones are"
        return f"cannot take {move + 1}: only {left} left"

    def board_text(self) -> str:
        return f"Stones left: {self.heap}."

    def _played(self, move: int) -> str:
        return "took 1 stone" if move == 0 else f"took {move + 1} stones"

    def _place(self, move: int, mark: str) -> bool:
        self.board = np.array(self.heap - (move + 1))
        return self.heap == 0


def env(**kwargs: Any) -> NimEnv:
    """The AEC env (PettingZoo module style); it enforces call order itself."""
    return NimEnv(**kwargs)


def parallel_env(**kwargs: Any) -> TextParallelEnv:
    """The Parallel env: one move per step."""
    return TextParallelEnv(NimEnv(**kwargs))


raw_env = NimEnv
