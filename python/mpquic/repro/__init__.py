"""Reproductions of the seed papers' experiments: ``python -m mpquic.repro``.

* :func:`experiments` lists them (name starts with the seed's number).
* :func:`run` runs one and returns its results as a pandas DataFrame (one row per
  simulation) with the :class:`~mpquic.repro.registry.Outcome` of its analysis.
* :mod:`mpquic.repro.cli` is the command line (``--list``, ``--all``, ``--quick``,
  ``--workers``, ``--ray``, ``--out``).
"""

from .registry import Cmp, Experiment, Outcome, experiments
from .runner import run_points


def find(name):
    for e in experiments():
        if e.name == name:
            return e
    raise KeyError(name)


def run(name, quick=False, backend="local", workers=None, out_dir=None, progress=False):
    """Runs experiment ``name``; returns ``(DataFrame, Outcome)``.

    Figures go to ``out_dir`` when given (else they are not drawn).
    """
    exp = find(name)
    df = run_points(exp.points(quick), backend=backend, workers=workers,
                    progress=progress, desc=name)
    outcome = exp.analyse(df, out_dir, quick) if out_dir is not None else None
    return df, outcome


__all__ = ["Cmp", "Experiment", "Outcome", "experiments", "find", "run", "run_points"]
