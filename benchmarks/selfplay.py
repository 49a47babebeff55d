"""Does self-play make the tiny model play a game better? Win rates before and after, on CPU.

`--env` picks the game (a two-player env with a move list: rlvr/Connect4-v0, the default,
rlvr/TicTacToe-v0, rlvr/Nim-v0); below, Connect Four stands for any of them.

1. A tiny Qwen2 model is built offline for the game (`rlvr.agents.tiny`: a tokenizer
   whose merges cross spaces, so a board row is a token or two; a short supervised warm start on
   moves of random legal games, which teaches the move format and legal moves, not how to win).
   Built once and reused.
2. For each seed, `--steps` steps of RL from that model (`rlvr.agents.train` with
   `self_play=SelfPlayConfig(opponent=--opponent)`, one torch thread): `--opponent self` is
   self-play (the policy takes both seats, each seat trained on its own tokens only), `legal`
   trains it against the random legal mover, seats alternating. `--algo grpo` gives every move
   of a game the game's return (relative to its group); `--algo ppo` gives each move its own
   credit (GAE over the env's per-turn rewards: an illegal move's -1 lands on that move).
3. Every model is measured over `--games` games, seats alternating: greedily against a fixed
   scripted opponent (`legal`, a uniformly random legal mover, the same draws for every model)
   and, for the trained ones, against the starting model (its own earlier checkpoint; both
   sampling at temperature 1, since two greedy models would replay the same two games; a draw
   scores 1/2). As a yardstick, the scripted agents that always play the same move (in Connect
   Four, the seven "stackers") are measured against `legal` too: a greedy model that ignores the
   board plays exactly like one of them; in Nim, also the rules "take the last stones when you
   can" and perfect play (heap % 4).
4. `--policy-per-seat` (`SelfPlayConfig.policy_per_seat`, with `--opponent self`): each seat
   trains a model of its own, and each seat's model is measured against `legal` both from its
   own seat (every game in it) and over both seats (alternating), and against the start model;
   the start model is measured from each seat too.

Prints, per seed and over seeds, the win rates with 95% Wilson intervals (per seed, and over
the seeds' games pooled; the games are the unit) and a t interval over the seeds' means;
`results.json` keeps the figures.

    nice -n 15 .venv/bin/python benchmarks/selfplay.py --seeds 3 --steps 200 --prompts 2 \
        --group-size 8 --algo ppo --lr 2e-3 --opponent legal
    nice -n 10 .venv/bin/python benchmarks/selfplay.py --env rlvr/Nim-v0 --seeds 3 --steps 80 \
        --games 400 --lr 2e-3 --overlong-buffer 4 --warm-steps 400
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

DEFAULT_ENV = "rlvr/Connect4-v0"
EVAL_SEED = 1_000_003


def wilson(successes: float, total: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion (`successes` may count draws as 1/2)."""
    if total == 0:
        return (math.nan, math.nan)
    p = successes / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / (1 + z * z / total)
    return (centre - half, centre + half)


T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)
"""Student's t 97.5% quantiles for 1..10 degrees of freedom (2.0 beyond)."""


def t_interval(values: list[float]) -> tuple[float, float]:
    """A 95% t interval of the mean of `values` (the seeds)."""
    n = len(values)
    if n < 2:
        return (math.nan, math.nan)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = (T975[n - 2] if n - 1 <= len(T975) else 2.0) * sd / math.sqrt(n)
    return (mean - half, mean + half)


def build(env_id: str, folder: Path, warm_steps: int, env_kwargs: dict[str, Any]) -> None:
    from rlvr.agents.tiny import TinyModelConfig, WarmStartConfig, build_tiny

    model = TinyModelConfig(vocab_size=1024, max_positions=1024, corpus_episodes=1500)
    warm = WarmStartConfig(steps=warm_steps, batch_size=16, lr=3e-3, pool_size=4000)
    build_tiny(env_id, folder, env_kwargs=env_kwargs, model=model, warm=warm, seed=0)


