"""Run inside the sandbox (`ExecRequest(code=<this file>)`, the job as JSON on stdin): does each
candidate return something else than the reference on the calls the tests themselves make?

The tests are run once against the reference through a recorder, which keeps every call's
arguments; then each candidate and the reference are called with copies of them. A candidate
"differs" if some call returns a different value (floats within 1e-6 are the same) or raises a
different exception; one that never does is equivalent as far as the tests can see, and is not
a wrong answer the verifier could catch.

It runs a dataset's own reference and tests (any dataset: untrusted code) and our mutants of the
reference, so `rlvr.envs.code.audit.differences` runs it in the env's sandbox, and it keeps to
the standard library (the sandbox's Python is the system's, not our venv) plus the code
harness's value codec, sent beside it. Its job is plain data: the code as text and `cases`
arguments encoded by `encode_value`. Its one output is `{"calls": int, "verdicts": [str, ...]}`
on the original stdout; whatever the dataset's code prints goes to stderr. The host reads the
verdicts and nothing else.
"""

import copy
import json
import math
import os
import resource
import signal
import sys

from _rlvr_harness import decode_value

CALL_SECONDS = 2.0
RECORD_SECONDS = 30.0


class _Timeout(Exception):
    pass


def _alarm(*_):
    raise _Timeout()


def _load(code, context):
    namespace = {"__name__": "solution"}
    exec(context, namespace)
    exec(code, namespace)
    return namespace


def _call(function, args, kwargs):
    signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS)
    try:
        return ("value", function(*copy.deepcopy(args), **copy.deepcopy(kwargs)))
    except _Timeout:
        return ("timeout", None)
    except BaseException as exc:
        return ("raise", type(exc).__name__)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            both_nan = math.isnan(a) and math.isnan(b)
            return both_nan or math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)
        return False
    if type(a) is not type(b):
        return False
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    try:
        return bool(a == b)
    except Exception:
        return False


def _recorded_calls(job, reference):
    if job["mode"] == "cases":
        return [(decode_value(c["args"]), decode_value(c["kwargs"])) for c in job["calls"]]
    calls = []

    def recorder(*args, **kwargs):
        calls.append(copy.deepcopy((args, kwargs)))
        return reference(*args, **kwargs)

    tests = {"__name__": "tests"}
    exec(job["context"], tests)
    signal.setitimer(signal.ITIMER_REAL, RECORD_SECONDS)
    try:
        if job["mode"] == "check":
            exec(job["check"], tests)
            tests["check"](recorder)
        else:
            tests[job["entry"]] = recorder
            for line in job["asserts"]:
                exec(line, tests)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return calls


def _verdict(job, calls, expected, candidate_code):
    try:
        candidate = _load(candidate_code, job["context"])[job["entry"]]
    except BaseException:
        return "error"
    for (args, kwargs), want in zip(calls, expected):
        got = _call(candidate, args, kwargs)
        if got[0] == "timeout":
            return "timeout"
        if got[0] != want[0] or not _same(got[1], want[1]):
            return "differs"
    return "same"


def main():
    report = os.dup(1)  # the verdicts' channel; fd 1 becomes stderr for the dataset's prints
    os.dup2(2, 1)
    job = json.loads(sys.stdin.read())
    # An allocation past this raises MemoryError in the call that made it (a "raise" outcome)
    # rather than the sandbox's memory limit ending every verdict at once.
    resource.setrlimit(resource.RLIMIT_AS, (job["memory"], job["memory"]))
    signal.signal(signal.SIGALRM, _alarm)
    reference = _load(job["reference"], job["context"])[job["entry"]]
    calls = _recorded_calls(job, reference)
    expected = [_call(reference, args, kwargs) for args, kwargs in calls]
    verdicts = [_verdict(job, calls, expected, code) for code in job["candidates"]]
    data = json.dumps({"calls": len(calls), "verdicts": verdicts}).encode("utf-8")
    while data:
        data = data[os.write(report, data) :]


if __name__ == "__main__":
    main()
