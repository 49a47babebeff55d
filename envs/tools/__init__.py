"""Tool use: tools as Python callables with JSON schemas, reading tool calls from replies and
the `ToolUse` interaction: a tool env is `TextEnv(judge, ToolUse(tools))`. See docs/multiturn.md.
`ToolEnv` is deprecated (importable for one release, with a `DeprecationWarning`)."""

from rlvr.envs.errors import ToolError, ToolInfraError
from rlvr.envs.tools.calculator import CalculatorError, calculator_tool, evaluate
from rlvr.envs.tools.env import ToolUse, VerifiableToolEnv, deprecated_names
from rlvr.envs.tools.parsing import ParsedReply, ToolCall, format_tool_call, parse_tool_calls
from rlvr.envs.tools.tool import (
    Tool,
    Toolbox,
    ToolResult,
    off_the_clock,
    tool,
    validate_arguments,
)

__all__ = [
    "CalculatorError",
    "ParsedReply",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolInfraError",
    "ToolResult",
    "ToolUse",
    "Toolbox",
    "VerifiableToolEnv",
    "calculator_tool",
    "evaluate",
    "format_tool_call",
    "off_the_clock",
    "parse_tool_calls",
    "tool",
    "validate_arguments",
]


__getattr__ = deprecated_names(__name__)  # ToolEnv, deprecated
