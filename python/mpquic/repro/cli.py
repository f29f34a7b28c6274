"""Command line: ``python -m mpquic.repro [--list] [--all | NAME ...] [options]``."""

import argparse
import os
import pathlib
import sys
import time

from . import report
from .registry import experiments, gaps
from .runner import run_points


def repo_root():
    """The repository this package was built from (it holds traces/), else the cwd."""
    here = pathlib.Path(__file__).resolve()
    for p in here.parents:
        if (p / "traces").is_dir() and (p / "Cargo.toml").is_file():
            return p
    return pathlib.Path.cwd()


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        # One line and exit 2, never a usage dump or a traceback.
        sys.stderr.write(f"mpquic-repro: {message}\n")
        sys.exit(2)


def _parser():
    p = _Parser(prog="mpquic-repro",
                description="Reproduce the seed papers' experiments in the simulator.")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="experiments to run (see --list); a prefix such as 000 or 002-video runs all that match")
    p.add_argument("--list", action="store_true", help="list the experiments and exit")
    p.add_argument("--all", action="store_true", help="run every experiment")
    p.add_argument("--out", metavar="DIR",
                   help="results directory: CSVs, figures, sections (default: repro/ of the "
                        "repository; with --quick: ./repro-quick)")
    p.add_argument("--report", metavar="FILE",
                   help="markdown report to (re)write (default: REPRODUCTION.md beside the "
                        "default repro/, else DIR/REPRODUCTION.md)")
    p.add_argument("--quick", action="store_true", help="short runs (for CI)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="local processes (default: all cores)")
    p.add_argument("--ray", nargs="?", const="", metavar="ADDRESS",
                   help="run on a Ray cluster (ADDRESS, default: RAY_ADDRESS or a local one)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def _select(p, args, all_exps):
    if args.all:
        return all_exps
    if not args.names:
        p.error("name an experiment, or give --all or --list")
    chosen = []
    for n in args.names:
        match = [e for e in all_exps if e.name == n] or \
                [e for e in all_exps if e.name.startswith(n)]
        if not match:
            p.error(f"unknown experiment {n!r} (see --list)")
        chosen += [e for e in match if e not in chosen]
    return chosen


def _paths(args):
    root = repo_root()
    if args.out:
        out = pathlib.Path(args.out)
        rep = pathlib.Path(args.report) if args.report else out / "REPRODUCTION.md"
    elif args.quick:
        out = pathlib.Path("repro-quick")
        rep = pathlib.Path(args.report) if args.report else out / "REPRODUCTION.md"
    else:
        out = root / "repro"
        rep = pathlib.Path(args.report) if args.report else root / "REPRODUCTION.md"
    return out, rep


def _start_ray(address):
    try:
        import ray
    except ImportError:
        sys.stderr.write("mpquic-repro: --ray needs the 'ray' package (pip install ray)\n")
        sys.exit(2)
    ray.init(address=address or None, log_to_driver=False)
    return ray


def run_experiment(exp, out, rep, quick, backend, workers, progress):
    t0 = time.monotonic()
    df = run_points(exp.points(quick), backend=backend, workers=workers,
                    progress=progress, desc=exp.name)
    seconds = time.monotonic() - t0
    df.drop(columns=[c for c in df.columns if c.startswith("_")]).to_csv(
        out / f"{exp.name}.csv", index=False)
    outcome = exp.analyse(df, out, quick)
    text = report.section(exp, outcome, len(df), seconds, quick, report.fig_prefix(out, rep))
    report.write_section(out, exp, text)
    report.claims_frame(outcome.cmps).to_csv(out / f"{exp.name}.claims.csv", index=False)
    return df, outcome, seconds


def main(argv=None):
    p = _parser()
    args = p.parse_args(argv)
    all_exps = experiments()
    if args.list:
        for e in all_exps:
            print(f"{e.name:<22} {e.description}")
        return 0
    if args.workers is not None and args.workers < 1:
        p.error("--workers must be at least 1")
    chosen = _select(p, args, all_exps)
    out, rep = _paths(args)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        p.error(f"cannot create --out {out}: {e.strerror}")
    backend = "local"
    ray = None
    if args.ray is not None:
        ray = _start_ray(args.ray)
        backend = "ray"
    total = time.monotonic()
    try:
        for exp in chosen:
            _, _, secs = run_experiment(exp, out, rep, args.quick, backend, args.workers,
                                        not args.no_progress)
            print(f"{exp.name}: {secs:.1f} s")
    finally:
        if ray is not None:
            ray.shutdown()
    report.assemble(out, rep, [e.name for e in all_exps], gaps())
    print(f"total {time.monotonic() - total:.1f} s; report: {rep}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
