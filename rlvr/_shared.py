"""Former home of the process-wide shared resources, now `rlvr.core.resources` (the ground
layer): this module exports the same objects, so code written against it keeps working."""

from rlvr.core.resources import (
    _TABLES,
    Handle,
    HandleClosed,
    Owner,
    SharedResources,
    close_all,
)

__all__ = ["_TABLES", "Handle", "HandleClosed", "Owner", "SharedResources", "close_all"]
