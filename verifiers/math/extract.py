"""Reading the final answer(s) out of a reply. Judging them is another module's job.

Where a final answer may stand:

1. `\\boxed{...}` / `\\fbox{...}` (nested braces, `\\boxed 5`) and `<answer>...</answer>` tags:
   every box and every tag counts (a tag holding a box counts once, through its box);
2. only if there is neither, a phrase: "the answer is X", "final answer: X", "Answer: X",
   "**Answer**: X", "#### X", or X on the line after a "**Final Answer**" heading.

Only text outside `<think>...</think>` is read; an unclosed `<think>` means the reply never left
its reasoning, so it has no answer. Invisible format characters (zero-width spaces, joiners,
direction marks) are dropped first, so that what is read is what a reader sees: `\\box`, a
zero-width space and `ed{4}` is a box. Every candidate is returned: the verifier requires them
all to agree, so a reply cannot hedge by stating several answers.

Everything here is a linear scan (no regex that can backtrack badly): a reply is adversarial text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
ANSWER_OPEN = "<answer>"
ANSWER_CLOSE = "</answer>"

_BOX_COMMAND = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
_PHRASE = re.compile(
    r"(?:\b(?:final\s+answer|answer)(?:\s+is\b\s*:?|\s*(?:\*+\s*)?:|\s*=)|####"
    # or a heading line ("**Final Answer**", "### Final Answer") with the answer below it
    r"|(?<![^\n])[ \t#*]*final\s+answer\**[ \t]*(?=\n))",
    re.IGNORECASE,
)
# Unicode format characters (category Cf) a renderer does not show: soft hyphen, zero-width
# space/joiners, direction marks and embeddings, word joiner, invisible operators, BOM.
_INVISIBLE = dict.fromkeys(
    [0xAD, 0x180E, *range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2060, 0x2070), 0xFEFF]
)
_SENTENCE_END = re.compile(r"\.(?=\s|$)")
# A phrase "answer" that is plain prose ("the answer is not obvious") is not a candidate.
_PROSE = re.compile(r"[A-Za-z][A-Za-z\s,'’-]*")


@dataclass(frozen=True)
class Extraction:
    """The final answers a reply states, in order of appearance.

    `source` is "boxed", "answer_tag", "phrase" or "none"; `problem` says why nothing was read.
    """

    candidates: tuple[str, ...]
    source: str
    problem: str = ""


def extract_answers(reply: str) -> Extraction:
    """Every final answer stated outside `<think>` blocks (see the module docstring)."""
    visible = outside_think(reply.translate(_INVISIBLE))
    if visible is None:
        return Extraction((), "none", "the reply opens <think> but never closes it")
    boxed = [content for content in find_boxed(visible) if content.strip()]
    tagged = []  # a tag without a box inside: its content (or the phrase in it) is an answer
    for content in find_tagged(visible, ANSWER_OPEN, ANSWER_CLOSE):
        if not _BOX_COMMAND.search(content):
            tagged.extend(find_phrase_answers(content) or [content.strip()])
    tagged = [answer for answer in tagged if answer]
    if boxed or tagged:
        # A box and a tag stating different answers are two final answers (a hedge).
        return Extraction(tuple(boxed + tagged), "boxed" if boxed else "answer_tag")
    stated = find_phrase_answers(visible)
    if stated:
        return Extraction(tuple(stated), "phrase")
    return Extraction(
        (), "none", "no final answer found; put it in \\boxed{} (or after 'The answer is')"
    )


def outside_think(reply: str) -> str | None:
    """The reply without its `<think>...</think>` blocks, or None if a `<think>` is unclosed.

    A `</think>` before any `<think>` closes a block the chat template opened in the prompt, so
    everything before it is reasoning too.
    """
    position = 0
    first_close = reply.find(THINK_CLOSE)
    first_open = reply.find(THINK_OPEN)
    if first_close != -1 and (first_open == -1 or first_close < first_open):
        position = first_close + len(THINK_CLOSE)
    parts = []
    while True:
        start = reply.find(THINK_OPEN, position)
        if start == -1:
            parts.append(reply[position:])
            return "".join(parts)
        parts.append(reply[position:start])
        end = reply.find(THINK_CLOSE, start + len(THINK_OPEN))
        if end == -1:
            return None
        position = end + len(THINK_CLOSE)


def find_boxed(text: str) -> list[str]:
    """Contents of the top-level `\\boxed{...}` / `\\fbox{...}` in `text`, in order.

    Braces nest and `\\{`/`\\}` are literal; an unbalanced box is skipped. `\\boxed 5` (no
    braces) boxes the next run of non-space characters, minus trailing punctuation.
    """
    contents: list[str] = []
    closers: dict[int, int] | None = None  # computed once, on the first braced box
    position = 0
    while True:
        match = _BOX_COMMAND.search(text, position)
        if match is None:
            return contents
        start = match.end()
        while start < len(text) and text[start] in " \t":
            start += 1
        if start < len(text) and text[start] == "{":
            if closers is None:
                closers = matching_braces(text)
            end = closers.get(start, -1)
            if end == -1:
                position = start + 1
                continue
            contents.append(text[start + 1 : end])
            position = end + 1
        else:
            end = start
            while end < len(text) and not text[end].isspace() and text[end] != "$":
                end += 1
            token = text[start:end].rstrip(".,;:!")
            if token:
                contents.append(token)
            position = max(end, match.end())


def matching_braces(text: str) -> dict[int, int]:
    """For each `{` in `text`, the index of the `}` closing it (-1 if none), in one pass.

    `\\{` and `\\}` are literal braces and do not count.
    """
    closers: dict[int, int] = {}
    open_positions: list[int] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == "{":
            open_positions.append(index)
        elif char == "}" and open_positions:
            closers[open_positions.pop()] = index
        index += 1
    for position in open_positions:
        closers[position] = -1
    return closers


def find_tagged(text: str, open_tag: str, close_tag: str) -> list[str]:
    """Contents of every closed `open_tag ... close_tag` pair (an unclosed tag is ignored)."""
    contents: list[str] = []
    position = 0
    while True:
        start = text.find(open_tag, position)
        if start == -1:
            return contents
        end = text.find(close_tag, start + len(open_tag))
        if end == -1:
            return contents
        contents.append(text[start + len(open_tag) : end])
        position = end + len(close_tag)


def find_phrase_answers(text: str) -> list[str]:
    """What follows each "the answer is" / "final answer:" / "####", up to the end of its
    sentence or math span. Pure prose after the phrase is not an answer."""
    answers = []
    matches = list(_PHRASE.finditer(text))
    for match, following in zip(matches, [*matches[1:], None]):
        if following is not None and _only_words(text[match.end() : following.start()]):
            continue  # "Final Answer: The final answer is $18$": the inner phrase states it
        answer = _answer_after(text, match.end())
        if answer and not _is_prose(answer):
            answers.append(answer)
    return answers


def _only_words(text: str) -> bool:
    """At most a few words and markup between two phrases ("The", "**", "#"), none of them a
    single letter (which may be a value: `e`, `x`)."""
    words = text.replace("*", " ").replace("#", " ").replace(":", " ").split()
    return len(text) <= 40 and all(
        word.isascii() and word.isalpha() and len(word) > 1 for word in words
    )


# Longer than any answer the verifier accepts (see screen.MAX_ANSWER_CHARS).
_PHRASE_WINDOW = 2000
_MATH_SPANS = (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"), ("$", "$"))


def _answer_after(text: str, start: int) -> str:
    window = text[start : start + _PHRASE_WINDOW]  # bounded, so many phrases stay linear
    lines = window.split("\n")
    line = lines[0]
    if not line.strip(" \t*:#"):  # "Final Answer:" ends its line: the answer is the next line
        line = next((later for later in lines[1:] if later.strip()), "")
    line = line.strip().lstrip("*").strip()
    for opener, closer in _MATH_SPANS:
        if line.startswith(opener):
            end = line.find(closer, len(opener))
            if end != -1:
                return line[len(opener) : end].strip()
            break
    sentence_end = _SENTENCE_END.search(line)
    if sentence_end is not None:
        line = line[: sentence_end.start()]
    return line.strip().strip("*").rstrip(".,;:!").strip()


def _is_prose(answer: str) -> bool:
    """Letters and spaces only, with a word of 3+ letters: "not obvious", "given below"."""
    if _PROSE.fullmatch(answer) is None:
        return False
    return any(len(word) >= 3 for word in re.split(r"[\s,'’-]+", answer))
