"""The published rates: one JSON file, keyed by env id, that the leaderboard page reads.

`rlvr audit ... --record FILE` merges the audit's summary (rates, dataset, size, the command
that measured them) into FILE; the repository's copy is `leaderboards/verifier_audit.json`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rlvr.core.jsonfiles import JSONReadError, read_json_file
from rlvr.envs.audit.report import AuditReport
from rlvr.envs.errors import EnvConfigError

RATES_FILE = Path(__file__).resolve().parents[2] / "leaderboards" / "verifier_audit.json"
"""Where the repository keeps its published rates (shipped as `rlvr.leaderboards` data)."""


def load_rates(path: str | Path | None = None) -> dict[str, list[dict[str, Any]]]:
    """Env id -> its audits (one per dataset); {} if the file does not exist. A file that is not
    one `record_rates` writes (not UTF-8 JSON, nested too deeply, another shape) is an
    `EnvConfigError` naming it."""
    file = Path(path) if path is not None else _installed_rates()
    if not file.is_file():
        return {}
    try:
        data = read_json_file(file)
    except JSONReadError as exc:
        raise EnvConfigError(f"{file}: {exc}") from None
    shaped = isinstance(data, dict) and all(
        isinstance(audits, list) and all(isinstance(audit, dict) for audit in audits)
        for audits in data.values()
    )
    if not shaped:
        raise EnvConfigError(
            f"{file}: not a rates file: expected a JSON object mapping each env id to a list of "
            "audits (as --record writes it); name another file"
        )
    return data


def _installed_rates() -> Path:
    from importlib import resources

    return Path(str(resources.files("rlvr.leaderboards") / "verifier_audit.json"))


def record_rates(report: AuditReport, command: str, path: str | Path) -> Path:
    """Merge `report`'s summary into the rates file at `path` (replacing the same env's audit on
    the same dataset); return the path."""
    file = Path(path)
    data = load_rates(file) if file.is_file() else {}
    entry = {**report.summary(), "command": command}
    audits = [a for a in data.get(report.env_id, []) if a.get("dataset") != report.dataset]
    data[report.env_id] = [*audits, entry]
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return file
