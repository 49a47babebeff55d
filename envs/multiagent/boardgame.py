"""`BoardGameEnv`: what two-player text board games (Connect Four, tic-tac-toe) share.

Two players alternate, `player_0` (X) first. A move is the body of the last `<move>N</move>` tag
of a reply, N one of the game's numbered moves (a column, a cell); an illegal or malformed move
loses the game at once (PettingZoo's "penalty and game over", with the action mask in
`infos[agent]["action_mask"]` to avoid it). Win +1, loss -1, draw 0. A subclass says what the
board is and what a move does:

- `RULES` (formatted with `mark`, the player's mark, and `moves`, the number of moves), `NOUN`
  ("column", "cell") and `WIN_TEXT`/`WIN_OUTCOME` (how a win is told and recorded);
- `_new_board()` (draw anything random with `self.np_random`), `_legal()` (a bool per move),
  `_place(move, mark) -> bool` (it wins), `board_text()`, `_illegal(move)` (why a listed move is
  not legal now) and, optionally, `_played(move)` (how a move is told: "played column 4").
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from rlvr.envs.multiagent.base import MoveSpace, Round, TextAECEnv
from rlvr.envs.replies import last_tagged, shorten

MARKS = ("X", "O")
EMPTY = "."


class BoardGameEnv(TextAECEnv):
    """Base of two-player, turn-based text board games with numbered moves (see the module)."""

    MOVE_COUNT: ClassVar[int]
    """Moves are numbered 1..MOVE_COUNT."""
    NOUN: ClassVar[str]
    """What a move names, e.g. "column"."""
    RULES: ClassVar[str]
    """The opening rules, formatted with `mark` and `moves`."""
    WIN_TEXT: ClassVar[str]
    """What follows "{mover} played {noun} N, " when the move wins, e.g. "connects four"."""
    FIRST_TEXT: ClassVar[tuple[str, str]] = ("You move first.", "Your opponent moves first.")
    """What each player reads under the opening board."""
    WIN_OUTCOME: ClassVar[str]
    """`infos[agent]["outcome"]` of a won game, e.g. "four_in_a_row"."""

    def __init__(self, *, render_mode: str | None = None, max_text_length: int = 1 << 16) -> None:
        agents = ("player_0", "player_1")
        moves = tuple(f"<move>{n}</move>" for n in range(1, self.MOVE_COUNT + 1))
        super().__init__(
            agents,
            action_spaces={agent: MoveSpace(moves, max_text_length) for agent in agents},
            render_mode=render_mode,
            max_text_length=max_text_length,
        )
        self.board = self._new_board()
        self._to_move = 0

    # --- what subclasses implement -------------------------------------------------------------

    def _new_board(self) -> np.ndarray:
        raise NotImplementedError

    def _legal(self) -> np.ndarray:
        """A bool per move (index n-1 for move n): whether it is legal now."""
        raise NotImplementedError

    def _place(self, move: int, mark: str) -> bool:
        """Play legal move index `move` for `mark`; whether it wins."""
        raise NotImplementedError

    def _illegal(self, move: int) -> str:
        """Why listed move index `move` is not legal now, e.g. "column 3 is full"."""
        raise NotImplementedError

    def board_text(self) -> str:
        raise NotImplementedError

    def _played(self, move: int) -> str:
        """How move index `move` is told, after the mover's name or "Your opponent"."""
        return f"played {self.NOUN} {move + 1}"

    # --- the turn loop -------------------------------------------------------------------------

    def _start(self, options: dict[str, Any]) -> dict[str, str]:
        self.board = self._new_board()
        self._to_move = 0
        first, second = self.possible_agents
        board = self.board_text()
        return {
            first: f"{self._rules(0)}\n\n{board}\n\n{self.FIRST_TEXT[0]}",
            second: f"{self._rules(1)}\n\n{board}\n\n{self.FIRST_TEXT[1]}",
        }

    def _movers(self) -> list[str]:
        return [self.possible_agents[self._to_move]]

    def _play(self, moves: dict[str, str]) -> Round:
        ((mover, reply),) = moves.items()
        player = self.possible_agents.index(mover)
        opponent = self.possible_agents[1 - player]
        move, problem = self.read_move(reply)
        if problem is not None:
            text = f"{mover} loses: {problem}."
            return _game_over(text, {mover: -1.0, opponent: 1.0}, "illegal_move")
        played = self._played(move)
        if self._place(move, MARKS[player]):
            text = f"{mover} {played}, {self.WIN_TEXT} and wins."
            return _game_over(text, {mover: 1.0, opponent: -1.0}, self.WIN_OUTCOME)
        if not self._legal().any():
            text = f"{mover} {played}; the board is full: a draw."
            return _game_over(text, {mover: 0.0, opponent: 0.0}, "draw")
        self._to_move = 1 - player
        told = f"Your opponent {played}.\n\n{self.board_text()}\n\nYour move."
        return Round(messages={opponent: told})

    def _agent_info(self, agent: str) -> dict[str, Any]:
        mask = np.zeros(self.MOVE_COUNT, dtype=np.int8)
        if agent in self.movers:
            mask[:] = self._legal()
        return {"action_mask": mask}

    def read_move(self, reply: str) -> tuple[int, str | None]:
        """(move index, None) for a legal move, else (-1, why the reply is not one)."""
        body = last_tagged(reply, "move")
        if body is None:
            return -1, f"no <move>N</move> in the reply {shorten(reply, 80)!r}"
        text = body.strip()
        if text not in {str(n) for n in range(1, self.MOVE_COUNT + 1)}:
            return -1, f"{shorten(text, 40)!r} is not a {self.NOUN} from 1 to {self.MOVE_COUNT}"
        move = int(text) - 1
        if not self._legal()[move]:
            return -1, self._illegal(move)
        return move, None

    def _rules(self, player: int) -> str:
        return self.RULES.format(mark=MARKS[player], moves=self.MOVE_COUNT)


def _game_over(text: str, rewards: dict[str, float], outcome: str) -> Round:
    """The last round: every player reads `text`; `infos[agent]["outcome"]` names how it ended."""
    return Round(
        messages=dict.fromkeys(rewards, text),
        rewards=rewards,
        game_over=True,
        info={agent: {"outcome": outcome} for agent in rewards},
    )
