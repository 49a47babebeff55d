"""Multi-agent text environments on PettingZoo's API (AEC and Parallel).

```python
from rlvr.envs.multiagent import make
env = make("rlvr/Connect4-v0")  # a PettingZoo AECEnv; make_parallel(...) for the Parallel API
```

`import rlvr` does not import this package (nor PettingZoo); importing it registers the built-in
multi-agent envs.
"""

from rlvr.envs.multiagent.base import MoveSpace, Round, TextAECEnv, TextObservation
from rlvr.envs.multiagent.checker import check_env
from rlvr.envs.multiagent.parallel import TextParallelEnv
from rlvr.envs.multiagent.registration import (
    MultiAgentSpec,
    RetiredEnvWarning,
    env_ids,
    make,
    make_parallel,
    register,
    registry,
    spec,
    to_parallel,
)

__all__ = [
    "MoveSpace",
    "MultiAgentSpec",
    "RetiredEnvWarning",
    "Round",
    "TextAECEnv",
    "TextObservation",
    "TextParallelEnv",
    "check_env",
    "env_ids",
    "make",
    "make_parallel",
    "register",
    "registry",
    "spec",
    "to_parallel",
]
