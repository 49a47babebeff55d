"""Learners: `grpo.py` (GRPO, DAPO, Dr. GRPO) and `ppo.py` (PPO with GAE), one file each.

Importing this package imports nothing heavy; the learner modules need the `agents` extra.
"""
