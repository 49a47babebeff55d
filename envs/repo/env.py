"""`rlvr/Repo-v0`: fix a bug in a small Python repository, graded by hidden tests."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from rlvr.envs import options as checks
from rlvr.envs import services
from rlvr.envs.code import SANDBOX_ARGUMENTS
from rlvr.envs.core import Outcome, Start, TextEnv
from rlvr.envs.errors import EnvConfigError
from rlvr.envs.interactions import Interaction
from rlvr.envs.judge import TaskJudge
from rlvr.envs.options import (
    declare,
    level,
    names,
    one_of,
    optional,
    real,
    tasks_argument,
    whole,
)
from rlvr.envs.repo.generator import DOMAIN_KEYS, LEVELS, RepoGenerator
from rlvr.envs.repo.task import RepoTask
from rlvr.envs.repo.tools import RepoTools, ShellSettings
from rlvr.envs.repo.workspace import Workspace, WorkspaceLimits
from rlvr.envs.tasks import SPLITS, ProceduralSource, TaskSource
from rlvr.envs.tools.env import ToolUse
from rlvr.envs.tools.parsing import format_tool_call
from rlvr.sandboxes import Executor
from rlvr.verifiers.repo import RepoTestConfig, RepoTestVerifier
from rlvr.verifiers.types import Task, Verdict

INSTRUCTIONS = (
    "You are a software engineer working in a Python repository inside a sandbox. A user "
    "reported an issue. Find its cause in the package's code and fix it with the tools. Hidden "
    "tests check the fix, so fix the behaviour in general, not only the example in the issue; "
    "the repository's own tests (tests/) may not cover the bug."
)
FINAL_INSTRUCTIONS = (
    "Work by calling tools. When the fix is done, call submit: the hidden tests then grade the "
    "repository and the episode ends. A reply without a tool call ends the episode without a "
    "submission (reward 0)."
)
PROMPT = "Issue:\n\n{issue}\n\nThe repository's files:\n{files}"
DEFAULT_MAX_TURNS = 30


def approximate_tokens(text: str) -> int:
    """The default token count: one token per 4 characters (pass your tokenizer's count to
    `count_tokens` for an exact limit)."""
    return len(text) // 4 + 1


class RepoEnv(TextEnv):
    """Fix a bug in a small Python repository with a shell and file tools; hidden tests grade.

    ## Description
    Each episode is a repository in its own sandboxed workspace (the local bubblewrap pool by
    default, `backend="docker"` for a Docker engine): a package of a few modules, its unittest
    tests, a README. A bug was injected by an AST mutation, verified to break hidden tests that
    the reference fix restores. The agent reads the issue (wrong behaviour seen by a user, not
    the fix), explores and edits the repository through tools, and submits. Built-in tasks are
    generated (`RepoGenerator`: six domains, three levels, train/test splits disjoint by
    repository and by mutation); `load_swebench_style(path)` loads tasks of your own. See
    docs/repo.md, which also holds the threat model: every way of cheating listed there scores
    0 and none is an infrastructure error.

    ## Action Space
    `TextSpace`: a reply with `<tool_call>{"name": ..., "arguments": {...}}</tool_call>` blocks
    (at most 4 run per reply). Tools: `run` (a bash command), `read_file`, `write_file`,
    `replace_in_file`, `apply_patch` (a unified diff), `list_files`, `run_tests` (the
    repository's own tests), `submit`.

    ## Observation Space
    `TextSpace`: the issue and the repository's file list; then each reply's tool results
    (role `tool`); the grading at the end.

    ## Rewards
    0 for tool turns. On `submit` (or when the turn or token limit is reached) the hidden tests
    run over the workspace's files in a fresh sandbox run: 1.0 if every fail-to-pass test now
    passes and every pass-to-pass test still passes, else 0.0 (`scoring="all"`); with
    `scoring="fraction"`, the share of fail-to-pass tests passing times the share of
    pass-to-pass tests still passing. With `max_submissions` > 1 (`rlvr/RepoSelfCorrect-v0`:
    3) a failed submission is answered only "the hidden tests still fail" and the episode goes
    on; the last submission's score is the reward. A reply without a tool call ends the
    episode with 0. If
    the sandbox itself fails, `info["infra_error"]` is True and the reward must be ignored.

    ## Starting State
    A task drawn with the env's generator (`options={"task_index": i}` pins one, `options=
    {"task": {...}}` runs one of yours); the workspace is a fresh copy of its files.

    ## Episode End
    Terminates on `submit` (the last of `max_submissions`, or one that passes), on a reply
    without a tool call, at `max_turns` replies or past
    `max_tokens` (then the workspace is graded as it is), or on an infrastructure error.
    `info["transcript"]` holds every tool call of the episode at its end.

    ## Arguments
    `tasks` (None for generated tasks, or a task source / list), `split` ("train"/"test"),
    `difficulty` (1, 2, 3 or a list; see `rlvr.envs.repo.generator`), `domains` (None for all,
    or some of "text", "numbers", "time", "shop", "lists", "grid"), `seed` (of the
    generator), `scoring` ("all"/"fraction"), `max_turns` (30), `max_submissions` (1),
    `max_tokens` (None: no limit)
    and `count_tokens` (a function text -> tokens; default: characters / 4), `backend`
    ("local"/"docker"), `backend_options`, `executor`, `command_timeout` (seconds per command,
    10), `command_memory_mb` (256), `timeout` (seconds for the whole grading, 60),
    `test_timeout` (seconds per hidden call, 3), `max_files`, `max_bytes` (workspace limits),
    `render_mode`.

    ## Version History
    - v0: initial version (`rlvr/RepoSelfCorrect-v0`: the same with `max_submissions=3`).
    """

    argument_checks = declare(
        **SANDBOX_ARGUMENTS,
        tasks=optional(tasks_argument),
        split=one_of(*SPLITS),
        difficulty=level(LEVELS),
        domains=optional(names(DOMAIN_KEYS)),
        seed=whole(0),
        scoring=one_of("all", "fraction"),
        max_turns=whole(1, 1000),
        max_submissions=whole(1, 100),
        max_tokens=optional(whole(1)),
        count_tokens=optional(checks.of_type(Callable, what="a function text -> int")),  # type: ignore[arg-type]
        command_timeout=real(0.0, 600.0, low_open=True),
        command_memory_mb=whole(32, 8192),
        max_files=whole(1),
        max_bytes=whole(1024),
    )

    def __init__(
        self,
        tasks: TaskSource | Iterable[Task | Mapping[str, Any]] | None = None,
        *,
        split: str = "train",
        difficulty: int | Sequence[int] = LEVELS,
        domains: str | Sequence[str] | None = None,
        seed: int = 0,
        scoring: str = "all",
        max_turns: int = DEFAULT_MAX_TURNS,
        max_submissions: int = 1,
        max_tokens: int | None = None,
        count_tokens: Callable[[str], int] | None = None,
        backend: str = "local",
        backend_options: dict[str, Any] | None = None,
        executor: Executor | None = None,
        command_timeout: float = 10.0,
        command_memory_mb: int = 256,
        timeout: float = 60.0,
        test_timeout: float = 3.0,
        max_files: int = 1000,
        max_bytes: int = 4 * 1024 * 1024,
        render_mode: str | None = None,
    ) -> None:
        if tasks is None:
            generator = RepoGenerator(checks.subset(domains, DOMAIN_KEYS, name="domains"))
            tasks = ProceduralSource(
                generator, name="repo", split=split, difficulty=difficulty, seed=seed
            )
        else:
            checks.refuse_replaced(
                {
                    "split": None if split == "train" else split,
                    "difficulty": None if difficulty == LEVELS else difficulty,
                    "domains": domains,
                },
                what="generated tasks",
            )
        limits = WorkspaceLimits(
            max_files=max_files, max_bytes=max_bytes, max_file_bytes=min(max_bytes, 1 << 20)
        )
        verifier = repo_verifier(
            scoring=scoring,
            timeout=timeout,
            test_timeout=test_timeout,
            backend=backend,
            backend_options=backend_options,
            executor=executor,
        )
        judge = RepoJudge(tasks, verifier, limits)
        session = RepoSession(
            ShellSettings(timeout=command_timeout, memory_mb=command_memory_mb),
            limits,
            max_turns=max_turns,
            max_submissions=max_submissions,
            max_tokens=max_tokens,
            count_tokens=count_tokens or approximate_tokens,
            grading_timeout=timeout,
        )
        super().__init__(judge, session, render_mode=render_mode)
        self.tasks = judge.tasks

    @property
    def workspace(self) -> Workspace:
        """The current episode's workspace."""
        session = self.interaction
        assert isinstance(session, RepoSession)
        if session.workspace is None:
            raise RuntimeError("call reset() first")
        return session.workspace


def repo_verifier(
    *,
    scoring: str,
    timeout: float,
    test_timeout: float,
    backend: str,
    backend_options: dict[str, Any] | None,
    executor: Executor | None,
) -> RepoTestVerifier:
    """The hidden-test verifier, its settings checked and its sandbox reached now."""
    try:
        config = RepoTestConfig(
            scoring=scoring, timeout=timeout, test_timeout=test_timeout, backend=backend
        )
    except ValueError as exc:
        raise EnvConfigError(str(exc)) from None
    if executor is None:
        services.sandbox(backend, backend_options)
    elif backend_options:
        raise EnvConfigError(
            "backend_options configure the sandbox the env makes, but executor= gives your "
            "own: drop backend_options"
        )
    return RepoTestVerifier(config, executor=executor, backend_options=backend_options)


class RepoJudge(TaskJudge):
    """Repository tasks: poses them (the issue and the file list) and grades a workspace's files
    with the hidden tests (`grade`). A final reply alone is never graded: it ends the episode
    unsubmitted. The judge owns its verifier and closes it."""

    VERSION = "1"

    def __init__(
        self,
        tasks: TaskSource | Iterable[Task | Mapping[str, Any]],
        verifier: RepoTestVerifier,
        limits: WorkspaceLimits | None = None,
    ) -> None:
        self.repo_verifier = verifier
        self.limits = limits or WorkspaceLimits()
        self._parsed: dict[str, tuple[Task, RepoTask]] = {}
        super().__init__(tasks, self, system_prompt=INSTRUCTIONS)

    def parse(self, task: Task) -> RepoTask:
        """`task` parsed (remembered for the last few tasks: a generated task is parsed once
        per episode, not per call)."""
        cached = self._parsed.get(task.id)
        if cached is not None and cached[0] is task:
            return cached[1]
        parsed = RepoTask.from_task(task, self.limits)
        if len(self._parsed) > 16:
            self._parsed.clear()
        self._parsed[task.id] = (task, parsed)
        return parsed

    def check(self, task: Task) -> None:
        self.parse(task)

    def prompt(self, task: Task) -> str:
        files = "\n".join(sorted(self.parse(task).files))
        return PROMPT.format(issue=task.prompt.strip(), files=files)

    def verify(self, response: str, task: Task) -> Verdict:
        return Verdict.incorrect(details="nothing was submitted")

    def judge(self, reply: str, task: Task) -> Outcome:
        return Outcome(
            feedback="The episode ended without a submission.",
            reward=0.0,
            terminated=True,
            verdict=self.verify(reply, task),
        )

    def grade(self, files: Mapping[str, bytes], task: Task, why: str = "Submitted.") -> Outcome:
        """Run the hidden tests over `files` (the episode's end)."""
        verdict = self.repo_verifier.grade(files, self.parse(task).tests)
        score = verdict.score if verdict.score is not None else 0.0
        headline = "The repository could not be graded (infrastructure error)."
        if not verdict.infra_error:
            headline = f"{why} {'Correct' if verdict.is_correct else 'Not fixed'}: score {score:g}."
        return Outcome(
            feedback=f"{headline}\n{verdict.details}".strip(),
            reward=score,
            terminated=True,
            verdict=verdict,
            rewards={"correctness": score},
            infra_error=verdict.infra_error,
        )

    def reference_reply(self, task: Task) -> str:
        raise NotImplementedError("fixing takes several steps: env.oracle_reply() gives the next")

    def close(self) -> None:
        self.repo_verifier.close()


class RepoSession(ToolUse):
    """The `ToolUse` interaction of a repository episode: its workspace, its tools bound to it,
    the turn and token limits (past either, the workspace is graded as it is), and the
    transcript in `info` at the end."""

    def __init__(
        self,
        shell: ShellSettings,
        limits: WorkspaceLimits,
        *,
        max_turns: int = DEFAULT_MAX_TURNS,
        max_submissions: int = 1,
        max_tokens: int | None = None,
        count_tokens: Callable[[str], int] = approximate_tokens,
        grading_timeout: float = 60.0,
    ) -> None:
        self.shell = shell
        self.limits = limits
        self.max_turns = checks.integer(max_turns, name="max_turns")
        self.max_submissions = checks.integer(max_submissions, name="max_submissions")
        self.submissions = 0
        self.max_tokens = max_tokens
        self.count_tokens = count_tokens
        self.grading_timeout = grading_timeout
        described = RepoTools(shell=shell, grading_timeout=grading_timeout).tools()
        super().__init__(
            described,
            final_instructions=FINAL_INSTRUCTIONS,
            tool_timeout=shell.timeout,
            max_result_chars=12_000,
            oracle=reference_fix_oracle,
        )
        self.workspace: Workspace | None = None
        self.tokens = 0

    def episode_tools(self, env: TextEnv, task: Task) -> Sequence[Any]:
        judge = env.judge
        assert isinstance(judge, RepoJudge)
        self.workspace = Workspace(judge.parse(task).files, limits=self.limits)
        self.submissions = 0
        tools = RepoTools(
            self.workspace,
            executor=judge.repo_verifier.executor,
            grade=lambda files: self._submitted(judge.grade(files, task)),
            shell=self.shell,
            grading_timeout=self.grading_timeout,
        )
        return tools.tools()

    def start(self, env: TextEnv, task: Task) -> Start:
        start = super().start(env, task)
        system = self.system_prompt(env.judge) or ""
        self.tokens = self.count_tokens(system) + self.count_tokens(start.prompt)
        return start

    def end_episode(self) -> None:
        self.workspace = None

    def answer(self, env: TextEnv, reply: str) -> Outcome:
        outcome = self.run(reply, lambda final: Interaction.answer(self, env, final))
        if not outcome.terminated:
            self.tokens += self.count_tokens(reply) + self.count_tokens(outcome.feedback)
            why = self._limit_reached(env)
            if why:
                outcome = self._graded_at_limit(env, outcome, why)
        if outcome.terminated:
            outcome.info = {**outcome.info, "transcript": [dict(call) for call in self.calls]}
        return outcome

    def _submitted(self, graded: Outcome) -> Outcome:
        """A submission's outcome; a failed one with submissions left lets the episode go on,
        told only that the hidden tests still fail (details would let it probe them)."""
        self.submissions += 1
        left = self.max_submissions - self.submissions
        failed = not graded.infra_error and graded.verdict is not None
        if left <= 0 or not failed or graded.verdict.is_correct:  # type: ignore[union-attr]
            return graded
        plural = "" if left == 1 else "s"
        return Outcome(
            feedback=f"Submitted: the hidden tests still fail. {left} submission{plural} left.",
            reward=0.0,
            terminated=False,
            role="tool",
            info={"submissions": self.submissions},
        )

    def _limit_reached(self, env: TextEnv) -> str:
        if env.turn + 1 >= self.max_turns:
            return f"The turn limit ({self.max_turns} replies) is reached."
        if self.max_tokens is not None and self.tokens > self.max_tokens:
            return f"The token limit ({self.max_tokens}) is reached."
        return ""

    def _graded_at_limit(self, env: TextEnv, outcome: Outcome, why: str) -> Outcome:
        judge, workspace = env.judge, self.workspace
        assert isinstance(judge, RepoJudge) and workspace is not None and env.task is not None
        graded = judge.grade(dict(workspace.files), env.task, why=f"{why} Graded as it is.")
        graded.feedback = f"{outcome.feedback}\n\n{graded.feedback}"
        graded.role = "tool"
        graded.info = {**outcome.info, **graded.info}
        return graded


def reference_fix_oracle(session: ToolUse, env: TextEnv) -> str:
    """A scripted fixer from the reference fix: run the tests, read the file the fix changes,
    apply the fix, run the tests again, submit (what demonstrations for a warm start show)."""
    judge, task = env.judge, env.task
    assert isinstance(judge, RepoJudge) and task is not None
    fix = judge.parse(task).fix
    if fix is None:
        raise RuntimeError(f"task {task.id!r} has no reference fix to act as the oracle")
    names = [call["name"] for call in session.calls]
    if "run_tests" not in names:
        return format_tool_call("run_tests")
    if "read_file" not in names:
        return format_tool_call("read_file", path=first_patched_path(fix))
    if not session.called("apply_patch", patch=fix):
        return format_tool_call("apply_patch", patch=fix)
    if names.count("run_tests") < 2:
        return format_tool_call("run_tests")
    return format_tool_call("submit")


def first_patched_path(fix: str) -> str:
    for line in fix.split("\n"):
        if line.startswith("+++ ") and line[4:].strip() != "/dev/null":
            path = line[4:].split("\t")[0].strip()
            return path[2:] if path.startswith("b/") else path
    return ""
