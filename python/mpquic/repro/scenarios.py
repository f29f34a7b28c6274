"""Scenario helpers: a committed scenario as a dict, cut down to some of its paths."""

import tomllib

from .._native import load_scenario


def as_dict(name):
    """The scenario file ``name`` of traces/ parsed into a simulate()-able dict."""
    with open(load_scenario(name)["file"], "rb") as f:
        return tomllib.load(f)


def only_paths(name, keep, suffix=None):
    """Scenario ``name`` with only the paths named in ``keep`` (e.g. one ISP)."""
    d = as_dict(name)
    d["path"] = [p for p in d["path"] if p["name"] in keep]
    d["name"] = f"{d['name']}-{suffix or '+'.join(keep)}"
    return d


def rate_events(name, path):
    """Events of a path's rate schedules: (start s, depth factor, kind) per event.

    A handover is written as a 0.05 floor followed by a partial recovery (tracegen);
    a signal drop as one cut recovering linearly.
    """
    d = as_dict(name)
    out = []
    for p in d["path"]:
        if p["name"] != path:
            continue
        for s in p.get("schedule", []):
            pts = s.get("points", [])
            if s.get("param") != "rate" or len(pts) < 3:
                continue
            kind = "handover" if len(pts) >= 5 else "signal drop"
            out.append((pts[0][0], min(v for _, v in pts), kind))
    return sorted(out)
