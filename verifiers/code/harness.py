"""The unit-test harness that runs inside the sandbox, and the value codec shared with the host.

Standard library only and Python 3.8+: this file is sent into the sandbox as source, and the host
imports `encode_value`, `decode_value` and `canonical` from it.

Two processes run in the sandbox for every submission:

- the **runner** (this file, started by the executor) holds the tests. It is not dumpable, so the
  solution's process cannot read its memory or its file descriptors, and it alone writes the
  report to stdout;
- the **solution server** loads the submitted code and answers calls `entry_point(*args)` sent
  over a socket pair, returning each value as plain data (`encode_value`). Its stdout goes to
  stderr, so nothing it prints can reach the report.

Whatever the solution does to its own interpreter (exit early, patch builtins, return objects
whose `__eq__` is always True, print "PASSED"), all that leaves its process is plain data of exact
builtin types, and the comparison happens elsewhere: on the host for `cases` tests (their
expected values never enter the sandbox), or in the runner for `check`/`asserts` test code. For
test code the server is a fresh interpreter (`exec`), not a fork of the runner, so no byte of
the tests is in its memory; the tests reach the runner through stdin, never through a file.

Report (stdout, one JSON object): `{"load_error": str|None, "results": [...]}` in `cases` mode
(each result `{"value": encoded}` or `{"error": name, "names": [...], "message": str}` or
`{"timeout": true}` or `{"crash": str}`), `{"load_error": ..., "tests": [{"passed": bool,
"error": str}]}` otherwise, or `{"load_error": None, "tests_broken": str}` when the test code itself
cannot be loaded (a module the sandbox lacks, a syntax error). Test code is loaded before the
solution's process starts, so that nothing the solution does can make it fail to load.

In `repo` mode (the hidden tests of `rlvr/Repo-v0`, see `rlvr.verifiers.repo`) the solution is a
repository under `spec["root"]`: each hidden test is a list of calls `{"target": "pkg.mod:func",
"args", "kwargs"}`, run in a server forked for that test alone, and the report is
`{"load_error": None, "groups": [[result, ...], ...]}` with results as in `cases` mode.

`replays.py` reuses this runner to replay a solution's calls under other conditions (a fresh
interpreter with another hash seed, another order, another clock).

Why one module of ~720 lines (the project keeps modules under ~600): it is sent into the
sandbox as the source of one program, which can import nothing of rlvr.
"""

import base64
import builtins
import collections
import contextlib
import json
import math
import os
import select
import socket
import struct
import sys
import time

SOLUTION_FILE = "solution.py"
HARNESS_FILE = "_rlvr_harness.py"
# What the executor runs: this file, written next to the solution (the server re-executes it).
BOOTSTRAP = (
    f"with open({HARNESS_FILE!r}, encoding='utf-8') as _f:\n"
    f"    exec(compile(_f.read(), {HARNESS_FILE!r}, 'exec'), {{'__name__': '__main__'}})\n"
)
MAX_MESSAGE = 16 << 20
MAX_DEPTH = 100
# Python refuses to print or parse ints of more than 4300 decimal digits (sys.int_info); bigger
# ones travel in hex, which has no such limit.
BIG_INT_BITS = 10_000
# The standard library's dicts that equal a plain dict with the same items (`Counter(a=1) ==
# {"a": 1}`), which real solutions return (MBPP's gold for `freq_element`): sent as that dict,
# read with `dict.items` so that no method of the object runs.
DICT_LIKE = (collections.Counter, collections.OrderedDict, collections.defaultdict)

# --- plain data ---------------------------------------------------------------------------------


class NotPlainData(TypeError):
    """A value that is not made only of exact builtin types (None, bool, int, float, complex, str,
    bytes, list, tuple, dict, set, frozenset)."""


