"""`rlvr/WikiQA-v0`: answer a multi-hop question by reading a generated encyclopedia website."""

from __future__ import annotations

import functools
from typing import Unpack

import numpy as np

from rlvr.envs.core import TextEnv
from rlvr.envs.judge import TaskJudge
from rlvr.envs.replies import last_answer_line, last_tagged
from rlvr.envs.tasks import Problem
from rlvr.envs.tools.env import ToolUse
from rlvr.envs.tools.parsing import format_tool_call
from rlvr.envs.web.base import WebOptions, WebSite, web_arguments, web_env_parts
from rlvr.envs.web.wiki import (
    DEFAULT_SIZE,
    Wiki,
    WikiApp,
    load_wiki,
    make_question,
    normalize_answer,
)
from rlvr.verifiers.types import Task, TaskFormatError, Verdict

PROMPT = "Question: {question}\nFind the answer on the encyclopedia website."
LEVELS = (1, 2, 3, 4)  # articles to read
FINAL_INSTRUCTIONS = (
    "When you know the answer, reply without any tool call, on a last line of the form "
    "'Answer: ...' (just the name, year or number)."
)


class WikiQAEnv(TextEnv):
    """Answer a question whose facts sit on different pages of a generated encyclopedia.

    ## Description
    An encyclopedia of `site_size` articles about an invented world (countries, cities, people,
    companies, all with made-up names, so nothing can be answered from memory) is served by a
    real HTTP server on loopback. Articles state facts and link to each other (a person's page
    links their birth city, a city's page its country and mayor, ...). A question chains
    `difficulty` articles, e.g. "In what year was the mayor of the capital of Fudyaklos born?"
    needs the pages of Fudyaklos, its capital and its mayor. Tools: `search`, `open_page`,
    `follow_link`, `find_in_page`.

    ## Action Space
    `TextSpace`: a reply with `<tool_call>{...}</tool_call>` blocks, or the final answer (a reply
    without a tool call; its last `<answer>...</answer>` is read, else its last `Answer: ...`
    line, else the whole reply).

    ## Observation Space
    `TextSpace`: the question; then pages as compact text with numbered links.

    ## Rewards
    1.0 when the answer matches the gold after normalisation (case, punctuation, articles,
    thousands separators), else 0. Tool turns earn 0.

    ## Starting State
    A question drawn with the env's generator; `options={"task_index": i}` pins one.

    ## Episode End
    Terminates on the final answer; truncated after `max_episode_steps` (20) replies; ends
    flagged `infra_error` if the site stops answering.

    ## Arguments
    `site_seed`, `site_size` (articles; default 1200), `split`, `difficulty` (articles to read,
    1-4, or a list), `seed` (of the question source), `server_url`, `max_page_chars`,
    `tool_timeout`, `render_mode`.

    ## Version History
    - v0: initial version.
    """

    argument_checks = web_arguments(LEVELS, min_site_size=40)

    def __init__(
        self,
        *,
        site_seed: int = 0,
        site_size: int = DEFAULT_SIZE,
        render_mode: str | None = None,
        **options: Unpack[WebOptions],
    ) -> None:
        self.wiki = load_wiki(site_seed, site_size)
        tasks, site = web_env_parts(
            WikiApp(self.wiki),
            functools.partial(question_problem, self.wiki),
            family="wikiqa",
            final_instructions=FINAL_INSTRUCTIONS,
            oracle=functools.partial(reading_path, self.wiki),
            **options,
        )
        super().__init__(WikiJudge(tasks, NormalizedMatchVerifier()), site, render_mode=render_mode)


class WikiJudge(TaskJudge):
    """Questions whose gold is a name, year or number, matched after normalisation."""

    def check(self, task: Task) -> None:
        answer = task.answer
        readable = isinstance(answer, (str, int)) and not isinstance(answer, bool)
        if not readable or not any(char.isalnum() for char in normalize_answer(str(answer))):
            raise TaskFormatError(
                f"task {task.id!r}: the answer must be a name, year or number (a str with "
                f"letters or digits, or an int), got {answer!r:.80}"
            )


def reading_path(wiki: Wiki, site: ToolUse, env: TextEnv) -> str:
    """The next step of the shortest reading path: search the first article, follow the links
    from article to article, then answer on the last one."""
    task = env.task
    assert isinstance(site, WebSite) and site.browser is not None and task is not None
    if not task.metadata.get("pages"):  # a pinned task of the user's: no path to replay
        return f"Answer: {task.answer}"
    urls = [wiki.by_slug[slug].url for slug in task.metadata["pages"]]
    page = site.browser.page
    here = urls.index(page.url) if page is not None and page.url in urls else -1
    if here == len(urls) - 1:
        return f"I found it on the page.\nAnswer: {task.answer}"
    for position in range(len(urls) - 1, here, -1):  # the furthest page linked from here
        number = site.browser.link_number(urls[position])
        if number is not None:
            return format_tool_call("follow_link", number=number)
    first = wiki.by_slug[task.metadata["pages"][0]].title
    if not site.called("search", query=first):
        return format_tool_call("search", query=first)
    return format_tool_call("open_page", url=urls[0])


class NormalizedMatchVerifier:
    """Reads the final answer (an `<answer>` tag, else the last `Answer:` line, else the whole
    reply) and compares it with the gold after `normalize_answer`."""

    def verify(self, response: str, task: Task) -> Verdict:
        answer = extract_answer(response)
        if not normalize_answer(answer):
            return Verdict.unparsable("the reply holds no answer")
        if normalize_answer(answer) == normalize_answer(str(task.answer)):
            return Verdict.correct(answer)
        return Verdict.incorrect(answer)


def extract_answer(response: str) -> str:
    tagged = last_tagged(response, "answer")
    if tagged is not None:
        return tagged.strip()
    line = last_answer_line(response)
    return line if line is not None else response.strip()


def question_problem(wiki: Wiki, rng: np.random.Generator, difficulty: int) -> Problem:
    question = make_question(wiki, rng, difficulty)
    return Problem(
        PROMPT.format(question=question.text),
        question.answer,
        {"family": "wikiqa", "pages": list(question.pages), "hops": len(question.pages)},
    )
