"""Leaderboards: benchmark agents on pinned suites, store and publish results."""
