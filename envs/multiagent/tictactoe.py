"""`rlvr/TicTacToe-v0`: tic-tac-toe as text; an illegal or malformed move loses the game."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from rlvr.envs.multiagent.boardgame import EMPTY, BoardGameEnv
from rlvr.envs.multiagent.parallel import TextParallelEnv

SIZE = 3
LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))
"""The eight lines of three cells (indices 0-8, row by row): rows, columns, diagonals."""


class TicTacToeEnv(BoardGameEnv):
    """Tic-tac-toe between two text agents, rendered as a text board.

    ## Description
    The classic game on a 3 x 3 board whose cells are numbered 1 to 9 row by row: `player_0`
    plays X and moves first, `player_1` plays O. The board shows X, O, or the number of an empty
    cell, so the legal moves are the numbers on it. Small enough for a tiny model to learn to
    beat a random player on a CPU (docs/multiagent.md measures it). Turn-based (AEC);
    `parallel_env()` takes one move per `step` (the mover's action; the other's is ignored).
    Deterministic: nothing is random, so `reset(seed=...)` only reseeds `np_random`.

    ## Agents
    `player_0` (X, first), `player_1` (O).

    ## Action Space
    `MoveSpace`: any text; the move is the body of the last `<move>N</move>` tag, N a cell from
    1 to 9. `infos[agent]["action_mask"]` (int8, 9 entries, 1 = the cell is empty) marks the
    legal moves of the agent to move, all zeros for the other (PettingZoo's convention);
    `action_space(agent).sample(mask)` draws a legal move.

    ## Observation Space
    `TextSpace`: the rules and the board after `reset`; then the opponent's move and the board.

    ## Rewards
    Win +1, loss -1, draw 0 for both, given when the game ends (zero-sum). An illegal move (a
    taken cell) or a malformed one (no `<move>` tag, not a cell number 1-9) loses the game at
    once: the mover gets -1 and the opponent +1, and `infos[agent]["outcome"]` says why
    (`three_in_a_row`, `draw` or `illegal_move`), as in `rlvr/Connect4-v0`.

    ## Starting State
    An empty board, X to move. No reset options.

    ## Episode End
    Three in a line, a full board (9 moves), or an illegal or malformed move. Every agent is then
    terminated; step each with `None` to remove it (PettingZoo's convention).

    ## Arguments
    - `render_mode`: "ansi" or "human" (each agent's view as text).
    - `max_text_length`: longest observation/action in characters (default 65536).

    ## Version History
    - v0: initial release.
    """

    metadata: ClassVar[dict[str, Any]] = {**BoardGameEnv.metadata, "name": "tictactoe_v0"}
    MOVE_COUNT = SIZE * SIZE
    NOUN = "cell"
    RULES = (
        "We are playing tic-tac-toe on a 3 x 3 board whose cells are numbered 1 to 9, row by row; "
        "the board shows X, O, or the number of an empty cell. Players take turns marking an "
        "empty cell. The first to get three marks in a row, column or diagonal wins; a full "
        "board is a draw. You play {mark}. Reply with your move as <move>N</move>, N an empty "
        "cell from 1 to {moves}: the last <move> tag in your reply counts. A move on a taken "
        "cell, or a reply without a readable move, loses the game."
    )
    WIN_TEXT = "gets three in a row"
    WIN_OUTCOME = "three_in_a_row"

    def _new_board(self) -> np.ndarray:
        return np.full(SIZE * SIZE, EMPTY)

    def _legal(self) -> np.ndarray:
        return self.board == EMPTY

    def _illegal(self, move: int) -> str:
        return f"cell {move + 1} is taken"

    def board_text(self) -> str:
        cells = [str(i + 1) if mark == EMPTY else str(mark) for i, mark in enumerate(self.board)]
        return "\n".join(" ".join(cells[row * SIZE : (row + 1) * SIZE]) for row in range(SIZE))

    def _place(self, move: int, mark: str) -> bool:
        self.board[move] = mark
        return any(move in line and all(self.board[i] == mark for i in line) for line in LINES)


def env(**kwargs: Any) -> TicTacToeEnv:
    """The AEC env (PettingZoo module style); it enforces call order itself."""
    return TicTacToeEnv(**kwargs)


def parallel_env(**kwargs: Any) -> TextParallelEnv:
    """The Parallel env: one move per step."""
    return TextParallelEnv(TicTacToeEnv(**kwargs))


raw_env = TicTacToeEnv
