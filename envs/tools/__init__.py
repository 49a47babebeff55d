"""Tool use: tools as Python callables with JSON schemas, reading tool calls from replies, the
`ToolUse` interaction and the `ToolEnv` base class. See docs/multiturn.md."""

from rlvr.envs.errors import ToolError, ToolInfraError
from rlvr.envs.tools.calculator import CalculatorError, calculator_tool, evaluate
from rlvr.envs.tools.env import ToolEnv, ToolUse, VerifiableToolEnv
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
    "ToolEnv",
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
