import threading
import time

import pytest

import mpquic

ONE_PATH = {
    "name": "one-path-20",
    "duration": 10.0,
    "path": [{"name": "p", "up": "data/const-20mbps", "down": "data/const-20mbps",
              "delay_ms": 10.0, "queue": {"kind": "droptail", "bytes": 100000}}],
}


def test_simulate_named_scenario():
    r = mpquic.simulate("break", cc="cubic", scheduler="minrtt", duration=3)
    s = r.summary
    assert s["scenario"] == "break" and s["cc"] == "cubic" and s["scheduler"] == "minrtt"
    assert s["established"] and s["error"] is None
    # Two 20 Mbit/s paths: at least one path's worth, at most both.
    assert 5e6 < s["goodput_bps"] < 41e6
    assert s["completion_s"] is None  # unbounded download
    # 100 ms samples over 3 s.
    assert len(r.timeseries) == 30
    assert list(r.timeseries.columns) == ["t", "flow", "goodput_bps", "ooo_bytes"]
    assert r.timeseries["t"].iloc[-1] == pytest.approx(3.0)
    assert set(r.paths["path"]) == {"a", "b"}
    assert len(r.paths) == 2 * len(r.timeseries)
    assert list(r.path_summary["path"]) == ["a", "b"]
    assert r.path_summary["share"].sum() == pytest.approx(1.0)


def test_simulate_is_deterministic():
    a = mpquic.simulate("testbed-2x100-loss1", duration=2, seed=7)
    b = mpquic.simulate("testbed-2x100-loss1", duration=2, seed=7)
    assert a.summary == b.summary
    assert a.timeseries.equals(b.timeseries)


def test_simulate_dict_bounded_download():
    r = mpquic.simulate(ONE_PATH, cc="bbr", bytes=2_000_000)
    s = r.summary
    assert s["scenario"] == "one-path-20" and s["cc"] == "bbr"
    assert s["app_bytes"] == 2_000_000
    # 2 MB at <= 20 Mbit/s takes at least 0.8 s; it must finish well within 10 s.
    assert s["completion_s"] is not None and 0.8 < s["completion_s"] < 5.0
    assert s["goodput_bps"] < 20e6


def test_simulate_scenario_file(tmp_path):
    import shutil
    import pathlib
    traces = pathlib.Path(__file__).resolve().parents[2] / "traces"
    r = mpquic.simulate(traces / "break.toml", duration=1)
    assert r.summary["scenario"] == "break"
    # A copied file resolves its traces relative to itself: missing there.
    shutil.copy(traces / "break.toml", tmp_path / "copy.toml")
    with pytest.raises(mpquic.ScenarioError):
        mpquic.simulate(str(tmp_path / "copy.toml"), duration=1)


def test_bad_scenarios():
    with pytest.raises(mpquic.ScenarioError, match="unknown scenario.*known: .*break"):
        mpquic.simulate("no-such-scenario", duration=1)
    bad = dict(ONE_PATH, duration=-1.0)
    with pytest.raises(mpquic.ScenarioError, match="duration"):
        mpquic.simulate(bad)
    with pytest.raises(mpquic.ScenarioError, match="unknown field|unknown key|bogus"):
        mpquic.simulate(dict(ONE_PATH, bogus=1))
    with pytest.raises(TypeError):
        mpquic.simulate(42)
    # ScenarioError is a ValueError.
    with pytest.raises(ValueError):
        mpquic.simulate("no-such-scenario")


def test_bad_names():
    with pytest.raises(mpquic.ConfigError, match="unknown congestion controller.*cubic"):
        mpquic.simulate("break", cc="warp-drive", duration=1)
    with pytest.raises(mpquic.ConfigError, match="known schedulers: .*minrtt"):
        mpquic.simulate("break", scheduler="psychic", duration=1)
    with pytest.raises(ValueError, match="duration"):
        mpquic.simulate("break", duration=0)


