"""rlvr/Math-v0: the generator, the env contract, and the GSM8K/MATH loaders."""

from __future__ import annotations

import json
import re

import gymnasium as gym
import pytest

import rlvr
from rlvr.envs import DatasetError, EnvConfigError, check_env
from rlvr.envs.math import (
    FAMILIES,
    LEVELS,
    MathEnv,
    gsm8k_answer,
    load_gsm8k,
    load_math,
    math_answer,
    procedural_source,
)
from rlvr.verifiers import Status
from rlvr.verifiers.math import MathVerifier
from tests.conftest import require_extra

VERIFIER = MathVerifier(timeout=30.0)


def test_registered_and_passes_check_env():
    assert "rlvr/Math-v0" in rlvr.envs.rlvr_env_ids()
    check_env(gym.make("rlvr/Math-v0"))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_check_env_per_family(family):
    check_env(gym.make("rlvr/Math-v0", families=[family], difficulty=list(LEVELS)), seeds=(0,))


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("level", LEVELS)
def test_every_gold_scores_one(family, level):
    source = procedural_source(families=[family], difficulty=level)
    for index in range(12):
        task = source[index]
        assert task.metadata["family"] == family
        assert task.metadata["difficulty"] == level
        reply = f"Let me think.\n\nThe answer is \\boxed{{{task.answer}}}."
        verdict = VERIFIER.verify(reply, task)
        assert verdict.is_correct, (task, verdict)
        assert "." not in task.answer or re.fullmatch(r"-?\d+\.\d+", task.answer), task.answer


def test_the_question_copied_into_the_box_scores_zero():
    """The top levels have symbolic golds: equivalence alone would accept the unsolved task."""
    cubic = procedural_source(families=["polynomials"], difficulty=5)
    quadratic = procedural_source(families=["quadratic"], difficulty=5)
    for index in range(5):
        task = cubic[index]  # "... whose roots are -1, 2 and 3. Write it expanded."
        roots = re.search(r"roots are (-?\d+), (-?\d+) and (-?\d+)", task.prompt).groups()
        factored = "".join(f"(x - ({root}))" for root in roots)
        assert not VERIFIER.verify(f"\\boxed{{{factored}}}", task).is_correct, task
        task = quadratic[index]  # "Find all real solutions of x^2 - 2x - 1 = 0."
        equation = re.search(r"solutions of (.*)\.$", task.prompt).group(1)
        assert not VERIFIER.verify(f"\\boxed{{{equation}}}", task).is_correct, task


def test_easy_level_is_two_digit_addition():
    env = gym.make("rlvr/Math-v0", families=["arithmetic"], difficulty=1)
    for seed in range(50):
        prompt, _ = env.reset(seed=seed)
        match = re.fullmatch(
            r"What is (\d\d) \+ (\d\d)\?\nPut your final answer in \\boxed\{\}\.", prompt
        )
        assert match, prompt
        _, reward, terminated, _, info = env.step(f"\\boxed{{{int(match[1]) + int(match[2])}}}")
        assert reward == 1.0 and terminated
        assert info["verdict"]["status"] == "correct"


def test_a_wrong_answer_scores_zero_and_feedback_hides_the_gold():
    env = gym.make("rlvr/Math-v0", families=["arithmetic"], difficulty=1)
    env.reset(seed=3)
    gold = env.unwrapped.task.answer
    feedback, reward, _, _, info = env.step(f"\\boxed{{{int(gold) + 1}}}")
    assert reward == 0.0
    assert info["verdict"]["status"] == "incorrect"
    assert gold not in feedback


def test_items_are_reproducible_alone():
    first = procedural_source(seed=7)
    indices = [0, 1, 999, 123_456]
    expected = {i: first[i] for i in indices}
    for i in reversed(indices):  # a fresh source, asked in another order
        assert procedural_source(seed=7)[i] == expected[i]
    assert procedural_source(seed=8)[0] != expected[0]
    env = gym.make("rlvr/Math-v0")
    assert env.reset(seed=5) == env.reset(seed=5)


def test_splits_are_disjoint():
    train = procedural_source(split="train", families=["arithmetic", "linear"], difficulty=[1, 2])
    test = procedural_source(split="test", families=["arithmetic", "linear"], difficulty=[1, 2])
    train_prompts = {train[i].prompt for i in range(3000)}
    test_prompts = {test[i].prompt for i in range(2000)}
    assert len(test_prompts) > 1000  # the test split is not degenerate
    assert not train_prompts & test_prompts
    assert {test[i].metadata["split"] for i in range(10)} == {"test"}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_and_level_has_a_varied_test_split(family):
    """A tiny problem space would leave the held-out split empty or repetitive (and make the
    generator spin): each family x level must give varied problems in both splits."""
    for level in LEVELS:
        for split in ("train", "test"):
            source = procedural_source(families=[family], difficulty=level, split=split)
            prompts = {source[i].prompt for i in range(20)}
            assert len(prompts) >= 5, (family, level, split, prompts)


