"""The ground layer: what every other layer of rlvr may import, and which imports none of them.

- `rlvr.core.errors`: `RlvrError`, the root of every exception rlvr raises on purpose (each
  package's base derives from it), and `VerifierError`, `TaskFormatError`, which `Task` raises;
- `rlvr.core.types`: `Task`, `Verdict`, `Status`, `content_id`: the data of judging, which
  verifiers return and envs, rollouts and leaderboards read;
- `rlvr.core.episode`: `Start` and `Outcome`, how an interaction begins an episode and answers
  a reply (read by `TextEnv`);
- `rlvr.core.policy`: the `Policy` protocol (`generate`), `Completion`, `SamplingParams`,
  `EnvAware`: what the episode loop, the agents and the leaderboards agree on;
- `rlvr.core.resources`: process-wide shared resources (`SharedResources`, `Handle`, `Owner`):
  one per key, counted, not inherited through fork, closed at exit (sandbox pools, site servers,
  the math checkers);
- `rlvr.core.fields`: what a config dataclass declares about its fields (`Range`, `Seed`,
  `Positive`, `check_numbers`, `cli` metadata), so that `SamplingParams` is a config section
  like any other (`rlvr.config`, beside it in the ground, re-exports it all);
- `rlvr.core.jsonfiles`: JSON and JSON-lines reading whose bad content is a message, never a raw
  error, and atomic writes.
- `rlvr.core.tomlfiles`: TOML reading likewise (`rlvr.config` and the code task files use it).

Their former homes (`rlvr.verifiers.types`, `rlvr.verifiers.errors`, `rlvr.envs.core`,
`rlvr._shared`) export the same objects. Beside this package, the ground holds the root
package's small modules `rlvr._shared` (that former name), `rlvr._import_hook`,
`rlvr.builtin_envs` (the registry of families), `rlvr.families` (reading their descriptors)
and `rlvr.config` (the typed config and flag reading).
This package imports nothing of rlvr outside itself (the import contract `core-imports-nothing`
in pyproject.toml) and nothing outside the standard library (numpy and Gymnasium for type
checkers alone). The layers above, in order, and the contract that enforces them:
docs/design.md.
"""