def encode_value(value, depth=0):
    """A JSON-compatible form of `value` that records exact types; rejects anything else.

    Lists are JSON arrays, dicts with str keys not starting with "$" are JSON objects; tuples,
    sets, frozensets, bytes, other dicts, non-finite floats and ints of more than BIG_INT_BITS
    bits are one-key objects (`{"$tuple": [...]}`, `{"$int": "0x..."}`). Subclasses of the
    builtin types are rejected, but for `DICT_LIKE` ones, which are sent as plain dicts.
    """
    if depth > MAX_DEPTH:
        raise NotPlainData("the value is nested too deeply")
    kind = type(value)
    if kind is int and value.bit_length() > BIG_INT_BITS:
        return {"$int": hex(value)}
    if value is None or kind is bool or kind is int or kind is str:
        return value
    if kind is float:
        if math.isfinite(value):
            return value
        return {"$float": "nan" if value != value else ("inf" if value > 0 else "-inf")}
    if kind is list:
        return [encode_value(item, depth + 1) for item in value]
    if kind is complex:  # MBPP's polar_rect returns one
        return {"$complex": [encode_value(value.real), encode_value(value.imag)]}
    if kind is tuple:
        return {"$tuple": [encode_value(item, depth + 1) for item in value]}
    if kind is set or kind is frozenset:
        items = [encode_value(item, depth + 1) for item in value]
        items.sort(key=lambda item: json.dumps(item, sort_keys=True))
        return {"$" + kind.__name__: items}
    if kind is bytes:
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if kind is dict or kind in DICT_LIKE:
        items = list(dict.items(value))
        if all(type(key) is str and not key.startswith("$") for key, _ in items):
            return {key: encode_value(item, depth + 1) for key, item in items}
        return {
            "$dict": [
                [encode_value(key, depth + 1), encode_value(item, depth + 1)] for key, item in items
            ]
        }
    raise NotPlainData(
        f"a value of type {kind.__name__} is not plain data (use None, bool, int, float, complex, "
        "str, bytes, list, tuple, dict, set or frozenset, not subclasses)"
    )


_TAGS = ("$float", "$int", "$complex", "$tuple", "$set", "$frozenset", "$bytes", "$dict")


def decode_value(data, depth=0):
    """Inverse of `encode_value` for data parsed from JSON; raises ValueError on anything else."""
    if depth > MAX_DEPTH:
        raise ValueError("value nested too deeply")
    kind = type(data)
    if data is None or kind is bool or kind is int or kind is str:
        return data
    if kind is float:
        return data
    if kind is list:
        return [decode_value(item, depth + 1) for item in data]
    if kind is not dict:
        raise ValueError(f"not a JSON value: {kind.__name__}")
    if len(data) == 1:
        ((tag, body),) = data.items()
        if tag in _TAGS:
            return _decode_tagged(tag, body, depth)
        if tag.startswith("$"):
            raise ValueError(f"unknown tag {tag!r}")
    if any(key.startswith("$") for key in data):
        raise ValueError("keys starting with '$' are reserved for type tags")
    return {key: decode_value(item, depth + 1) for key, item in data.items()}


def _decode_tagged(tag, body, depth):
    if tag == "$float":
        if body not in ("nan", "inf", "-inf"):
            raise ValueError(f"bad $float {body!r}")
        return float(body)
    if tag == "$int":
        if type(body) is not str:
            raise ValueError("$int needs hex text")
        return int(body, 16)
    if tag == "$bytes":
        if type(body) is not str:
            raise ValueError("$bytes needs base64 text")
        return base64.b64decode(body.encode("ascii"), validate=True)
    if type(body) is not list:
        raise ValueError(f"{tag} needs a list")
    if tag == "$complex":
        parts = [decode_value(part, depth + 1) for part in body]
        if len(parts) != 2 or any(type(part) is not float for part in parts):
            raise ValueError("$complex needs [real, imag] floats")
        return complex(*parts)
    if tag == "$dict":
        pairs = []
        for pair in body:
            if type(pair) is not list or len(pair) != 2:
                raise ValueError("$dict needs [key, value] pairs")
            pairs.append((decode_value(pair[0], depth + 1), decode_value(pair[1], depth + 1)))
        try:
            return dict(pairs)
        except TypeError:
            raise ValueError("unhashable dict key") from None
    items = [decode_value(item, depth + 1) for item in body]
    try:
        return {"$tuple": tuple, "$set": set, "$frozenset": frozenset}[tag](items)
    except TypeError:
        raise ValueError("unhashable set element") from None