def match(
    game: tuple[str, dict[str, Any]],
    first: Any,
    second: Any,
    games: int,
    temperature: float = 0.0,
    seat: str | None = None,
) -> dict[str, Any]:
    """`games` games of `first` against `second` in `game` (env id, kwargs), seats alternating
    (or `first` always in `seat`)."""
    from rlvr.agents.policy import SamplingParams
    from rlvr.rollout.games import play_match

    env_id, env_kwargs = game
    report = play_match(
        env_id,
        first,
        second,
        games=games,
        seed=EVAL_SEED,
        env_kwargs=env_kwargs,
        sampling=SamplingParams(temperature=temperature, max_new_tokens=8),
        batch_size=min(games, 100),
        seat=seat,
    )
    scores = report.scores()
    points = sum(scores)
    return {
        "games": len(scores),
        "wins": report.wins,
        "draws": report.draws,
        "losses": report.losses,
        "win_rate": report.win_rate,
        "score": points / len(scores),
        "win_interval": wilson(report.wins, len(scores)),
        "score_interval": wilson(points, len(scores)),
        "illegal": sum(game.outcome == "illegal_move" for game in report.games),
    }


class NimRule:
    """A scripted Nim player (`rlvr/Nim-v0` only), as a yardstick: "perfect" takes heap % 4
    stones when that is not 0 (else 1), "finish" takes the whole heap when it can (else 1)."""

    def __init__(self, rule: str) -> None:
        self.rule = rule
        self.envs: list[Any] = []

    def attach(self, envs: Any) -> None:
        self.envs = list(envs)

    def generate(self, conversations: Any, n: int = 1, sampling: Any = None) -> Any:
        from rlvr.agents.policy import Completion

        return [[Completion(f"<move>{self._take(env.unwrapped.heap)}</move>")] for env in self.envs]

    def _take(self, heap: int) -> int:
        if self.rule == "finish":
            return heap if heap <= 3 else 1
        return heap % 4 or 1


