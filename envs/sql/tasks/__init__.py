"""Text-to-SQL task sources: procedural databases and questions, and dataset loaders."""

from rlvr.envs.sql.tasks.domains import DOMAINS, DomainCatalog
from rlvr.envs.sql.tasks.generate import SQLTasks, procedural_tasks
from rlvr.envs.sql.tasks.loaders import load_bird, load_spider, load_sql_jsonl
from rlvr.envs.sql.tasks.questions import LEVELS, TEMPLATES

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
