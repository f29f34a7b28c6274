"""Experiments: what to run (points) and how to compare it with the paper (analyse)."""

import re
from dataclasses import dataclass, field
from typing import Callable, List, Optional


@dataclass
class Cmp:
    """One number of the paper beside ours.

    ``why`` explains a gap over 20 % (shown only when there is one); ``plot``
    marks a value read off a figure rather than printed in a table.
    """

    ref: str
    metric: str
    paper: Optional[float]
    ours: Optional[float]
    unit: str = ""
    plot: bool = False
    why: str = ""

    @property
    def ratio(self):
        if self.paper in (None, 0) or self.ours is None:
            return None
        return self.ours / self.paper


@dataclass
class Outcome:
    """What an experiment's analysis produced: the comparison, figures, prose."""

    cmps: List[Cmp] = field(default_factory=list)
    figures: List[str] = field(default_factory=list)  # file names inside the out dir
    text: str = ""  # markdown: setup, extra tables, findings


@dataclass
class Experiment:
    name: str  # starts with the seed's number, e.g. "000-table1"
    description: str
    # points(quick) -> list of {"labels": {...}, "sim": simulate() kwargs, "series": bool}
    points: Callable[[bool], list]
    # analyse(df, out_dir, quick) -> Outcome
    analyse: Callable


_REGISTRY = {}


def register(exp):
    if exp.name in _REGISTRY:
        raise ValueError(f"duplicate experiment {exp.name}")
    _REGISTRY[exp.name] = exp
    return exp


def _natural(name):
    """Sort key putting 000-fig8 before 000-fig10."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def experiments():
    """All experiments, sorted by name (seed number first, numbers in numeric order)."""
    from . import seeds  # noqa: F401  (registers them)
    return [_REGISTRY[k] for k in sorted(_REGISTRY, key=_natural)]


def point(sim, series=False, **labels):
    """One run: ``sim`` are simulate() kwargs, ``labels`` name it in the table."""
    return {"labels": labels, "sim": sim, "series": series}
