"""The ground layer: what every other layer of rlvr may import, and which imports none of them.

- `rlvr.core.policy`: the `Policy` protocol (`generate`), `Completion`, `SamplingParams`,
  `EnvAware`: what the episode loop, the agents and the leaderboards agree on;
- `rlvr.core.fields`: what a config dataclass declares about its fields (`Range`, `Seed`,
  `Positive`, `check_numbers`, `cli` metadata), so that `SamplingParams` is a config section
  like any other (`rlvr.config`, beside it in the ground, re-exports it all);
- `rlvr.core.jsonfiles`: JSON and JSON-lines reading whose bad content is a message, never a raw
  error, and atomic writes.
- `rlvr.core.tomlfiles`: TOML reading likewise (`rlvr.config` and the code task files use it).

Beside this package, the ground holds the root package's small modules `rlvr._shared` (process-wide
resources), `rlvr._import_hook`, `rlvr.builtin_envs` (the table of env ids) and `rlvr.config` (the
typed config and flag reading). Standard library only (numpy and Gymnasium for type checkers
alone). The layers above, in order, and the contract that enforces them: docs/design.md.
"""