def canonical(value):
    """A hashable form of a plain value that is equal only for values of the same exact types.

    `1 == 1.0 == True` in Python; `canonical` keeps them apart, and makes NaN equal to NaN.
    """
    kind = type(value)
    if kind is float:
        return ("float", "nan") if value != value else ("float", value)
    if kind is list or kind is tuple:
        return (kind.__name__, tuple(canonical(item) for item in value))
    if kind is set or kind is frozenset:
        return (kind.__name__, frozenset(canonical(item) for item in value))
    if kind is dict:
        return ("dict", frozenset((canonical(k), canonical(v)) for k, v in value.items()))
    return (kind.__name__, value)


# --- messages over the socket pair ---------------------------------------------------------------


def send_message(sock, payload):
    data = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    sock.sendall(struct.pack(">I", len(data)) + data)


def builtin_exception_class(names):
    """The most derived builtin exception class of a raised exception, from `names` (the builtin
    classes of its MRO, most derived first, as `serve` reports them), or None.

    None unless `names` is exactly that class's own chain: an exception deriving from several
    builtin exceptions at once (a KeyError that is also a ValueError and a TypeError) would
    otherwise match any expected exception.
    """
    if type(names) is not list or not names or type(names[0]) is not str:
        return None
    cls = getattr(builtins, names[0], None)
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        return None
    chain = [base.__name__ for base in cls.__mro__ if base.__module__ == "builtins"]
    return cls if names == chain else None


class ChannelClosed(Exception):
    pass