def train_seed(model: Path, out: Path, seed: int, args: argparse.Namespace) -> Path:
    from rlvr.agents.learners.grpo import GRPOConfig
    from rlvr.agents.learners.ppo import PPOConfig
    from rlvr.agents.policy import SamplingParams
    from rlvr.agents.rollouts import EnvSpec
    from rlvr.agents.selfplay import SelfPlayConfig
    from rlvr.agents.train import TrainConfig, prepare

    config = TrainConfig(
        envs=[EnvSpec(args.env, kwargs=json.loads(args.env_kwargs))],
        model=str(model),
        output_dir=str(out),
        steps=args.steps,
        prompts_per_step=args.prompts,
        group_size=args.group_size,
        sampling=SamplingParams(max_new_tokens=8, temperature=args.temperature),
        eval_every=0,
        eval_episodes=2,  # the trainer's own check is skipped below; ours is `match`
        seed=seed,
        threads=1,
        tensorboard=False,
        progress=False,
        self_play=SelfPlayConfig(opponent=args.opponent, policy_per_seat=args.policy_per_seat),
        algo=args.algo,
        grpo=GRPOConfig(
            lr=args.lr, overlong_buffer=args.overlong_buffer, warmup_updates=args.warmup_updates
        ),
        ppo=PPOConfig(lr=args.lr),
    )
    trainer = prepare(config)
    trainer.evaluations = [{"step": 0}]  # measured once for every seed, by `match`
    while trainer.step < config.steps:
        metrics = trainer.train_step()
        print(
            f"  seed {seed} step {trainer.step}: {metrics.get('rollout/turns', math.nan):.1f} "
            f"moves per seat, win rate {metrics.get('rollout/success_rate', math.nan):.2f} "
            f"({metrics['time/step_seconds']:.1f} s)",
            flush=True,
        )
    return trainer.save_models(out / "final")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default=DEFAULT_ENV, help="a two-player game with a move list")
    parser.add_argument("--env-kwargs", default="{}", help='as JSON, e.g. {"max_stones": 7}')
    parser.add_argument("--out", default=None, help="default runs/bench/selfplay[-GAME]")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--prompts", type=int, default=4, help="tasks per step")
    parser.add_argument("--group-size", type=int, default=4, help="games per task")
    parser.add_argument("--games", type=int, default=200, help="games per measurement")
    parser.add_argument("--lr", type=float, default=5e-3)
    parser.add_argument("--warm-steps", type=int, default=60)
    parser.add_argument("--opponent", default="self", help="SelfPlayConfig.opponent")
    parser.add_argument("--algo", default="grpo", choices=("grpo", "ppo"))
    parser.add_argument("--temperature", type=float, default=1.0, help="of the training rollouts")
    parser.add_argument(
        "--overlong-buffer",
        type=int,
        default=0,
        help="GRPOConfig.overlong_buffer: a reply longer than 8 - this many ids loses reward "
        "(0: off); stops replies from running on past their move",
    )
    parser.add_argument(
        "--warmup-updates",
        type=int,
        default=0,
        help="GRPOConfig.warmup_updates: the learning rate rises linearly over this many updates",
    )
    parser.add_argument(
        "--policy-per-seat",
        action="store_true",
        help="SelfPlayConfig.policy_per_seat: each seat trains its own model (--opponent self)",
    )
    parser.add_argument("--first-seed", type=int, default=0, help="seeds run from this one on")
    parser.add_argument("--model", default=None, help="the tiny model folder (default OUT/tiny)")
    args = parser.parse_args()

    import torch

    from rlvr.agents.hf import HFPolicy
    from rlvr.agents.scripted import FixedPolicy, LegalMovePolicy
    from rlvr.envs.multiagent import make

    torch.set_num_threads(1)
    env_id = args.env
    game = (env_id, json.loads(args.env_kwargs))
    env = make(env_id, **game[1])
    moves = env.action_space(env.possible_agents[0]).moves  # a MoveSpace: the game's moves
    env.close()
    if args.out is None:
        name = env_id.split("/")[-1].rsplit("-v", 1)[0].lower()
        args.out = "runs/bench/selfplay" + ("" if env_id == DEFAULT_ENV else f"-{name}")
    out = Path(args.out)
    model = Path(args.model) if args.model else out / "tiny"
    seats = list(env.possible_agents)
    started = time.perf_counter()
    if not (model / "rlvr_tiny.json").is_file():
        print(f"building the tiny {env_id} model in {model}", flush=True)
        build(env_id, model, args.warm_steps, game[1])
    # the bar a greedy model that ignores the board meets: always the same move (Connect Four's
    # "stackers"; in tic-tac-toe they lose on their second move)
    stackers = {
        number: match(game, FixedPolicy(move), LegalMovePolicy(7), args.games)
        for number, move in enumerate(moves, 1)
    }
    if env_id == "rlvr/Nim-v0":  # what reading the heap is worth
        for rule in ("finish", "perfect"):
            stackers[rule] = match(game, NimRule(rule), LegalMovePolicy(7), args.games)
    start_policy = HFPolicy(model)
    before = match(game, start_policy, LegalMovePolicy(7), args.games)
    print(f"start model vs legal: win rate {before['win_rate']:.3f}", flush=True)
    start_by_seat = {}
    if args.policy_per_seat:
        for seat in seats:
            legal = LegalMovePolicy(7)
            start_by_seat[seat] = match(game, start_policy, legal, args.games, seat=seat)
            print(f"  from {seat}: {start_by_seat[seat]['win_rate']:.3f}", flush=True)
    runs = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        final = train_seed(model, out / f"seed-{seed}", seed, args)
        if args.policy_per_seat:
            run: dict[str, Any] = {"seed": seed, "seats": {}}
            for seat in seats:
                run["seats"][seat] = measure(game, HFPolicy(final / seat), start_policy, args, seat)
        else:
            run = {"seed": seed, **measure(game, HFPolicy(final), start_policy, args)}
        runs.append(run)
        print(json.dumps(runs[-1]), flush=True)
    results = {
        "command": "benchmarks/selfplay.py "
        + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(args).items()),
        "settings": vars(args),
        "start_vs_legal": before,
        "fixed_move_vs_legal": stackers,
        "runs": runs,
        **({} if args.policy_per_seat else summary(runs)),
        "wall_seconds": time.perf_counter() - started,
    }
    if args.policy_per_seat:
        results["start_vs_legal_by_seat"] = start_by_seat
        results["seat_summary"] = {seat: seat_summary(runs, seat) for seat in seats}
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    report(results)


