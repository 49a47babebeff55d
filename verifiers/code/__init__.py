"""Unit-test verification of code replies (the verifier behind `rlvr/Code-v0`).

`UnitTestVerifier` extracts the code from a reply, runs it against a task's hidden tests in a
sandbox (`rlvr.sandboxes`) and returns a `Verdict`. A task's tests are described by `CodeTests`
(see `rlvr.verifiers.code.spec` for the JSON form stored in `Task.answer`).
"""

from rlvr.verifiers.code.extract import extract_code, fenced_blocks
from rlvr.verifiers.code.harness import NotPlainData, canonical, decode_value, encode_value
from rlvr.verifiers.code.spec import CallCase, CodeTests
from rlvr.verifiers.code.verifier import UnitTestConfig, UnitTestVerifier

__all__ = [
    "CallCase",
    "CodeTests",
    "NotPlainData",
    "UnitTestConfig",
    "UnitTestVerifier",
    "canonical",
    "decode_value",
    "encode_value",
    "extract_code",
    "fenced_blocks",
]
