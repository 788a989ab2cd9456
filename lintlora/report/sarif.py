"""``--format sarif``: SARIF 2.1.0 for GitHub code scanning and SARIF viewers.

Follows the OASIS SARIF 2.1.0 standard (schema:
https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json,
copied to ``tests/sarif-schema-2.1.0.json`` and validated in the tests):

- ``tool.driver.rules``: every loaded rule with ``id``, ``name``, ``shortDescription`` (the
  summary), ``fullDescription`` (the rule's docstring), ``helpUri`` (the rule's page) and
  ``defaultConfiguration.level``;
- one ``result`` per finding: ``ruleId``/``ruleIndex``, ``level`` (error, warning, note),
  the message with the memory line and fix, a physical location relative to ``%SRCROOT%``
  (the working directory), and the memory estimate in ``properties.estimate``;
- notebook findings point at the ``.ipynb`` file line holding the cell's source line (so a
  viewer of the file lands on the code) and carry ``properties.cell``/``properties.cellLine``;
- files that could not be linted are ``toolExecutionNotifications``; an internal error makes
  ``executionSuccessful`` false.

Names in the log come from the pull request: ``artifactLocation.uri`` is the path's own bytes
percent-encoded (:func:`lintlora.report.escape.sarif_uri`), so a name that is not UTF-8 is a
valid URI reference too; message texts have unprintable characters shown and literal brackets
escaped (:func:`~lintlora.report.escape.for_sarif_text`); everything else (properties, the
estimate) is exact, as in the JSON output, and the document is strict JSON
(:func:`~lintlora.report.escape.json_dumps`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TextIO

from lintlora import __version__
from lintlora.findings import FileError, Finding, Severity
from lintlora.report import memory_line, rule_metadata
from lintlora.report.escape import for_sarif_text, json_dumps, sarif_uri
from lintlora.report.locations import display_path, file_line

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.engine import RunResult

__all__ = ["render", "to_sarif", "SARIF_SCHEMA_URI", "INFORMATION_URI"]

SARIF_SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://github.com/lintlora/lintlora"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _uri(path: str) -> str:
    return sarif_uri(display_path(path))


def _rules(result: "RunResult") -> list[dict[str, Any]]:
    metas = {}
    for rule in result.rules:
        meta = rule_metadata(rule)
        if meta["code"]:
            metas.setdefault(meta["code"], meta)
    # codes seen in findings but not registered (a plugin emitting another code, the engine's
    # own LL000/LL900 when the registry lacks them) still get a descriptor
    for finding in result.findings:
        if finding.code not in metas:
            metas[finding.code] = {"code": finding.code, "name": finding.name,
                                   "severity": finding.severity.value, "summary": finding.name,
                                   "description": finding.name, "help_uri": None}
    descriptors = []
    for code in sorted(metas):
        meta = metas[code]
        descriptor: dict[str, Any] = {
            "id": code,
            "shortDescription": {"text": meta["summary"] or meta["name"] or code},
            "fullDescription": {"text": meta["description"] or meta["summary"] or code},
            "defaultConfiguration": {"level": _LEVEL.get(Severity(meta["severity"]), "warning")
                                     if meta["severity"] in ("error", "warning", "info")
                                     else "warning"},
        }
        if meta["name"]:
            descriptor["name"] = meta["name"]
        if meta["help_uri"]:
            descriptor["helpUri"] = meta["help_uri"]
            descriptor["help"] = {"text": f"See {meta['help_uri']}",
                                  "markdown": f"[{code} {meta['name']}]({meta['help_uri']})"}
        descriptors.append(descriptor)
    return descriptors


def _message(finding: Finding) -> str:
    parts = []
    if finding.span.cell is not None:
        parts.append(f"cell {finding.span.cell}, line {finding.span.line}: "
                     f"{for_sarif_text(finding.message)}")
    else:
        parts.append(for_sarif_text(finding.message))
    memory = memory_line(finding.estimate)
    if memory:
        parts.append(for_sarif_text(memory))
    if finding.fix:
        parts.append(f"Fix: {for_sarif_text(finding.fix)}")
    return "\n".join(parts)


def _region(finding: Finding, cell_lines: dict | None) -> dict[str, Any]:
    span = finding.span
    if span.cell is not None:
        start = file_line(cell_lines, span.cell, span.line)
        end = file_line(cell_lines, span.cell, span.last_line)
        return {"startLine": start, "endLine": max(start, end)}
    region = {"startLine": max(span.line, 1), "startColumn": max(span.column, 1)}
    end_line = span.end_line if span.end_line is not None else span.line
    region["endLine"] = max(end_line, region["startLine"])
    if span.end_column is not None and span.end_column >= 1:
        if region["endLine"] > region["startLine"] or span.end_column > region["startColumn"]:
            region["endColumn"] = span.end_column
    return region


def _fixes(finding: Finding, result: Any) -> list[dict[str, Any]]:
    """SARIF 2.1.0 §3.55 ``fix`` objects: the autofix's edits as ``artifactChanges``, one per
    file, each edit a ``replacement`` of a ``deletedRegion`` (start line and column, end line
    and column, columns in characters, end exclusive; an insertion is an empty region) by
    ``insertedContent``; the safety in ``properties.safety``."""
    if finding.autofix is None:
        return []
    from lintlora.report.fixes import fix_edits

    edits = fix_edits(result, finding)
    if not edits:
        return []
    changes: dict[str, list] = {}
    for edit in edits:
        region: dict[str, Any] = {"startLine": edit.line, "startColumn": edit.column,
                                  "endLine": edit.end_line, "endColumn": edit.end_column}
        changes.setdefault(edit.path, []).append(
            {"deletedRegion": region, "insertedContent": {"text": edit.new_text}})
    return [{
        "description": {"text": for_sarif_text(finding.autofix.title)},
        "artifactChanges": [{"artifactLocation": {"uri": _uri(path), "uriBaseId": "%SRCROOT%"},
                             "replacements": replacements}
                            for path, replacements in changes.items()],
        "properties": {"safety": finding.autofix.safety.value},
    }]


def _result(finding: Finding, index: dict[str, int], cell_lines: dict | None,
            result: Any = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "ruleId": finding.code,
        "level": _LEVEL[finding.severity],
        "message": {"text": _message(finding)},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": _uri(finding.span.path), "uriBaseId": "%SRCROOT%"},
                "region": _region(finding, cell_lines),
            },
        }],
    }
    if finding.related:  # SARIF 2.1.0 §3.27.22 relatedLocations: the launch of the run
        item["relatedLocations"] = [{
            "id": number,
            "physicalLocation": {
                "artifactLocation": {"uri": _uri(r.span.path), "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": max(r.span.line, 1),
                           "startColumn": max(r.span.column, 1)},
            },
            "message": {"text": for_sarif_text(r.message)},
        } for number, r in enumerate(finding.related)]
    fixes = _fixes(finding, result)
    if fixes:
        item["fixes"] = fixes
    if finding.code in index:
        item["ruleIndex"] = index[finding.code]
    properties: dict[str, Any] = {"name": finding.name, "severity": finding.severity.value}
    if finding.estimate is not None:
        properties["estimate"] = finding.estimate.to_json()
    if finding.fix:
        properties["fix"] = finding.fix
    if finding.rests_on:
        properties["restsOn"] = list(finding.rests_on)
    if finding.span.cell is not None:
        properties["cell"] = finding.span.cell
        properties["cellLine"] = finding.span.line
    item["properties"] = properties
    return item


def _notification(error: FileError, level: str = "error") -> dict[str, Any]:
    """A ``toolExecutionNotification``: ``level`` ``"error"`` for a file that could not be
    (fully) linted, ``"note"`` for a notice (SARIF 2.1.0 §3.58.6: notification levels)."""
    item: dict[str, Any] = {
        "level": level,
        "message": {"text": f"{for_sarif_text(error.code)}: {for_sarif_text(error.message)}"},
        "descriptor": {"id": error.code},
    }
    if error.path:
        location: dict[str, Any] = {"artifactLocation": {"uri": _uri(error.path),
                                                          "uriBaseId": "%SRCROOT%"}}
        if error.line:
            location["region"] = {"startLine": error.line}
        item["locations"] = [{"physicalLocation": location}]
    return item


def to_sarif(result: "RunResult") -> dict[str, Any]:
    """The SARIF log as a dict."""
    rules = _rules(result)
    index = {rule["id"]: i for i, rule in enumerate(rules)}
    root = os.getcwd().replace(os.sep, "/")
    root_uri = "file://" + sarif_uri(root if root.startswith("/") else "/" + root) + "/"
    run: dict[str, Any] = {
        "tool": {"driver": {
            "name": "lintlora",
            "version": __version__,
            "semanticVersion": __version__,
            "informationUri": INFORMATION_URI,
            "rules": rules,
        }},
        "originalUriBaseIds": {"%SRCROOT%": {"uri": root_uri}},
        "results": [_result(f, index, result.cell_lines.get(f.span.path), result)
                    for f in result.findings],
        "invocations": [{
            "executionSuccessful": not result.internal_error,
            "toolExecutionNotifications": [_notification(e) for e in result.errors]
                                          + [_notification(n, "note") for n in result.notices],
        }],
        "columnKind": "unicodeCodePoints",
    }
    return {"$schema": SARIF_SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(result: "RunResult", out: TextIO, **_: object) -> None:
    """Write the SARIF log and a newline."""
    out.write(json_dumps(to_sarif(result)) + "\n")