def receive_message(sock, timeout=None):
    """The next message, or raise ChannelClosed / TimeoutError / ValueError (bad message)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    head = _receive_exact(sock, 4, deadline)
    (size,) = struct.unpack(">I", head)
    if size > MAX_MESSAGE:
        raise ValueError(f"message of {size} bytes is too large")
    data = _receive_exact(sock, size, deadline)
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:  # nested too deeply to be a value we would accept
        raise ValueError("message nested too deeply") from None


def _receive_exact(sock, size, deadline):
    chunks, remaining = [], size
    while remaining:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                raise TimeoutError
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise ChannelClosed
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


# --- the solution server (untrusted once the solution is loaded) --------------------------------


def serve(fd, entry_point, preamble):
    sock = socket.socket(fileno=fd)
    namespace = {"__name__": "solution", "__file__": SOLUTION_FILE, "__builtins__": builtins}
    try:
        with open(SOLUTION_FILE, encoding="utf-8") as handle:
            code = handle.read()
        if preamble:
            exec(compile(preamble, "<preamble>", "exec"), namespace)
        exec(compile(code, SOLUTION_FILE, "exec"), namespace)
        function = namespace.get(entry_point)
        if not callable(function):
            raise NameError(f"the code does not define a function named {entry_point!r}")
    except BaseException as exc:
        _flush()
        send_message(sock, {"load_error": describe_exception(exc)})
        return
    _flush()
    send_message(sock, {"ready": True})
    while True:
        try:
            message = receive_message(sock)
        except ChannelClosed:
            return
        args = decode_value(message["args"])
        kwargs = decode_value(message["kwargs"])
        try:
            result = {"value": encode_value(function(*args, **kwargs))}
        except NotPlainData as exc:  # not an exception the code raised: matches no expected one
            result = {"error": "NotPlainData", "names": [], "message": str(exc)}
        except BaseException as exc:
            names = [cls.__name__ for cls in type(exc).__mro__ if cls.__module__ == "builtins"]
            result = {"error": type(exc).__name__, "names": names, "message": str(exc)[:500]}
        _flush()  # the process may be killed right after this call: keep what it printed
        send_message(sock, result)


def serve_repo(fd, root):
    """The server of `repo` mode: imports the repository's modules (from `root`, put first on
    the import path) as the calls name them, and answers `{"target": "pkg.mod:func", "args",
    "kwargs"}` like `serve`. Untrusted from the first import on."""
    import importlib

    sock = socket.socket(fileno=fd)
    sys.path.insert(0, os.path.abspath(root))
    os.chdir(root)  # as when a repository's own tests run: from its root
    functions = {}
    send_message(sock, {"ready": True})
    while True:
        try:
            message = receive_message(sock)
        except ChannelClosed:
            return
        target = message["target"]
        try:
            if target not in functions:
                module, _, name = target.partition(":")
                function = importlib.import_module(module)
                for part in name.split("."):
                    function = getattr(function, part)
                functions[target] = function
            value = functions[target](
                *decode_value(message["args"]), **decode_value(message["kwargs"])
            )
            result = {"value": encode_value(value)}
        except NotPlainData as exc:
            result = {"error": "NotPlainData", "names": [], "message": str(exc)}
        except BaseException as exc:
            names = [cls.__name__ for cls in type(exc).__mro__ if cls.__module__ == "builtins"]
            result = {"error": type(exc).__name__, "names": names, "message": str(exc)[:500]}
        _flush()
        send_message(sock, result)


def _flush():
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()


def describe_exception(exc):
    import traceback

    lines = traceback.format_exception_only(type(exc), exc)
    text = "".join(lines).strip()
    return text[-2000:]


# --- the runner (trusted: never runs solution code) ----------------------------------------------


class Aborted(BaseException):
    """The solution timed out or its process died during a call (not catchable as Exception)."""


class SolutionError(RuntimeError):
    """The solution raised an exception that is not a builtin Exception (e.g. SystemExit)."""


class Server:
    """One solution-server process, and calls into it."""

    def __init__(self, spec):
        self.spec = spec
        self.pid = None
        self.sock = None
        self.broken = None
        self.calls = []

    def start(self):
        ours, theirs = socket.socketpair()
        if self.spec["mode"] in ("cases", "repo") and not self.spec.get("fresh"):
            self.pid = os.fork()
            if self.pid == 0:  # nothing secret in our memory in cases mode: fork is enough
                try:
                    os.dup2(2, 1)
                    keep = theirs.fileno()
                    for fd in _open_fds():
                        if fd > 2 and fd != keep:
                            with contextlib.suppress(OSError):
                                os.close(fd)
                    if self.spec["mode"] == "repo":
                        serve_repo(keep, self.spec["root"])
                    else:
                        serve(keep, self.spec["entry_point"], self.spec.get("preamble", ""))
                finally:
                    os._exit(0)
        else:  # test code is in our memory (or a replay asks for one): a fresh interpreter
            argv = [
                sys.executable,
                "-S",
                "-s",
                "-B",
                os.path.abspath(HARNESS_FILE),
                "--serve",
                "3",
                self.spec["entry_point"],
            ]
            env = dict(os.environ, RLVR_PREAMBLE=self.spec.get("preamble", ""))
            if self.spec.get("hash_seed") is not None:
                env["PYTHONHASHSEED"] = str(self.spec["hash_seed"])
            self.pid = os.posix_spawn(
                sys.executable,
                argv,
                env,
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, 2, 1),
                    (os.POSIX_SPAWN_DUP2, theirs.fileno(), 3),
                ],
            )
        theirs.close()
        self.sock = ours
        try:
            hello = receive_message(ours, self.spec.get("load_timeout", 10.0))
        except (TimeoutError, ChannelClosed, ValueError):
            self.stop("the solution's process did not start")
            return "the code did not finish loading"
        if "load_error" in hello:
            self.stop(None)
            return str(hello["load_error"])
        return None

    def call(self, args, kwargs, target=None):
        """Call the solution (in `repo` mode, the function `target` names); returns a reply
        dict (`value` / `error`) or raises Aborted."""
        if self.broken:
            raise Aborted(self.broken)
        if self.sock is None:  # test code calling it while it loads, before the solution does
            raise Aborted("the test code calls the solution before the solution is loaded")
        payload = {"args": encode_value(list(args)), "kwargs": encode_value(dict(kwargs))}
        if target is not None:
            payload["target"] = target
        self.calls.append(payload)
        try:
            send_message(self.sock, payload)
            return receive_message(self.sock, self.spec.get("test_timeout", 5.0))
        except TimeoutError:
            self.stop("timed out after {:g}s".format(self.spec.get("test_timeout", 5.0)))
        except (ChannelClosed, OSError):
            self.stop("the solution's process exited during the call")
        except ValueError:
            self.stop("the solution sent an invalid reply")
        raise Aborted(self.broken)

    def stop(self, reason):
        self.broken = reason or "stopped"
        if self.sock is not None:
            self.sock.close()
        if self.pid is not None:
            with contextlib.suppress(OSError):
                os.kill(self.pid, 9)
            with contextlib.suppress(OSError):
                os.waitpid(self.pid, 0)
        self.pid = None


def _open_fds():
    try:
        return [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return list(range(3, 1024))


# Raised into test code, these would end a `map` or a `for` loop early instead of failing it.
_NOT_REBUILT = (StopIteration, StopAsyncIteration)


def rebuild_exception(reply):
    """The solution's exception as a fresh instance of its most derived builtin class (a
    `class MyError(KeyError)` is caught by `except KeyError`), which test code can catch."""
    name, message = str(reply.get("error")), str(reply.get("message", ""))
    cls = builtin_exception_class(reply.get("names"))
    exc = None
    if cls is not None and issubclass(cls, Exception) and not issubclass(cls, _NOT_REBUILT):
        with contextlib.suppress(TypeError):  # e.g. UnicodeDecodeError needs more arguments
            exc = cls(message)
    if exc is None:
        exc = SolutionError(f"{name}: {message}")
    exc.raised_by_solution = True
    return exc


def clean_reply(reply):
    """What the host gets of a server's reply: checked, bounded, and nothing else.

    The server is untrusted; its reply is relayed to the host in `cases` mode, so it must be
    exactly `{"value": v}` with `v` decodable, or `{"error", "names", "message"}` strings.
    """
    if type(reply) is dict and "value" in reply:
        try:
            decode_value(reply["value"])
        except (ValueError, TypeError, RecursionError):
            return {"crash": "the solution sent an invalid value"}
        return {"value": reply["value"]}
    if type(reply) is dict and "error" in reply:
        names = reply.get("names")
        return {
            "error": _short(reply["error"], 200),
            "names": names if builtin_exception_class(names) is not None else [],
            "message": _short(reply.get("message"), 500),
        }
    return {"crash": "the solution sent an invalid reply"}


def make_proxy(holder):
    def candidate(*args, **kwargs):
        reply = holder["server"].call(args, kwargs)
        if "value" in reply:
            try:
                return decode_value(reply["value"])
            except ValueError:
                holder["server"].stop("the solution sent an invalid value")
                raise Aborted("the solution sent an invalid value") from None
        raise rebuild_exception(reply)

    return candidate


def _short(text, limit):
    return text[:limit] if type(text) is str else ""


def run_cases(spec, holder):
    results = []
    for case in spec["cases"]:
        server = holder["server"]
        if server.broken:
            if spec.get("stop_on_failure") or not _restart(spec, holder):
                results.append({"crash": server.broken})
                continue
            server = holder["server"]
        try:
            reply = server.call(decode_value(case["args"]), decode_value(case.get("kwargs", {})))
        except Aborted as exc:
            timeout = "timed out" in str(exc)
            results.append({"timeout": True} if timeout else {"crash": str(exc)})
            continue
        results.append(clean_reply(reply))
    return {"results": results}


def run_repo_tests(spec):
    """`repo` mode: each hidden test's calls in a fresh server process, forked for that test
    alone, so that nothing one test's calls do to the interpreter reaches another's. Calls go
    out as their inputs only; the results come back as `clean_reply` data for the host to
    compare (the expected values never enter the sandbox)."""
    groups = []
    for test in spec["tests"]:
        server = Server(spec)
        started = server.start()
        results = []
        for call in test:
            if started is not None or server.broken:
                results.append({"crash": started or server.broken})
                continue
            try:
                reply = server.call(
                    decode_value(call["args"]), decode_value(call["kwargs"]), call["target"]
                )
            except Aborted as exc:
                results.append(
                    {"timeout": True} if "timed out" in str(exc) else {"crash": str(exc)}
                )
                continue
            results.append(clean_reply(reply))
        server.stop(None)
        groups.append(results)
    return {"groups": groups}


def load_tests(spec, holder):
    """Set up and compile the test code: `(tests, None)`, or `(None, why)` if it cannot load.

    Called before the solution's process starts: nothing of the solution has run yet, so a
    failure here (a module the sandbox lacks, test code that does not parse) is the task's
    own. Loaded later, it could be the solution's doing: its process can lower our resource
    limits (prlimit) so that importing a C extension fails.
    """
    namespace = {"__name__": "__tests__", "__builtins__": builtins}
    proxy = make_proxy(holder)
    namespace[spec["entry_point"]] = proxy
    namespace["candidate"] = proxy
    try:
        return _load_tests(spec, namespace, proxy), None
    except BaseException as exc:
        return None, describe_exception(exc) or type(exc).__name__


def run_tests(spec, holder, tests):
    outcomes = []
    for source, test in tests:
        broken = holder["server"].broken
        if broken and (spec.get("stop_on_failure") or not _restart(spec, holder)):
            outcomes.append({"passed": False, "test": source, "error": broken})
            continue
        server = holder["server"]
        del server.calls[:]
        by_tests = False  # an error of the test code itself, which may quote expected values
        try:
            test()
            passed, error = server.broken is None, server.broken
        except Aborted as exc:
            passed, error = False, str(exc)
        except BaseException as exc:
            passed, error = False, describe_exception(exc) or type(exc).__name__
            by_tests = not getattr(exc, "raised_by_solution", False)
        outcome = {"passed": bool(passed), "test": source[:500]}
        if not passed:
            outcome["error"] = (error or "failed")[:1000]
            outcome["by_tests"] = by_tests
            if server.calls:
                outcome["last_call"] = server.calls[-1]
        outcomes.append(outcome)
        if not passed and spec.get("stop_on_failure"):
            break
    return {"tests": outcomes}


def _load_tests(spec, namespace, proxy):
    if spec.get("setup"):
        exec(compile(spec["setup"], "<test setup>", "exec"), namespace)
        namespace[spec["entry_point"]] = proxy
    if spec["mode"] == "check":
        exec(compile(spec["check"], "<tests>", "exec"), namespace)
        checker = namespace.get("check")
        return [("check(candidate)", lambda: checker(proxy))]
    tests = []
    for index, source in enumerate(spec["asserts"]):
        code = compile(source, f"<test {index + 1}>", "exec")
        tests.append((source, lambda code=code: exec(code, namespace)))
    return tests


def _restart(spec, holder):
    if holder["restarts"] >= spec.get("max_restarts", 3):
        return False
    holder["restarts"] += 1
    server = Server(spec)
    if server.start() is not None:
        return False
    holder["server"] = server
    return True


def make_report(spec, holder):
    if spec["mode"] == "repo":
        return {"load_error": None, **run_repo_tests(spec)}
    tests = None
    if spec["mode"] != "cases":  # before any of the solution's code runs (see load_tests)
        tests, broken = load_tests(spec, holder)
        if broken is not None:
            return {"load_error": None, "tests_broken": broken}
    report = {"load_error": holder["server"].start()}
    if report["load_error"] is None:
        if tests is None:
            report.update(run_cases(spec, holder))
        else:
            report.update(run_tests(spec, holder, tests))
    return report


def set_not_dumpable():
    try:
        import ctypes

        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    except (OSError, AttributeError, ImportError):
        pass


def import_only_from_read_only_paths():
    """Drop the working directory (and any other writable place) from our import path.

    The solution can write files next to it; with the working directory on `sys.path`, a
    `copy.py` it leaves there would run inside this trusted process as soon as the test code
    says `import copy`, and could write a forged report.
    """
    cwd = os.path.realpath(os.getcwd())
    sys.path[:] = [
        path
        for path in sys.path
        if path not in ("", ".") and os.path.realpath(path) != cwd and not os.access(path, os.W_OK)
    ]
    sys.path_importer_cache.clear()


def run_once(spec):
    """The report of one run of the tests."""
    holder = {"server": Server(spec), "restarts": 0}
    report = make_report(spec, holder)
    holder["server"].stop(None)
    return report


def run(report=None):
    """Read the spec from stdin and write `report(spec)` (default: `run_once`) to stdout, with
    the runner's protections (read-only import path, not dumpable, the only report channel)."""
    import_only_from_read_only_paths()
    set_not_dumpable()
    report_fd = os.dup(1)  # only we hold the report channel; fd 1 becomes stderr for everyone
    os.dup2(2, 1)
    spec = json.loads(sys.stdin.read())
    sys.stdin.close()
    data = json.dumps((report or run_once)(spec), separators=(",", ":")).encode("utf-8")
    while data:
        data = data[os.write(report_fd, data) :]
    os.close(report_fd)


def main(argv):
    if len(argv) > 1 and argv[1] == "--serve":
        preamble = os.environ.pop("RLVR_PREAMBLE", "")
        serve(int(argv[2]), argv[3], preamble)
        return
    run()


if __name__ == "__main__":
    main(sys.argv)