def measure(
    game: tuple[str, dict[str, Any]],
    trained: Any,
    start: Any,
    args: argparse.Namespace,
    seat: str | None = None,
) -> dict[str, Any]:
    """A trained model's matches: greedy vs `legal` over both seats (and from `seat` when given),
    sampled vs the start model."""
    from rlvr.agents.scripted import LegalMovePolicy

    measured = {
        "vs_legal": match(game, trained, LegalMovePolicy(7), args.games),
        # sampled, both sides: two greedy models would replay the same two games
        "vs_start": match(game, trained, start, args.games, temperature=1.0),
    }
    if seat is not None:
        measured["vs_legal_own_seat"] = match(
            game, trained, LegalMovePolicy(7), args.games, seat=seat
        )
    return measured


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Over seeds: the mean win rate vs legal (t interval over seeds, Wilson over the pooled
    games) and the mean score vs the start model, of `runs` (each with `measure`'s keys)."""
    figures = {
        "after_vs_legal_mean": _mean([r["vs_legal"]["win_rate"] for r in runs]),
        "after_vs_legal_t95": t_interval([r["vs_legal"]["win_rate"] for r in runs]),
        # every seed's games together: a Wilson interval over seeds x games
        "after_vs_legal_pooled": wilson(
            sum(r["vs_legal"]["wins"] for r in runs), sum(r["vs_legal"]["games"] for r in runs)
        ),
        "vs_start_score_mean": _mean([r["vs_start"]["score"] for r in runs]),
        "vs_start_score_t95": t_interval([r["vs_start"]["score"] for r in runs]),
    }
    if runs and "vs_legal_own_seat" in runs[0]:
        own = [r["vs_legal_own_seat"] for r in runs]
        figures["own_seat_vs_legal_mean"] = _mean([m["win_rate"] for m in own])
        figures["own_seat_vs_legal_t95"] = t_interval([m["win_rate"] for m in own])
        figures["own_seat_vs_legal_pooled"] = wilson(
            sum(m["wins"] for m in own), sum(m["games"] for m in own)
        )
    return figures


def seat_summary(runs: list[dict[str, Any]], seat: str) -> dict[str, Any]:
    return summary([run["seats"][seat] for run in runs])


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def report(results: dict[str, Any]) -> None:
    print(
        f"{results['settings']['env']}: always move N (and any scripted rule) vs the legal mover "
        "(win rate, illegal-move losses):"
    )
    for number, stacker in results["fixed_move_vs_legal"].items():
        print(f"  {number}: {stacker['win_rate']:.3f} ({stacker['illegal']} illegal)")
    print(f"\nstart model vs legal mover: {_figure(results['start_vs_legal'], 'win')}")
    if "seat_summary" not in results:
        report_runs(results["runs"], results)
    for seat, figures in results.get("seat_summary", {}).items():
        start = results["start_vs_legal_by_seat"][seat]
        print(f"\n{seat}'s model; the start model from {seat} vs legal: {_figure(start, 'win')}")
        runs = [run["seats"][seat] | {"seed": run["seed"]} for run in results["runs"]]
        report_runs(runs, figures)
    print(f"wall {results['wall_seconds']:.0f} s")


def report_runs(runs: list[dict[str, Any]], figures: dict[str, Any]) -> None:
    own = "vs_legal_own_seat" in runs[0] if runs else False
    print(
        "seed  vs legal (win rate, 95% Wilson)   vs start model (score, 95% Wilson)"
        + ("   vs legal from its own seat" if own else "")
    )
    for run in runs:
        line = f"{run['seed']:>4}  {_figure(run['vs_legal'], 'win')}    "
        line += f"        {_figure(run['vs_start'], 'score')}"
        if own:
            line += f"       {_figure(run['vs_legal_own_seat'], 'win')}"
        print(line)
    low, high = figures["after_vs_legal_t95"]
    print(f"mean  {figures['after_vs_legal_mean']:.3f} [{low:.3f}, {high:.3f}] (t, seeds)", end="")
    low, high = figures["vs_start_score_t95"]
    print(f"      {figures['vs_start_score_mean']:.3f} [{low:.3f}, {high:.3f}]", end="")
    if own:
        low, high = figures["own_seat_vs_legal_t95"]
        print(f"       {figures['own_seat_vs_legal_mean']:.3f} [{low:.3f}, {high:.3f}]", end="")
    print()
    low, high = figures["after_vs_legal_pooled"]
    print(f"pooled games of all seeds vs legal: [{low:.3f}, {high:.3f}] (Wilson)", end="")
    if own:
        low, high = figures["own_seat_vs_legal_pooled"]
        print(f"; from its own seat: [{low:.3f}, {high:.3f}]", end="")
    print()


def _figure(measured: dict[str, Any], kind: str) -> str:
    """'0.500 [0.451, 0.549]': a win rate (kind 'win') or score with its Wilson interval."""
    value = measured["win_rate" if kind == "win" else "score"]
    low, high = measured[f"{kind}_interval"]
    return f"{value:.3f} [{low:.3f}, {high:.3f}]"


if __name__ == "__main__":
    main()
