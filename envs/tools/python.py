"""A `python` tool that runs the agent's code in the sandbox (`rlvr.sandboxes`), never in our
process. Each call is a fresh program: variables do not persist between calls.

The sandbox's two statuses map onto the tool contract: a program that fails, times out or runs
out of memory is the agent's business (its output or an error message comes back), a broken
sandbox is ours (`ToolInfraError`: the step is an infrastructure error). Many environments share
one pool of sandbox workers: however long a call waits for a free one, that wait is off the
call's clock (`off_the_clock`), which starts when a worker takes the program.
"""

from __future__ import annotations

import threading
from typing import Any

from rlvr.envs.errors import EnvConfigError, ToolError, ToolInfraError
from rlvr.envs.tools.tool import Tool, object_schema, off_the_clock

MAX_OUTPUT_CHARS = 4000


def sandbox_api() -> Any | None:
    """The sandbox's executor API (`get_executor`, `ExecRequest`, `Limits`), or None if this
    installation has none."""
    try:
        from rlvr.sandboxes.pool import get_executor
        from rlvr.sandboxes.types import ExecRequest, Limits
    except ImportError:
        return None
    return type("SandboxAPI", (), {"get_executor": get_executor, "request": ExecRequest,
                                   "limits": Limits})  # fmt: skip


class PythonRunner:
    """Runs code with an executor from `rlvr.sandboxes`: the one given, or a local (bubblewrap)
    one made at the first call and shared through the sandbox's process-wide pool. Close the
    runner to give a made executor back.

    `probe=True` makes the executor now, raising `ToolInfraError` if this machine cannot sandbox
    code (how `python_tool="auto"` decides whether to offer the tool).
    """

    def __init__(
        self,
        *,
        time_limit: float = 10.0,
        memory_mb: int = 256,
        executor: Any = None,
        probe: bool = False,
    ) -> None:
        api = sandbox_api()
        if api is None:
            raise EnvConfigError(
                "the python tool needs rlvr.sandboxes, which this installation lacks; "
                "use the calculator alone (python_tool=False)"
            )
        self.api: Any = api
        self.time_limit = time_limit
        self.memory_mb = memory_mb
        self._executor = executor
        self._owned = executor is None
        self._lock = threading.Lock()
        if probe:
            self.executor()

    def executor(self) -> Any:
        with self._lock:
            if self._executor is None:
                try:
                    self._executor = self.api.get_executor("local")
                except Exception as exc:  # SandboxUnavailable and friends: our infrastructure
                    raise ToolInfraError(f"no sandbox on this machine: {exc}") from None
            return self._executor

    def run(self, code: str) -> str:
        try:
            code.encode("utf-8")  # JSON escapes can smuggle lone surrogates: the agent's error
        except UnicodeEncodeError:
            raise ToolError("the code contains characters that are not valid Unicode") from None
        limits = self.api.limits(wall_time=self.time_limit, memory=self.memory_mb * 1024 * 1024)
        result = sandboxed_run(self.executor(), self.api.request(code=code, limits=limits))
        output = result.stdout_text.rstrip()
        if not result.ok:
            details = result.describe()
            if result.stderr_text.strip():
                output = f"{output}\n{result.stderr_text}".strip()
            raise ToolError(f"the program did not finish cleanly ({details})\n{_cut(output)}")
        return _cut(output) if output.strip() else "(the program printed nothing; use print())"

    def tool(self) -> Tool:
        return Tool(
            "python",
            "Run a Python 3 program in a sandbox and return what it prints (use print). No "
            "network, no files kept, nothing remembered between calls; "
            f"{self.time_limit:g} s and {self.memory_mb} MB at most.",
            object_schema({"code": {"type": "string", "description": "the whole program"}}),
            self.run,
            timeout=self.time_limit + 30.0,  # from when a worker takes the program, not before
            slow_is_infra=True,  # the sandbox enforces the limit: beyond that, it is stuck
        )

    def close(self) -> None:
        with self._lock:
            if self._executor is not None and self._owned:
                self._executor.close()
                self._executor = None


def sandboxed_run(executor: Any, request: Any) -> Any:
    """Run `request` on `executor` from inside a tool: the wait for a free worker is off the
    call's clock, and a broken sandbox is a `ToolInfraError` (the agent's own failures, a
    program that fails or times out, come back in the result)."""
    job = executor.submit(request)
    with off_the_clock():  # other envs' runs ahead in the shared queue: not this call's time
        job.wait_taken()
    result = job.result()  # a sandbox stuck well past the time limit: a sandbox error
    if result.infra_error:
        raise ToolInfraError(result.describe())
    return result


def _cut(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[:MAX_OUTPUT_CHARS] + f"\n... [{len(text) - MAX_OUTPUT_CHARS} more characters cut]"
