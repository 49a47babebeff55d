"""Adapters that put rlvr environments inside other trainers, and tasks into datasets.

- `rlvr.integrations.trl`: reward functions, prompt datasets and an `environment_factory` for
  TRL's `GRPOTrainer` (extra `trl`).
- `rlvr.integrations.verl`: a `compute_score` function and a reward manager for verl (extra
  `verl`).
- `rlvr.integrations.export`: `rlvr export`, a Hugging Face dataset (parquet and a card) of an
  env's prompts and gold tasks (extra `datasets`).
- `rlvr.integrations.serve`: `rlvr serve`, any env over OpenEnv's protocol; `.openenv`: its
  client, `remote/OpenEnv-v0` (`RemoteEnv`); `.serve_image`: `rlvr serve build-image` (extra
  `serve`, docs/serving.md).
- `rlvr.integrations.verifiers`: envs as verifiers environments (extra `verifiers-env`).

Each adapter imports its library when it is used; `import rlvr.integrations` imports none (the
`rlvr export` and `rlvr serve` commands load their modules when they run; `remote/OpenEnv-v0`
loads its client when made). See docs/integrations.md.
"""

from rlvr.integrations.columns import (
    TASK_COLUMNS,
    decode_task,
    encode_task,
    opening_messages,
)
from rlvr.integrations.errors import InfraError, IntegrationConfigError, IntegrationError
from rlvr.integrations.scoring import EnvJudge, Score, final_reply

__all__ = [
    "TASK_COLUMNS",
    "EnvJudge",
    "InfraError",
    "IntegrationConfigError",
    "IntegrationError",
    "Score",
    "decode_task",
    "encode_task",
    "final_reply",
    "opening_messages",
]