def test_families_and_difficulty_filter():
    source = procedural_source(families=["fractions", "quadratic"], difficulty=[2, 4])
    tasks = [source[i] for i in range(200)]
    assert {task.metadata["family"] for task in tasks} == {"fractions", "quadratic"}
    assert {task.metadata["difficulty"] for task in tasks} == {2, 4}
    single = procedural_source(families="number_theory", difficulty=3)
    assert single[0].metadata["family"] == "number_theory"


def test_answers_are_exact_never_floats():
    source = procedural_source()
    for i in range(500):
        answer = source[i].answer
        assert isinstance(answer, str)
        assert "e-" not in answer and "e+" not in answer
        assert not re.search(r"\d\.\d{3,}", answer), answer  # no float noise


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"families": ["calculus"]}, "families"),
        ({"families": []}, "families"),
        ({"difficulty": 6}, "difficulty"),
        ({"difficulty": [0, 1]}, "difficulty"),
        ({"split": "validation"}, "split"),
        ({"seed": -1}, "seed"),
        ({"timeout": 0}, "timeout"),
        ({"tasks": [{"prompt": "1+1?", "answer": "2"}], "difficulty": 2}, "difficulty"),
    ],
)
def test_bad_arguments_name_the_fix(kwargs, message):
    with pytest.raises(EnvConfigError, match=message):
        MathEnv(**kwargs)


def test_tasks_replace_the_generator():
    tasks = [
        {"prompt": "What is 6 * 7?", "answer": "42"},
        {"prompt": "Half of 1?", "answer": "1/2"},
    ]
    env = gym.make("rlvr/Math-v0", tasks=tasks)
    prompt, _ = env.reset(options={"task_index": 1})
    assert prompt.startswith("Half of 1?")
    assert env.step("\\boxed{0.5}")[1] == 1.0
    check_env(env, seeds=(0,))


def test_reference_reply_and_pinned_task():
    env = gym.make("rlvr/Math-v0")
    env.reset(options={"task": {"prompt": "What is 2 + 2?", "answer": "4"}})
    assert env.unwrapped.oracle_reply() == "The answer is \\boxed{4}."
    assert env.step(env.unwrapped.oracle_reply())[1] == 1.0


@pytest.mark.parametrize("answer", [None, 0.5, "", True])
def test_a_pinned_task_without_a_usable_gold_is_refused_at_reset(answer):
    # Accepted, it would make every reply an infrastructure error that trainers silently drop.
    env = gym.make("rlvr/Math-v0")
    with pytest.raises(EnvConfigError, match="options\\['task'\\].*gold answer"):
        env.reset(options={"task": {"prompt": "What is 2 + 2?", "answer": answer}})


@pytest.mark.parametrize("answer", [None, 0.5, "", "  ", True])
def test_tasks_without_a_usable_gold_are_refused_when_the_env_is_made(answer):
    # Accepted, every reply to that task would be an infrastructure error, dropped in training.
    tasks = [{"prompt": "What is 6 * 7?", "answer": "42"}, {"prompt": "Half?", "answer": answer}]
    with pytest.raises(EnvConfigError, match="tasks item 1 .*gold answer"):
        gym.make("rlvr/Math-v0", tasks=tasks)


def test_custom_prompt_and_system_prompt():
    env = gym.make(
        "rlvr/Math-v0",
        families=["arithmetic"],
        difficulty=1,
        system_prompt="You are a careful mathematician.",
        prompt_template="Problem: {prompt}",
    )
    prompt, info = env.reset(seed=0)
    assert prompt.startswith("Problem: What is")
    assert info["messages"][0] == {"role": "system", "content": "You are a careful mathematician."}


def test_vectorised_async_envs():
    envs = gym.make_vec(
        "rlvr/Math-v0", num_envs=2, vectorization_mode="async", families=["quadratic"], difficulty=5
    )
    try:
        envs.reset(seed=0)
        golds = envs.call("oracle_reply")
        _, rewards, terminated, _, _ = envs.step(list(golds))
        assert list(rewards) == [1.0, 1.0]
        assert all(terminated)
    finally:
        envs.close()


# --- loaders --------------------------------------------------------------------------------------

GSM8K_ROWS = [
    {"question": "Natalia sold 48 clips in April and half as many in May. How many in total?",
     "answer": "In May she sold 48/2 = 24 clips.\nIn total 48+24 = 72.\n#### 72"},
    {"question": "A company earns $1,200 a day. How much in 10 days?",
     "answer": "1,200 * 10 = 12,000\n#### 12,000"},
    {"question": "What is 3 - 5.5?", "answer": "#### -2.5"},
]  # fmt: skip

MATH_ROWS = [
    {"problem": "Simplify $\\sqrt{8}$.", "solution": "We have $\\sqrt{8} = \\boxed{2\\sqrt{2}}$.",
     "level": "Level 2", "type": "Algebra"},
    {"problem": "Solve $x^2 = 4$.", "solution": "Try \\boxed{2}... no: $x = \\boxed{\\{-2, 2\\}}$.",
     "level": "Level 1", "type": "Algebra"},
]  # fmt: skip


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_gsm8k_answer_parser():
    assert gsm8k_answer("work\n#### 72") == "72"
    assert gsm8k_answer("#### 1,234") == "1234"
    assert gsm8k_answer("#### $5.50") == "5.50"
    assert gsm8k_answer("#### -3") == "-3"
    for bad in ("no marker", "#### seventy", "####", 72):
        with pytest.raises(ValueError):
            gsm8k_answer(bad)