def test_simulate_releases_gil():
    """The main thread keeps running Python while a simulation runs on another."""
    done = threading.Event()
    out = {}

    def work():
        t = time.monotonic()
        mpquic.simulate("testbed-2x100", duration=4)
        out["elapsed"] = time.monotonic() - t
        done.set()

    th = threading.Thread(target=work)
    th.start()
    ticks, last, max_gap = 0, time.monotonic(), 0.0
    while not done.is_set():
        time.sleep(0.002)
        now = time.monotonic()
        max_gap = max(max_gap, now - last)
        last = now
        ticks += 1
    th.join()
    # Holding the GIL would stall this loop for the whole run.
    assert out["elapsed"] > 0.1, "run too short to tell"
    assert max_gap < out["elapsed"] / 2, (max_gap, out["elapsed"])


def _path(name, delay_ms):
    return {"name": name, "up": "data/const-20mbps", "down": "data/const-20mbps",
            "delay_ms": delay_ms, "queue": {"kind": "droptail", "bytes": 250000}}


HETERO = {"name": "50/150 ms", "duration": 5.0, "path": [_path("short", 25.0), _path("long", 75.0)]}


def test_scheduler_counters():
    # arp's P-Scheduling sends the long path's data ahead of the short path's.
    arp = mpquic.simulate(HETERO, cc="coupled-bbr", scheduler="arp", duration=5)
    assert arp.summary["scenario"] == "50/150 ms"  # any name, "/" too
    assert arp.summary["sent_ahead_bytes"] > 0
    minrtt = mpquic.simulate(HETERO, cc="coupled-bbr", scheduler="minrtt", duration=5)
    assert minrtt.summary["sent_ahead_bytes"] == 0 and minrtt.summary["copy_bytes"] == 0
    # The redundant scheduler's copies, per path and in total.
    red = mpquic.simulate(HETERO, scheduler="redundant", duration=3)
    assert red.summary["copy_bytes"] > 0
    assert red.path_summary["copy_bytes"].sum() == red.summary["copy_bytes"]


def test_sim_compare_script(tmp_path):
    """sim/compare.py (the main job's comparison figures) on two small runs."""
    import json
    import pathlib
    import subprocess
    import sys
    script = pathlib.Path(__file__).resolve().parents[2] / "sim" / "compare.py"
    for name, share in (("a-minrtt", 0.6), ("b-arp", 0.7)):
        run = tmp_path / name
        run.mkdir()
        (run / "series.csv").write_text(
            "t_s,flow,path,throughput_bps,srtt_ms,cwnd,bytes_in_flight,pacing_bps,goodput_bps,ooo_bytes\n"
            "0.1,0,wifi,1000000,40,10000,5000,0,900000,100\n0.2,0,wifi,2000000,41,12000,6000,0,1900000,0\n")
        paths = [{"name": "wifi", "share": share}, {"name": "lte", "share": 1 - share}]
        (run / "summary.json").write_text(json.dumps(
            {"flows": [{"completion_s": 1.5, "ooo_mean": 50.0, "paths": paths}]}))
    out = tmp_path / "figs"
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "a-minrtt"),
                        str(tmp_path / "b-arp"), "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for f in ("compare-goodput.png", "compare-ooo.png", "compare-summary.png"):
        assert (out / f).stat().st_size > 1000
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "missing")],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "compare.py" in r.stderr


def test_simulate_path_mtu_discovery():
    # A path whose link carries at most 1400-byte IP packets: with pmtud the
    # datagrams grow past the fixed 1350 up to what fits (1400 - 28 bytes of
    # IPv4 and UDP headers); without it they stay at 1350.
    sc = dict(ONE_PATH, path=[dict(ONE_PATH["path"][0], mtu=1400)])
    fixed = mpquic.simulate(sc, cc="bbr", duration=3)
    grown = mpquic.simulate(sc, cc="bbr", duration=3, pmtud=True)
    assert list(fixed.path_summary["mtu"]) == [1350]
    (mtu,) = grown.path_summary["mtu"]
    assert 1350 < mtu <= 1372, mtu
    assert grown.summary["goodput_bps"] > 0.9 * fixed.summary["goodput_bps"]
