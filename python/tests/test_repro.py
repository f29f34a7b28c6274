"""The reproduction harness: command line, one quick experiment, Ray = local."""

import pathlib
import subprocess
import sys

import pandas as pd
import pytest

from mpquic import repro
from mpquic.repro.cli import main


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "mpquic.repro", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=600)


def test_list_names_every_experiment_with_its_seed():
    r = _cli("--list")
    assert r.returncode == 0
    lines = r.stdout.strip().splitlines()
    names = [line.split()[0] for line in lines]
    assert {"000-table1", "000-fig11", "001-tables", "003-figs", "004-table2"} <= set(names)
    for line in lines:
        name, desc = line.split(maxsplit=1)
        assert name[:3].isdigit() and desc


@pytest.mark.parametrize("args, msg", [
    (["nope"], "unknown experiment"),
    (["--workers", "0", "000-fig11"], "--workers"),
    (["--workers", "x", "000-fig11"], "invalid int"),
    ([], "name an experiment"),
])
def test_bad_arguments_exit_2_with_one_line(args, msg):
    r = _cli(*args)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and msg in r.stderr
    assert "Traceback" not in r.stderr


def test_quick_experiment_writes_its_table_figures_and_report(tmp_path):
    assert main(["000-fig11", "--quick", "--out", str(tmp_path), "--no-progress"]) == 0
    csv = pd.read_csv(tmp_path / "000-fig11.csv")
    assert len(csv) == 9
    assert csv["error"].isna().all()
    assert (csv["goodput_bps"] > 1e6).all()
    report = (tmp_path / "REPRODUCTION.md").read_text()
    assert "## 000-fig11" in report and "| ref | claim | source | paper | ours | ratio | verdict | why |" in report
    assert "![000-fig11](000-fig11a.png)" in report
    assert (tmp_path / "000-fig11a.png").stat().st_size > 1000
    # Experiments not run are listed, not silently left out.
    assert "## Not run yet" in report and "004-table2" in report


def test_verdict_rule():
    C = repro.Cmp
    assert C("T", "x", 10.0, 11.0).verdict == "reproduced"
    assert C("T", "x", 10.0, 20.0).verdict == "size off"
    assert C("T", "x", 1.5, 3.0, claim=">").verdict == "right direction, size off"
    assert C("T", "x", 1.5, 0.7, claim=">").verdict == "contradicted"
    assert C("T", "x", 0.3, 0.1, claim="<").verdict == "right direction, size off"
    assert C("T", "x", 0.3, 1.2, claim="<").verdict == "contradicted"
    assert C("T", "x", 1.0, 0.5, claim="=").verdict == "contradicted"
    assert C("T", "x", None, 3.0, check="> 2", passed=True).verdict == "reproduced"
    assert C("T", "x", None, 1.0, check="> 2", passed=False).verdict == "contradicted"
    assert C("T", "x", 42.0, 30.0, calibration=True).verdict == "calibration input"
    assert C("T", "x", 42.0, None).verdict == "no result"


def test_table_explains_every_verdict_but_reproduced():
    from mpquic.repro.report import cmp_table
    t = cmp_table([repro.Cmp("T1", "x", 10.0, 15.0, source="Table 1"),
                   repro.Cmp("T1", "y", 10.0, 11.0, source="Table 1"),
                   repro.Cmp("T1", "z", 10.0, 20.0, why="a different testbed", source="Table 1"),
                   repro.Cmp("T1", "w", 10.0, 30.0, why="a different testbed", source="Table 1"),
                   repro.Cmp("T1", "v", 10.0, 30.0)])
    rows = t.splitlines()[2:7]
    assert "**not explained**" in rows[0] and rows[1].endswith("| reproduced |  |")
    assert "see note 1" in rows[2] and "see note 1" in rows[3]
    assert "1. a different testbed" in t
    assert "**no source**" in rows[4]


def _committed_claims():
    root = pathlib.Path(__file__).resolve().parents[2] / "repro"
    return sorted(root.glob("*.claims.csv"))


def test_every_committed_claim_has_a_source_and_its_verdict_follows_the_rule():
    """No paper value without the table cell, sentence or figure point it comes from."""
    files = _committed_claims()
    names = {f.name.removesuffix(".claims.csv") for f in files}
    assert {e.name for e in repro.experiments()} <= names, "regenerate: python -m mpquic.repro --all"
    for f in files:
        for _, r in pd.read_csv(f, keep_default_na=False).iterrows():
            where = f"{f.name}: {r['metric']}"
            assert r["source"].startswith(("Table", "text:", "Fig.")), where
            if r["plot"] in (True, "True"):
                assert "axis" in r["source"], where
            num = lambda v: None if v == "" else float(v)  # noqa: E731
            passed = {"True": True, "False": False}.get(str(r["passed"]))
            again = repro.Cmp(r["ref"], r["metric"], num(r["paper"]), num(r["ours"]), claim=r["claim"],
                              check=r["check"], passed=passed, calibration=r["calibration"] in (True, "True"))
            assert again.verdict == r["verdict"], where


def test_report_starts_with_the_rule_and_the_scoreboard():
    text = (pathlib.Path(__file__).resolve().parents[2] / "REPRODUCTION.md").read_text()
    head = text[:text.index("\n## 0")]
    assert "**Verdict rule.**" in head and "## Scoreboard" in head
    for seed in ("000", "001", "002", "003", "004"):
        assert f"| {seed} |" in head


def test_ray_gives_the_same_numbers_as_local_processes():
    ray = pytest.importorskip("ray")
    points = repro.find("000-fig11").points(True)[:4]
    local = repro.run_points(points, backend="local", workers=2, progress=False)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        remote = repro.run_points(points, backend="ray", progress=False)
    finally:
        ray.shutdown()
    cols = ["rtt", "sched", "goodput_bps", "ooo_mean", "ooo_max", "retrans_bytes",
            "short.throughput_bps", "long.throughput_bps"]
    pd.testing.assert_frame_equal(local[cols], remote[cols])
    assert local["goodput_bps"].nunique() > 1  # the points really differ


@pytest.mark.parametrize("name", ["000-table1", "001-tables", "002-video-A1", "003-figs", "004-table2"])
def test_quick_run_of_one_experiment_per_seed(tmp_path, name):
    """What CI runs: every seed's harness end to end, short runs."""
    assert main([name, "--quick", "--out", str(tmp_path), "--no-progress", "--workers", "2"]) == 0
    csv = pd.read_csv(tmp_path / f"{name}.csv")
    assert csv["error"].isna().all(), csv["error"].dropna().tolist()
    assert (csv["app_bytes"] > 0).all()
    section = (tmp_path / f"{name}.md").read_text()
    assert section.startswith(f"## {name}") and "quick" in section
    assert "**no source**" not in section
