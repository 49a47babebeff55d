"""Replay a solution's calls under other conditions, inside the sandbox: the program of a replay
request (`rlvr.envs.multiagent.code_replays` sends it as the code to run, next to the harness).

It reuses the harness's runner, loaded from the harness file beside it: the same protections (a
read-only import path, not dumpable, the only report channel) and the same solution server, a
fork or a fresh interpreter answering calls with plain data. Standard library only, Python 3.8+,
like the harness. The report is `{"replays": [{"load_error": ..., "results": [...]}, ...]}`.
"""

import contextlib
import os

HARNESS_FILE = "_rlvr_harness.py"  # rlvr.verifiers.code.harness.HARNESS_FILE
# The harness's parts used here, bound by `main` once it has loaded the harness file.
Server = run_cases = canonical = decode_value = None


def main():
    global Server, run_cases, canonical, decode_value
    harness = {"__name__": "_rlvr_harness"}  # not "__main__": loading it runs nothing
    with open(HARNESS_FILE, encoding="utf-8") as handle:
        exec(compile(handle.read(), HARNESS_FILE, "exec"), harness)
    Server, run_cases = harness["Server"], harness["run_cases"]
    canonical, decode_value = harness["canonical"], harness["decode_value"]
    harness["run"](make_replays)


def make_replays(spec):
    """Call the solution on the cases once per replay of `spec["replays"]`, each a dict of:

    - `inputs`: the key of `spec` holding the calls (default "cases");
    - `order`: the order of the calls (indices; default as given), `isolate`: one process per
      call, `fresh`: a fresh interpreter instead of a fork of this one, `hash_seed`: its
      PYTHONHASHSEED, `clock_shift`: seconds the wall clock is moved ahead (`moved_clock`);
    - `report`: "values" (default) to get each result, "changes" to get, per call, "same" when
      it equals the first replay's result (exact types) and a short description otherwise.

    Every replay starts from the files the run started with under `spec["fresh_roots"]` (the
    sandbox's writable places): what one replay wrote, the next does not see. Replays stop at
    the first that timed out, crashed or changed a result: the rest could not make it pass.
    Comparing here keeps the report as small as one run's, however many replays there are.
    """
    roots = spec.get("fresh_roots") or []
    files = _snapshot(roots)
    replays, first = [], None
    for variant in spec["replays"]:
        _restore(roots, files)
        load_error, results = replay(spec, variant)
        if first is None:
            first = results
        if variant.get("report") == "changes" and results is not None and first is not None:
            results = [_change(was, now) for was, now in zip(first, results)]
        replays.append({"load_error": load_error, "results": results})
        if load_error is not None or _failed(variant, results):
            break
    return {"replays": replays}


def _failed(variant, results):
    """Did a result change, or (outside the neighbours) not come back as a value?"""
    if variant.get("report") == "changes":
        return any(result != "same" for result in results)
    if variant.get("inputs", "cases") != "cases":
        return False
    return any(type(result) is not dict or "value" not in result for result in results)


def _snapshot(roots):
    """The files under `roots` and their bytes, read before any of the solution runs."""
    files = {}
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                path = os.path.join(folder, name)
                with contextlib.suppress(OSError), open(path, "rb") as handle:
                    files[path] = handle.read()
    return files


def _restore(roots, files):
    """Put `roots` back as `_snapshot` found them (what cannot be removed stays)."""
    for root in roots:
        for folder, folders, names in os.walk(root, topdown=False):
            for name in names:
                path = os.path.join(folder, name)
                if path not in files:
                    with contextlib.suppress(OSError):
                        os.unlink(path)
            for name in folders:
                with contextlib.suppress(OSError):
                    os.rmdir(os.path.join(folder, name))  # only empty ones go
    for path, data in files.items():
        with contextlib.suppress(OSError):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as handle:
                handle.write(data)


def replay(spec, variant):
    """`(load_error, results)` of one replay, results in the order of its inputs."""
    cases = spec.get(variant.get("inputs", "cases")) or []
    order = variant.get("order") or list(range(len(cases)))
    server_spec = dict(
        spec,
        stop_on_failure=True,
        fresh=variant.get("fresh", False),
        hash_seed=variant.get("hash_seed"),
    )
    groups = [[index] for index in order] if variant.get("isolate") else [order]
    results = [None] * len(cases)
    for group in groups:
        holder = {"server": Server(server_spec), "restarts": 0}
        with moved_clock(variant.get("clock_shift")):  # the server, a fork, keeps the move
            load_error = holder["server"].start()
        if load_error is not None:
            return load_error, None
        ran = run_cases(dict(server_spec, cases=[cases[index] for index in group]), holder)
        holder["server"].stop(None)
        for index, result in zip(group, ran["results"]):
            results[index] = result
    return None, results


@contextlib.contextmanager
def moved_clock(shift):
    """The wall clock, as `time` and `datetime` tell it, moved `shift` seconds ahead in this
    process (and the processes it forks meanwhile); put back after. None: left alone."""
    if not shift:
        yield
        return
    import datetime
    import time as clock

    names = ("time", "time_ns", "clock_gettime", "clock_gettime_ns", "localtime", "gmtime")
    names += ("ctime", "asctime", "strftime")
    real = {name: getattr(clock, name) for name in names}
    real_datetime = datetime.datetime
    nanoseconds, realtime = int(shift * 1e9), clock.CLOCK_REALTIME

    def moved():
        return real["time"]() + shift

    class MovedDatetime(real_datetime):
        @classmethod
        def now(cls, tz=None):
            return cls.fromtimestamp(moved(), tz)

        @classmethod
        def today(cls):
            return cls.fromtimestamp(moved())

        @classmethod
        def utcnow(cls):
            utc = datetime.timezone.utc  # noqa: UP017 (datetime.UTC is 3.11+; this runs on 3.8)
            return cls.fromtimestamp(moved(), utc).replace(tzinfo=None)

    MovedDatetime.__name__ = MovedDatetime.__qualname__ = "datetime"
    local = real["localtime"]
    clock.time = moved
    clock.time_ns = lambda: real["time_ns"]() + nanoseconds
    clock.clock_gettime = lambda which: (
        real["clock_gettime"](which) + (shift if which == realtime else 0)
    )
    clock.clock_gettime_ns = lambda which: (
        real["clock_gettime_ns"](which) + (nanoseconds if which == realtime else 0)
    )
    clock.localtime = lambda secs=None: local(moved() if secs is None else secs)
    clock.gmtime = lambda secs=None: real["gmtime"](moved() if secs is None else secs)
    clock.ctime = lambda secs=None: real["ctime"](moved() if secs is None else secs)
    clock.asctime = lambda t=None: real["asctime"](local(moved()) if t is None else t)
    clock.strftime = lambda form, t=None: real["strftime"](form, local(moved()) if t is None else t)
    datetime.datetime = MovedDatetime  # date.today() reads time.time itself
    try:
        yield
    finally:
        for name, function in real.items():
            setattr(clock, name, function)
        datetime.datetime = real_datetime


def _change(was, now):
    if was == now:  # the same reply, error or timeout
        return "same"
    values = type(was) is dict and type(now) is dict and "value" in was and "value" in now
    if values and canonical(decode_value(was["value"])) == canonical(decode_value(now["value"])):
        return "same"
    described = {key: now[key] for key in ("error", "timeout", "crash") if key in now}
    return described or {"value": "another value"}


if __name__ == "__main__":
    main()
