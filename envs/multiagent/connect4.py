"""`rlvr/Connect4-v0`: Connect Four as text; an illegal or malformed move loses the game."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from rlvr.envs.multiagent.base import MoveSpace, Round, TextAECEnv
from rlvr.envs.multiagent.parallel import TextParallelEnv
from rlvr.envs.replies import last_tagged, shorten

ROWS, COLUMNS, CONNECT = 6, 7, 4
MARKS = ("X", "O")
EMPTY = "."
MOVES = tuple(f"<move>{column}</move>" for column in range(1, COLUMNS + 1))
RULES = (
    "We are playing Connect Four on a board of {rows} rows and {columns} columns. Players take "
    "turns dropping a piece into a column; it falls to the lowest empty cell. The first to line "
    "up four of their pieces in a row, column or diagonal wins; a full board is a draw. You play "
    "{mark}. Reply with your move as <move>N</move>, N a column from 1 to {columns}: the last "
    "<move> tag in your reply counts. A move into a full column, or a reply without a readable "
    "move, loses the game."
)


class Connect4Env(TextAECEnv):
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

    metadata: ClassVar[dict[str, Any]] = {**TextAECEnv.metadata, "name": "connect4_v0"}

    def __init__(self, *, render_mode: str | None = None, max_text_length: int = 1 << 16) -> None:
        agents = ("player_0", "player_1")
        super().__init__(
            agents,
            action_spaces={agent: MoveSpace(MOVES, max_text_length) for agent in agents},
            render_mode=render_mode,
            max_text_length=max_text_length,
        )
        self.board = np.full((ROWS, COLUMNS), EMPTY)
        self._to_move = 0

    def _start(self, options: dict[str, Any]) -> dict[str, str]:
        self.board = np.full((ROWS, COLUMNS), EMPTY)
        self._to_move = 0
        first, second = self.possible_agents
        board = self.board_text()
        return {
            first: f"{self._rules(0)}\n\n{board}\n\nYou move first.",
            second: f"{self._rules(1)}\n\n{board}\n\nYour opponent moves first.",
        }

    def _movers(self) -> list[str]:
        return [self.possible_agents[self._to_move]]

    def _play(self, moves: dict[str, str]) -> Round:
        ((mover, reply),) = moves.items()
        player = self.possible_agents.index(mover)
        opponent = self.possible_agents[1 - player]
        column, problem = self.read_move(reply)
        if problem is not None:
            text = f"{mover} loses: {problem}."
            return _game_over(text, {mover: -1.0, opponent: 1.0}, "illegal_move")
        row = self._drop(column, MARKS[player])
        if self._wins(row, column):
            text = f"{mover} played column {column + 1}, connects four and wins."
            return _game_over(text, {mover: 1.0, opponent: -1.0}, "four_in_a_row")
        if not (self.board == EMPTY).any():
            text = f"{mover} played column {column + 1}; the board is full: a draw."
            return _game_over(text, {mover: 0.0, opponent: 0.0}, "draw")
        self._to_move = 1 - player
        played = f"Your opponent played column {column + 1}.\n\n{self.board_text()}\n\nYour move."
        return Round(messages={opponent: played})

    def _agent_info(self, agent: str) -> dict[str, Any]:
        mask = np.zeros(COLUMNS, dtype=np.int8)
        if agent in self.movers:
            mask[:] = self.board[0] == EMPTY
        return {"action_mask": mask}

    # --- the game -------------------------------------------------------------------------------

    def read_move(self, reply: str) -> tuple[int, str | None]:
        """(column index, None) for a legal move, else (-1, why the move is not one)."""
        body = last_tagged(reply, "move")
        if body is None:
            return -1, f"no <move>N</move> in the reply {shorten(reply, 80)!r}"
        text = body.strip()
        if text not in {str(column) for column in range(1, COLUMNS + 1)}:
            return -1, f"{shorten(text, 40)!r} is not a column from 1 to {COLUMNS}"
        column = int(text) - 1
        if self.board[0, column] != EMPTY:
            return -1, f"column {column + 1} is full"
        return column, None

    def board_text(self) -> str:
        header = " ".join(str(column) for column in range(1, COLUMNS + 1))
        return "\n".join([header, *(" ".join(row) for row in self.board)])

    def _drop(self, column: int, mark: str) -> int:
        row = int(np.flatnonzero(self.board[:, column] == EMPTY)[-1])
        self.board[row, column] = mark
        return row

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

    def _rules(self, player: int) -> str:
        return RULES.format(rows=ROWS, columns=COLUMNS, mark=MARKS[player])


def _game_over(text: str, rewards: dict[str, float], outcome: str) -> Round:
    """The last round: every player reads `text`; `infos[agent]["outcome"]` names how it ended."""
    return Round(
        messages=dict.fromkeys(rewards, text),
        rewards=rewards,
        game_over=True,
        info={agent: {"outcome": outcome} for agent in rewards},
    )


def env(**kwargs: Any) -> Connect4Env:
    """The AEC env (PettingZoo module style); it enforces call order itself."""
    return Connect4Env(**kwargs)


def parallel_env(**kwargs: Any) -> TextParallelEnv:
    """The Parallel env: one move per step."""
    return TextParallelEnv(Connect4Env(**kwargs))


raw_env = Connect4Env
