"""Suite files: parsing, validation with clear errors, built-in suites, package data."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from rlvr.agents.policy import Completion
from rlvr.leaderboards import (
    Suite,
    SuiteError,
    builtin_suite_names,
    load_suite,
    parse_suite,
    run_suite,
)
from tests.leaderboards.leaderboard_support import ADD_ENV, SPLIT_ENV, TOY_SUITE, write_toy_suite

ENV = '[[envs]]\nid = "a/B-v0"\n'


def test_toy_suite_is_parsed_with_defaults_and_overrides(tmp_path: Path) -> None:
    suite = load_suite(write_toy_suite(tmp_path))
    assert suite.name == "toy"
    assert [(env.id, env.episodes, env.seed) for env in suite.envs] == [
        ("lbtest/Add-v0", 40, 11),
        ("lbtest/Yes-v0", 30, 11),
    ]
    assert all("split" not in env.kwargs for env in suite.envs)  # split = false
    assert suite.samples == 2 and suite.pass_at_k == (1, 2)
    assert suite.sampling.temperature == 1.0
    assert suite.bootstrap.resamples == 200 and suite.bootstrap.seed == 3
    suite.check_envs()


def test_round_trip_and_fingerprint(tmp_path: Path) -> None:
    suite = load_suite(write_toy_suite(tmp_path))
    again = Suite.from_dict(suite.to_dict())
    assert again.to_dict() == suite.to_dict()
    assert again.fingerprint() == suite.fingerprint()
    assert suite.with_episodes(5).fingerprint() != suite.fingerprint()
    reseeded = parse_suite(TOY_SUITE.replace("seed = 11", "seed = 12"))
    assert reseeded.fingerprint() != suite.fingerprint()


def test_split_goes_into_the_env_kwargs() -> None:
    suite = parse_suite(f'name = "s"\nsplit = "test"\n[[envs]]\nid = "{SPLIT_ENV}"\n')
    assert dict(suite.envs[0].kwargs) == {"split": "test"}
    suite.check_envs()


def test_env_without_a_split_argument_is_refused_with_the_fix() -> None:
    suite = parse_suite(f'name = "s"\n[[envs]]\nid = "{ADD_ENV}"\n')  # split defaults to "test"
    with pytest.raises(SuiteError, match=r"takes no argument \['split'\].*split = false"):
        suite.check_envs()


def test_unregistered_env_is_named_with_the_fix() -> None:
    suite = parse_suite('name = "s"\n[[envs]]\nid = "rlvr/NoSuchEnv-v3"\n')
    with pytest.raises(SuiteError) as info:
        suite.check_envs()
    message = str(info.value)
    assert "rlvr/NoSuchEnv-v3 is not registered" in message
    assert "imports" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('name = "s"\n[[envs]]\nid = "lbtest/Add"\n', "no version; pin one"),
        (
            'name = "s"\nepisodez = 3\n[[envs]]\nid = "a/B-v0"\n',
            "unknown key 'episodez' in the top level; SuiteFile accepts: name,",
        ),
        ('name = "s"\n', "has no envs"),
        ('[[envs]]\nid = "a/B-v0"\n', "needs 'name'"),
        ('name = "s"\nsamples = 2\npass_at_k = [4]\n[[envs]]\nid = "a/B-v0"\n', "pass_at_k"),
        (
            'name = "s"\nsamples = 4\n[sampling]\ntemperature = 0.0\n[[envs]]\nid = "a/B-v0"\n',
            "temperature > 0",
        ),
        ('name = "s"\n[sampling]\ntop_p = 2.0\n[[envs]]\nid = "a/B-v0"\n', "top_p"),
        ('name = "s"\n[[envs]]\nid = "a/B-v0"\n[[envs]]\nid = "a/B-v0"\n', "distinct label"),
        ('name = "s"\n[[envs]]\nid = "a/B-v0"\nepisodes = 0\n', "episodes must be >= 1"),
        ('name = "s"\n[[envs]]\nid = "a/B-v0"\nkwargs = {split = "x"}\n', "not in kwargs"),
        ('name = "s"\n[bootstrap]\nconfidence = 1.5\n[[envs]]\nid = "a/B-v0"\n', "confidence"),
        ("name = 's\n", "not valid TOML"),
        # Each of these used to pass silently, fail with a confusing message, or fail only after
        # the whole run had finished (the bootstrap seed is used when scoring).
        ('name = "s"\n[envs]\nid = "a/B-v0"\n', r"write \[\[envs\]\] \(double brackets\)"),
        ('name = "s"\ninclude = "math"\n' + ENV, "include: expected a list of"),
        ('name = "s"\nimports = "my_envs"\n' + ENV, "imports: expected a list of"),
        ('name = "s"\npass_at_k = 1\n' + ENV, "pass_at_k: expected a list of"),
        ('name = "s"\nsamples = true\n' + ENV, "samples: expected an integer, got True"),
        ('name = ""\n' + ENV, "name must not be empty"),
        ('name = "s"\n[[envs]]\nid = "a/B-v0"\nlabel = " "\n', "label must not be empty"),
        ('name = "s"\nseed = -1\n' + ENV, "seed must be >= 0"),
        ('name = "s"\n[bootstrap]\nseed = "x"\n' + ENV, "bootstrap.seed: expected an integer"),
        (
            'name = "s"\n[bootstrap]\nresamples = 1000000000\n' + ENV,
            r"bootstrap.resamples must be in \[10, 100000\]",
        ),
        (
            'name = "s"\n[sampling]\ntemperature = "hot"\n' + ENV,
            "sampling.temperature: expected a number, got 'hot'",
        ),
        ('name = "s"\n[sampling]\nstop = "</a>"\n' + ENV, "sampling.stop: expected a list of"),
        ('name = "s"\n[sampling]\nstop = [""]\n' + ENV, "non-empty strings"),
        (
            'name = "s"\nsamples = 4\npass_at_k = [4]\n[sampling]\nseed = 1\n' + ENV,
            "pass@k equals pass@1; remove sampling.seed",
        ),
    ],
)
def test_bad_suites_are_refused_with_a_clear_error(text: str, expected: str) -> None:
    with pytest.raises(SuiteError, match=expected):
        parse_suite(text, source="bad.toml")


def test_same_env_twice_with_labels() -> None:
    suite = parse_suite(
        'name = "s"\nsplit = false\n[[envs]]\nid = "lbtest/Add-v0"\n'
        '[[envs]]\nid = "lbtest/Add-v0"\nlabel = "add, other seed"\nseed = 5\n'
    )
    assert suite.labels == ["lbtest/Add-v0", "add, other seed"]


def test_include_merges_envs_and_detects_cycles(tmp_path: Path) -> None:
    write_toy_suite(tmp_path)
    (tmp_path / "big.toml").write_text(
        'name = "big"\ninclude = ["toy.toml"]\nsplit = false\n[[envs]]\nid = "lbtest/Add-v0"\n'
        'label = "again"\nepisodes = 3\n'
    )
    big = load_suite(tmp_path / "big.toml")
    assert big.labels == ["again", "lbtest/Add-v0", "lbtest/Yes-v0"]
    assert big.env("lbtest/Yes-v0").episodes == 30  # the included suite's settings stay
    assert big.samples == 1  # the including suite's global settings apply
    (tmp_path / "a.toml").write_text('name = "a"\ninclude = ["b.toml"]\n')
    (tmp_path / "b.toml").write_text('name = "b"\ninclude = ["a.toml"]\n')
    with pytest.raises(SuiteError, match="include cycle"):
        load_suite(tmp_path / "a.toml")
    # The same file spelled another way is still a cycle (it used to recurse until it crashed).
    (tmp_path / "sub").mkdir()
    (tmp_path / "self.toml").write_text('name = "s"\ninclude = ["sub/../self.toml"]\n' + ENV)
    with pytest.raises(SuiteError, match="include cycle"):
        load_suite(tmp_path / "self.toml")
    (tmp_path / "broken.toml").write_text('name = "b"\nsplit = [\n')
    (tmp_path / "uses.toml").write_text('name = "u"\ninclude = ["broken.toml"]\n' + ENV)
    with pytest.raises(SuiteError, match=r"include: .*broken.toml: not valid TOML"):
        load_suite(tmp_path / "uses.toml")


def test_env_kwargs_the_env_rejects_stop_the_run_before_it_starts() -> None:
    suite = parse_suite(
        f'name = "s"\nsplit = "test"\n[[envs]]\nid = "{ADD_ENV}"\nsplit = false\n'
        f'[[envs]]\nid = "{SPLIT_ENV}"\nkwargs = {{ difficulty = "hard" }}\n'
    )
    suite.check_envs()  # the argument names are fine: only making the env tells
    built = []
    with pytest.raises(SuiteError, match=r"difficulty = .hard.|'difficulty': 'hard'") as info:
        run_suite(suite, _RecordingPolicy(built))
    assert "fix them in the suite" in str(info.value)
    assert built == []  # refused before any episode of the first env ran


class _RecordingPolicy:
    def __init__(self, calls: list) -> None:
        self.calls = calls

    def generate(self, conversations, n=1, sampling=None):
        self.calls.append(len(conversations))
        return [[Completion("0") for _ in range(n)] for _ in conversations]


def test_builtin_suites_load_and_pin_versions() -> None:
    assert builtin_suite_names() == ["all", "code", "demo", "math", "repo", "sql", "web"]
    ids = {}
    for name in builtin_suite_names():
        suite = load_suite(name)
        assert suite.name == name and suite.description
        ids[name] = [env.id for env in suite.envs]
        assert all(env.kwargs.get("split") == "test" for env in suite.envs)
    assert ids["math"] == ["rlvr/Math-v0"]
    assert ids["code"] == ["rlvr/Code-v0"]
    assert ids["repo"] == ["rlvr/Repo-v0"]
    assert ids["demo"] == ["rlvr/Math-v0"]  # the main job's suite: easy held-out math
    assert set(ids["all"]) == {
        i for name in ("math", "sql", "code", "web", "repo") for i in ids[name]
    }
    assert load_suite("math").pass_at_k == (1, 4)


def test_unknown_builtin_suite_lists_the_choices() -> None:
    with pytest.raises(SuiteError, match=r"no built-in suite 'maths'.*'math'"):
        load_suite("maths")


@pytest.mark.slow
def test_wheel_ships_the_suite_files(built_wheel, repository) -> None:
    from rlvr.builtin_envs import FAMILIES
    from rlvr.families import family_suites

    names = set(zipfile.ZipFile(built_wheel.path).namelist())
    suites = family_suites()
    for suite in builtin_suite_names():
        where = f"envs/{suites[suite].parent.name}/suite.toml" if suite in suites else None
        assert f"rlvr/{where or f'leaderboards/suites/{suite}.toml'}" in names
    for folder in FAMILIES:  # the descriptors that find the envs, suites and audits
        assert f"rlvr/envs/{folder}/family.toml" in names
    suite_files = [name for name in repository.files if name.startswith("leaderboards/suites/")]
    assert "leaderboards/suites/arena/connect4.toml" in suite_files  # arena suites too
    for name in suite_files:
        assert f"rlvr/{name}" in names
    assert "rlvr/leaderboards/cli.py" in names


def test_leaderboards_import_no_torch() -> None:
    code = "import sys, rlvr.leaderboards, rlvr.leaderboards.cli; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# The fingerprint of each built-in suite when its file was last read by the old, hand-written
# schema code: the typed schema (`SuiteFile`, read by `rlvr.config.build`) must read every
# built-in suite to the same benchmark. A deliberate edit of a suite file updates its line.
BUILTIN_FINGERPRINTS = {
    "all": "ef836d8c9457a7cad131d20840c096e57a45b262f52e830f22bd00b498f113dc",
    "code": "a54c8ff6bdccbda4c1db8b5679bc94202ff70f55af96a9e391a95e38142bd8cc",
    "demo": "24f59a21b3cd6218cae6b3fb7f3f584f861faeb0ba3fc4ef904948cd5cf2b365",
    "math": "94eeb0dd811a56fbd58186d246262da648f1ad9185e7979f3220b7fc8c3dbdb0",
    "repo": "78324752a66102aaa6da920a95b88bebdc1c119ff3e7dfc6325e0ee365a11681",
    "sql": "d4456f0f6ac106563309792908aab2102e0e028cb4d80125c6ec37679306af5e",
    "web": "f06b735290fb13569739066748bc2d7a42b46364391d546b782f89df7e5121f6",
}


@pytest.mark.parametrize("name", sorted(BUILTIN_FINGERPRINTS))
def test_builtin_suites_read_to_the_same_benchmark(name: str) -> None:
    suite = load_suite(name)
    assert suite.fingerprint() == BUILTIN_FINGERPRINTS[name]
    assert Suite.from_dict(suite.to_dict(), suite.source) == suite  # a stored result's suite


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("top_p = 2.0", "sampling.top_p must be in (0, 1]"),
        ("stop = [1]", "sampling.stop[0]: expected a string, got 1"),
        ("temprature = 1.0", "unknown key 'temprature' in [sampling]; SamplingParams accepts:"),
    ],
)
def test_a_suite_and_a_command_refuse_bad_sampling_with_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str, message: str
) -> None:
    """`[sampling]` of a suite is `rlvr eval --config`'s sampling section: one type, one check."""
    from rlvr.cli import main

    with pytest.raises(SuiteError) as suite_error:
        parse_suite(f'name = "s"\n[sampling]\n{bad}\n{ENV}', source="s.toml")
    path = tmp_path / "eval.toml"
    path.write_text(f'env_id = "rlvr/Math-v0"\n[sampling]\n{bad}\n')
    assert main(["eval", "--config", str(path), "--print-config"]) == 1
    assert message in str(suite_error.value)
    assert message in capsys.readouterr().err


