"""rlvr-gym: environments, verifiers, sandboxes and learners for RL from verifiable rewards.

`import rlvr` registers every environment with Gymnasium, so that

    import gymnasium as gym, rlvr
    env = gym.make("rlvr/Math-v0")

works, as do `gym.register_envs(rlvr)` and `gym.make("rlvr:rlvr/Math-v0")`.
"""

import rlvr.envs  # noqa: F401  (registers the environments)

__version__ = "0.1.0"
