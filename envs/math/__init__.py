"""`rlvr/Math-v0`: procedural math problems (or GSM8K/MATH) judged by `MathVerifier`.

import gymnasium as gym, rlvr
env = gym.make("rlvr/Math-v0", families=["arithmetic"], difficulty=1)
env = gym.make("rlvr/Math-v0", tasks=rlvr.envs.math.load_gsm8k("gsm8k_test.jsonl"))
"""

from rlvr.envs.math.env import DEFAULT_PROMPT_TEMPLATE, MathEnv, MathJudge, procedural_source
from rlvr.envs.math.families import FAMILIES, LEVELS
from rlvr.envs.math.loaders import gsm8k_answer, load_gsm8k, load_math, math_answer

__all__ = [
    "DEFAULT_PROMPT_TEMPLATE",
    "FAMILIES",
    "LEVELS",
    "MathEnv",
    "MathJudge",
    "gsm8k_answer",
    "load_gsm8k",
    "load_math",
    "math_answer",
    "procedural_source",
]
