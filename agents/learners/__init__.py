"""Learners: `grpo.py` (GRPO, DAPO, Dr. GRPO), `ppo.py` (PPO with GAE) and `rloo.py` (RLOO), one
file each, listed in the table `base.LEARNERS` with the `Learner` protocol the trainer calls.

Importing this package imports nothing heavy; the learner modules need the `agents` extra.
"""
