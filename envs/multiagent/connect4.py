"""`rlvr/Connect4-v0`: Connect Four as text; an illegal or malformed move loses the game."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from rlvr.envs.multiagent.boardgame import EMPTY, BoardGameEnv
from rlvr.envs.multiagent.parallel import TextParallelEnv

ROWS, COLUMNS, CONNECT = 6, 7, 4


class Connect4Env(BoardGameEnv):
    """Connect Four between two text agents, rendered as a text board.

    ## Description
    The classic game on a 6 x 7 board: `player_0` plays X and moves first, `player_1` plays O.
    Turn-based (AEC); `parallel_env()` takes one move per `step` (the mover's action; the other's
    is ignored). Deterministic: nothing is random, so `reset(seed=...)` only reseeds `np_random`.

    ## Agents
    `player_0` (X, first), `player_1` (O).

    ## Action Space
    `MoveSpace`: any text; the move is the body of the last `<move>N</move>` tag, N a column
    from 1 to 7. `infos[agent]["action_mask"]` (int8, 7 entries, 1 = the column has room) marks
    the legal moves of the agent to move, all zeros for the other (PettingZoo's convention);
    `action_space(agent).sample(mask)` draws a legal move.

    ## Observation Space
    `TextSpace`: the rules and the board after `reset`; then the opponent's move and the board.

    ## Rewards
    Win +1, loss -1, draw 0 for both, given when the game ends (zero-sum). An illegal move (a
    full column) or a malformed one (no `<move>` tag, not a column number 1-7) loses the game at
    once: the mover gets -1 and the opponent +1, and `infos[agent]["outcome"]` says why. This is
    PettingZoo's "penalty and game over" handling of illegal moves, with the mask to avoid them.

    ## Starting State
    An empty board, X to move. No reset options.

    ## Episode End
    Four in a line, a full board (42 moves), or an illegal or malformed move. Every agent is then
    terminated; step each with `None` to remove it (PettingZoo's convention).

    ## Arguments
    - `render_mode`: "ansi" or "human" (each agent's view as text).
    - `max_text_length`: longest observation/action in characters (default 65536).

    ## Version History
    - v0: initial release.
    """

    metadata: ClassVar[dict[str, Any]] = {**BoardGameEnv.metadata, "name": "connect4_v0"}
    MOVE_COUNT = COLUMNS
    NOUN = "column"
    RULES = (
        f"We are playing Connect Four on a board of {ROWS} rows and {COLUMNS} columns. Players "
        "take turns dropping a piece into a column; it falls to the lowest empty cell. The first "
        "to line up four of their pieces in a row, column or diagonal wins; a full board is a "
        "draw. You play {mark}. Reply with your move as <move>N</move>, N a column from 1 to "
        "{moves}: the last <move> tag in your reply counts. A move into a full column, or a reply "
        "without a readable move, loses the game."
    )
    WIN_TEXT = "connects four"
    WIN_OUTCOME = "four_in_a_row"

    def _new_board(self) -> np.ndarray:
        return np.full((ROWS, COLUMNS), EMPTY)

    def _legal(self) -> np.ndarray:
        return self.board[0] == EMPTY

    def _illegal(self, move: int) -> str:
        return f"column {move + 1} is full"

    def board_text(self) -> str:
        header = " ".join(str(column) for column in range(1, COLUMNS + 1))
        return "\n".join([header, *(" ".join(row) for row in self.board)])

    def _place(self, move: int, mark: str) -> bool:
        row = int(np.flatnonzero(self.board[:, move] == EMPTY)[-1])
        self.board[row, move] = mark
        return self._wins(row, move)

    def _wins(self, row: int, column: int) -> bool:
        mark = self.board[row, column]
        for d_row, d_column in ((0, 1), (1, 0), (1, 1), (1, -1)):
            count = 1
            for sign in (1, -1):
                r, c = row + sign * d_row, column + sign * d_column
                while 0 <= r < ROWS and 0 <= c < COLUMNS and self.board[r, c] == mark:
                    count += 1
                    r, c = r + sign * d_row, c + sign * d_column
            if count >= CONNECT:
                return True
        return False


def env(**kwargs: Any) -> Connect4Env:
    """The AEC env (PettingZoo module style); it enforces call order itself."""
    return Connect4Env(**kwargs)


def parallel_env(**kwargs: Any) -> TextParallelEnv:
    """The Parallel env: one move per step."""
    return TextParallelEnv(Connect4Env(**kwargs))


raw_env = Connect4Env
