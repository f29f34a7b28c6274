"""Experiments: what to run (points) and how to compare it with the paper (analyse)."""

import re
from dataclasses import dataclass, field
from typing import Callable, List, Optional


# A ratio ours / paper inside this band reproduces the paper's number.
BAND = (0.8, 1.25)
VERDICTS = ["reproduced", "right direction, size off", "size off", "contradicted", "no result",
            "calibration input"]


@dataclass
class Cmp:
    """One claim of the paper beside our measurement, with its verdict.

    ``source`` says where the paper states the value (a table cell, a quoted sentence,
    or a figure point with the axis it was read against; ``plot`` marks the last).
    A quantitative claim has ``paper``; ``claim`` gives its direction when the value
    is a ratio of two things the paper compares (``">"``: the first wins, ``"<"``: it
    loses, ``"="``: they match). A qualitative claim has no paper value: ``check``
    states the criterion it is judged by and ``passed`` whether our run meets it.
    ``calibration`` marks an input taken from the paper (shown, never scored).
    ``why`` explains any verdict but "reproduced", specific to the row.
    """

    ref: str
    metric: str
    paper: Optional[float]
    ours: Optional[float]
    unit: str = ""
    plot: bool = False
    why: str = ""
    source: str = ""
    claim: str = ""
    check: str = ""
    passed: Optional[bool] = None
    calibration: bool = False

    @property
    def ratio(self):
        if self.paper in (None, 0) or self.ours is None:
            return None
        return self.ours / self.paper

    @property
    def verdict(self):
        """The stated rule (see ``VERDICT_RULE`` in the report)."""
        if self.calibration:
            return "calibration input"
        if self.check:
            if self.passed is None:
                return "no result"
            return "reproduced" if self.passed else "contradicted"
        r = self.ratio
        if r is None:
            return "no result"
        if BAND[0] <= r <= BAND[1]:
            return "reproduced"
        if self.claim in (">", "<"):
            won = self.ours > 1 if self.claim == ">" else self.ours < 1
            return "right direction, size off" if won else "contradicted"
        if self.claim == "=":
            return "contradicted"
        return "size off"


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
_GAPS = {}


def not_attempted(seed, what, why):
    """Records an experiment of seed ``seed`` ("000") that is not run, and why not."""
    _GAPS.setdefault(seed, []).append((what, why))


def gaps():
    """What each seed has that no experiment runs: {seed: [(what, why)]}."""
    from . import seeds  # noqa: F401  (registers them)
    return {k: list(v) for k, v in sorted(_GAPS.items())}


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