def test_math_answer_parser():
    assert math_answer("so $\\boxed{\\frac{1}{2}}$") == "\\frac{1}{2}"
    assert math_answer("\\boxed{1} then \\boxed{\\{1, 2\\}}") == "\\{1, 2\\}"
    with pytest.raises(ValueError):
        math_answer("no box here")


def test_load_gsm8k_jsonl_and_play(tmp_path):
    tasks = load_gsm8k(_write_jsonl(tmp_path / "gsm8k.jsonl", GSM8K_ROWS))
    assert [task.answer for task in tasks.tasks] == ["72", "12000", "-2.5"]
    assert tasks[0].metadata["family"] == "gsm8k"
    env = gym.make("rlvr/Math-v0", tasks=tasks)
    env.reset(options={"task_index": 1})
    assert env.step("So they earn \\boxed{12,000} dollars.")[1] == 1.0
    check_env(env, seeds=(0,))


def test_load_math_jsonl(tmp_path):
    tasks = load_math(_write_jsonl(tmp_path / "math.jsonl", MATH_ROWS))
    assert [task.answer for task in tasks.tasks] == ["2\\sqrt{2}", "\\{-2, 2\\}"]
    assert tasks[0].metadata["type"] == "Algebra"
    assert VERIFIER.verify("\\boxed{\\sqrt{8}}", tasks[0]).is_correct
    assert VERIFIER.verify("$x = \\pm 2$, so \\boxed{\\pm 2}", tasks[1]).is_correct


def test_a_malformed_file_names_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    lines = [json.dumps(GSM8K_ROWS[0]), json.dumps({"question": "?", "answer": "no marker"})]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.jsonl:2.*####"):
        load_gsm8k(path)
    path.write_text(json.dumps(GSM8K_ROWS[0]) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.jsonl:2"):
        load_gsm8k(path)
    path.write_text(json.dumps({"problem": "x?", "solution": "none"}) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.jsonl:1.*boxed"):
        load_math(path)


def test_fields_map_other_column_names(tmp_path):
    rows = [{"q": "What is 1 + 1?", "a": "#### 2"}]
    tasks = load_gsm8k(
        _write_jsonl(tmp_path / "x.jsonl", rows), fields={"prompt": "q", "answer": "a"}
    )
    assert tasks[0].prompt == "What is 1 + 1?" and tasks[0].answer == "2"


def test_load_from_a_saved_hf_dataset(tmp_path):
    datasets = require_extra("datasets", "datasets")
    folder = tmp_path / "gsm8k_saved"
    datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_list(GSM8K_ROWS),
            "test": datasets.Dataset.from_list(GSM8K_ROWS[:1]),
        }
    ).save_to_disk(str(folder))
    train = load_gsm8k(folder, split="train")
    test = load_gsm8k(folder, split="test")
    assert len(train) == 3 and len(test) == 1
    assert train[2].answer == "-2.5"
    math_folder = tmp_path / "math_saved"
    datasets.Dataset.from_list(MATH_ROWS).save_to_disk(str(math_folder))
    assert load_math(math_folder)[0].answer == "2\\sqrt{2}"


def hedges(options: list[str]) -> list[str]:
    """Replies that give every option at once, in the forms a policy could try."""
    listed = ", ".join(options)
    a, b, c = options
    return [
        f"\\boxed{{{listed}}}",
        " ".join(f"\\boxed{{{option}}}" for option in options),
        f"\\boxed{{\\{{{listed}\\}}}}",
        f"\\boxed{{({listed})}}",
        f"\\boxed{{[{listed}]}}",
        f"\\boxed{{{a} \\text{{ or }} {b} \\text{{ or }} {c}}}",
        f"\\boxed{{{a} \\lor {b} \\lor {c}}}",
        f"The answer is {a} or {b} or {c}",
    ]


def test_arithmetic_choice_offers_the_answer_among_three_and_only_when_named():
    source = procedural_source(families=["arithmetic_choice"], difficulty=list(LEVELS))
    for index in range(60):
        task = source[index]
        options = task.metadata["options"]
        assert len(set(options)) == 3 and task.answer in options
        assert task.prompt.endswith(f"Choose from {options[0]}, {options[1]} and {options[2]}.")
        for reply in hedges(options):
            assert VERIFIER.verify(reply, task).status == Status.INCORRECT, reply
    default = procedural_source(difficulty=1)
    assert "arithmetic_choice" not in {default[i].metadata["family"] for i in range(300)}


def test_arithmetic_choice_splits_by_question_not_by_option_order():
    """Options drawn in another order make another prompt: the question alone must decide."""

    def questions(split):
        source = procedural_source(families=["arithmetic_choice"], difficulty=1, split=split)
        return {source[i].prompt.split(" Choose")[0] for i in range(3000)}

    assert not questions("train") & questions("test")
