"""The reproduction harness: command line, one quick experiment, Ray = local."""

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
    assert "## 000-fig11" in report and "| ref | metric | paper | ours | ratio |" in report
    assert "![000-fig11](000-fig11a.png)" in report
    assert (tmp_path / "000-fig11a.png").stat().st_size > 1000
    # Experiments not run are listed, not silently left out.
    assert "## Not run yet" in report and "004-table2" in report


def test_unexplained_gap_is_flagged():
    from mpquic.repro.report import cmp_table
    t = cmp_table([repro.Cmp("T1", "x", 10.0, 15.0), repro.Cmp("T1", "y", 10.0, 11.0),
                   repro.Cmp("T1", "z", 10.0, 20.0, why="a different testbed")])
    rows = t.splitlines()[2:]
    assert "**unexplained**" in rows[0] and rows[1].endswith("|  |")
    assert "a different testbed" in rows[2]


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
    assert "**unexplained**" not in section