def test_a_single_envs_table_is_refused_naming_double_brackets() -> None:
    with pytest.raises(SuiteError, match=r"write \[\[envs\]\] \(double brackets\)"):
        parse_suite('name = "s"\n[envs]\nid = "a/B-v0"\n', source="bad.toml")


@pytest.mark.parametrize("pass_at_k", [(True,), (1.0,), (0,), ()])
def test_a_suite_made_in_python_refuses_what_a_file_cannot_say(pass_at_k) -> None:
    from rlvr.leaderboards.suites import SuiteEnv

    env = SuiteEnv("a/B-v0", "a", {}, seed=0, episodes=1)
    with pytest.raises(SuiteError, match="pass_at_k .* must be ints between 1 and samples=1"):
        Suite("s", "", (env,), pass_at_k=pass_at_k)


def test_a_stored_suite_without_a_description_still_reads() -> None:
    suite = load_suite("math")
    data = suite.to_dict()
    del data["description"]
    assert Suite.from_dict(data, suite.source) == replace(suite, description="")


def test_a_folder_named_like_a_builtin_suite_does_not_hide_it(tmp_path, monkeypatch) -> None:
    """A family's folder (`parity/`, CONTRIBUTING.md) in the working directory is no suite file:
    the name still finds the built-in suite."""
    (tmp_path / "math").mkdir()
    monkeypatch.chdir(tmp_path)
    assert load_suite("math").source == "builtin:math"
