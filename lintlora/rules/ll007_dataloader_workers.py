"""LL007 dataloader-workers (page: ``rules/LL007.md``).

Flags ``num_workers`` / ``dataloader_num_workers`` above 8, or above the host's CPU count when
``--cpus``/``[tool.lintlora] cpus`` gives it (:func:`lintlora.facts.dataloader_workers`). Each
DataLoader worker is a separate process holding its own copy of the dataset object: with
fork, pages are shared only until Python touches their reference counts, so an in-memory dataset
ends up copied into most workers. Sources: OpenGVLab/InternVL#554 (a 30 GB in-memory JSON
dataset exhausted 115 GB of host RAM as soon as num_workers > 1), hiyouga/LlamaFactory#9590,
PyTorch's DataLoader documentation ("CPU memory usage ... copy-on-access" for worker processes).

GPU memory does not depend on the worker count: the finding's "after" figure equals the
"before" one and the message says so. LLaMA-Factory's ``preprocessing_num_workers`` (dataset
``map`` processes) is not a DataLoader setting and is never mapped to workers.

Severity: info when only the fixed threshold of 8 is exceeded (the host is unknown); warning
when the count exceeds the CPU count given; info again when the count is a default the user
sets at launch (:func:`lintlora.facts.set_at_launch`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from lintlora import facts
from lintlora.findings import Finding, Fix, FixSafety, Severity
from lintlora.rules import _fixops as ops
from lintlora.rules.base import Rule
from lintlora.training_setup import Origin, TrainingSetup

if TYPE_CHECKING:  # pragma: no cover
    from lintlora.context import Context

__all__ = ["DataloaderWorkers", "DEFAULT_MAX_WORKERS"]

DEFAULT_MAX_WORKERS = 8
"""Worker count above which the rule reports when the host's CPU count is not given (a common
per-GPU core budget on cloud GPU hosts; BR26 in the project's failure reports)."""


FIX_LOWER = "lower the worker count to the limit"
"""The fix's title: the count is replaced, where it is written (the keyword's value, the
assignment, the option default, the config key), by the limit the rule applies (``--cpus``,
else :data:`DEFAULT_MAX_WORKERS`)."""


def _autofix(setup: TrainingSetup, use: facts.Use, limit: int) -> Fix | None:
    """The count replaced by ``limit`` where it is written; ``None`` for a value set at launch
    or computed by an expression."""
    setting = use.setting
    if setting is None:
        return None
    if setup.kind in ("yaml", "json"):
        if not setting.expr or setting.origin is not Origin.LITERAL:
            return None
        return ops.make_fix(FIX_LOWER, FixSafety.SAFE, [ops.yaml_set(setup, setting.expr, str(limit), setting)])
    return ops.make_fix(FIX_LOWER, FixSafety.SAFE, [ops.replace_value(setting, setup.path, str(limit))])


class DataloaderWorkers(Rule):
    """Too many DataLoader workers for the host's RAM and CPUs (see the module docstring)."""

    code = "LL007"
    name = "dataloader-workers"
    severity = Severity.INFO
    summary = "Many DataLoader workers each hold a copy of the dataset in host RAM"
    fix_changes_memory = False
    fixes = {FIX_LOWER: FixSafety.SAFE}

    def check(self, setup: TrainingSetup, context: "Context") -> Iterable[Finding]:
        if not setup.is_training:
            return
        cpus = context.settings.cpus
        limit = cpus if cpus else DEFAULT_MAX_WORKERS
        for use in facts.dataloader_workers(setup):
            n = use.setting.value if use.setting is not None else None
            if not isinstance(n, int) or n <= limit:
                continue
            if cpus:
                severity = Severity.WARNING
                bound = f"more than the {cpus} CPUs given"
            else:
                severity = Severity.INFO
                bound = (f"more than {DEFAULT_MAX_WORKERS} workers (the limit used when the host's CPU count "
                         "is not given with --cpus)")
            suggestion = min(limit, DEFAULT_MAX_WORKERS, max(1, n // 4))
            hint = facts.launch_hint(use.setting)
            at_launch = f" This count is a default chosen at launch: {hint}." if hint else ""
            if hint:
                severity = Severity.INFO
            yield self.finding(
                context, setup, use.span,
                f"{use.what} starts {n} worker processes, {bound}: each holds its own copy of the dataset "
                f"object in host RAM (copy-on-write pages are copied once Python touches them), so an "
                f"in-memory dataset can take up to {n + 1}x its size and exhaust host memory "
                "(InternVL#554: 115 GB of RAM gone with a 30 GB dataset). GPU memory is unchanged by "
                f"this setting: the estimate is the same with fewer workers.{at_launch}",
                fix=(f"Use fewer workers (e.g. {suggestion}; at most the CPU cores per GPU), and load the dataset "
                     "lazily or memory-mapped (datasets/Arrow, numpy memmap) so workers share its pages."),
                severity=severity,
                rests_on=((f"{use.what} ({use.setting.origin.value})",)
                          if use.setting is not None and use.setting.origin.is_default else ()),
                autofix=_autofix(setup, use, limit),
            )
