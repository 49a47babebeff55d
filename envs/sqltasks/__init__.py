"""Text-to-SQL task sources: procedural databases and questions, and dataset loaders."""

from rlvr.envs.sqltasks.domains import DOMAINS, DomainCatalog
from rlvr.envs.sqltasks.generate import SQLTasks, procedural_tasks
from rlvr.envs.sqltasks.loaders import load_bird, load_spider, load_sql_jsonl
from rlvr.envs.sqltasks.questions import LEVELS, TEMPLATES

__all__ = [
    "DOMAINS",
    "LEVELS",
    "TEMPLATES",
    "DomainCatalog",
    "SQLTasks",
    "load_bird",
    "load_spider",
    "load_sql_jsonl",
    "procedural_tasks",
]
