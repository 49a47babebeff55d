"""Text environments with the Gymnasium API.

An env is a `TextEnv` built from a task source and a `Judge` (`rlvr.envs.judge`: poses tasks,
judges replies) and an interaction (`rlvr.envs.interactions`: one reply, self-correction, tools,
...). `import rlvr.envs` (or `import rlvr`) registers every built-in environment; nothing heavy
is imported until `gym.make` builds one.
"""

from rlvr.envs.checker import EnvCheckError, check_env
from rlvr.envs.core import Outcome, Start, TextEnv, format_conversation
from rlvr.envs.errors import (
    ActionError,
    DatasetError,
    EnvConfigError,
    EnvError,
    NotTextError,
    ResetNeeded,
)
from rlvr.envs.judge import Judge, TaskJudge
from rlvr.envs.registration import (
    register_builtin_envs,
    register_family,
    register_task_env,
    rlvr_env_ids,
)
from rlvr.envs.spaces import TextSpace
from rlvr.envs.tasks import (
    ListSource,
    Problem,
    ProceduralSource,
    TaskSource,
    load_hf_dataset,
    load_jsonl,
    split_of,
)
from rlvr.envs.verifiable import VerifiableEnv
from rlvr.verifiers.types import Status, Task, Verdict

register_builtin_envs()  # also done when gymnasium loads after `import rlvr`

__all__ = [
    "ActionError",
    "DatasetError",
    "EnvCheckError",
    "EnvConfigError",
    "EnvError",
    "Judge",
    "ListSource",
    "NotTextError",
    "Outcome",
    "Problem",
    "ProceduralSource",
    "ResetNeeded",
    "Start",
    "Status",
    "Task",
    "TaskJudge",
    "TaskSource",
    "TextEnv",
    "TextSpace",
    "Verdict",
    "VerifiableEnv",
    "check_env",
    "format_conversation",
    "load_hf_dataset",
    "load_jsonl",
    "register_builtin_envs",
    "register_family",
    "register_task_env",
    "rlvr_env_ids",
    "split_of",
]
