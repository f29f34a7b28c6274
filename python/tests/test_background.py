"""Background flows and shared links of a scenario, seen from Python."""

import pytest

import mpquic


def test_listing_shows_shared_scenarios():
    by_name = {s["name"]: s for s in mpquic.scenarios()}
    for name in ("shared-bottleneck", "shared-and-disjoint", "testbed-2x100-bg",
                 "testbed-2x100-bg-loss0.01", "testbed-2x100-bg-loss0.1"):
        assert name in by_name and "error" not in by_name[name], name
    s = by_name["shared-bottleneck"]
    assert s["paths"] == ["a", "b", "c"]
    assert s["links"] == ["bottleneck"]
    assert s["test_paths"] == ["a", "b"]
    assert s["background_flows"] == [
        {"paths": ["c"], "cc": "bbr", "scheduler": "minrtt", "start": 0.0, "bytes": None}]
    bg = mpquic.load_scenario("testbed-2x100-bg")["background_flows"]
    assert [f["paths"] for f in bg] == [["a"], ["a"], ["b"], ["b"]]
    assert all(f["cc"] is None for f in bg)
    assert by_name["break"]["links"] == [] and by_name["break"]["background_flows"] == []


def test_simulate_reports_background_flows():
    r = mpquic.simulate("shared-bottleneck", cc="cubic", duration=3.0)
    fs = r.flow_summary
    assert list(fs["flow"]) == [0, 1]
    assert list(fs["background"]) == [False, True]
    assert list(fs["cc"]) == ["cubic", "bbr"]
    assert list(fs["paths"]) == ["a,b", "c"]
    assert (fs["goodput_bps"] > 0).all()
    assert r.summary["background"] is False
    assert set(r.paths["path"]) == {"a", "b", "c"}
    assert set(r.paths[r.paths["flow"] == 1]["path"]) == {"c"}
    links = r.links.set_index("link")
    assert list(links.index) == ["a", "b", "c", "bottleneck"]
    # Everything the paths delivered came through the bottleneck.
    assert links.loc["bottleneck", "down_delivered_bytes"] >= links.loc[["a", "b", "c"], "down_delivered_bytes"].sum()


def test_background_flows_take_the_controller_under_test():
    r = mpquic.simulate("testbed-2x100-bg", cc="bbr", duration=2.0)
    assert list(r.flow_summary["cc"]) == ["bbr"] * 5
    assert list(r.flow_summary["paths"]) == ["a,b", "a", "a", "b", "b"]


@pytest.mark.parametrize("timestamps", [True, False])
def test_shared_bottleneck_groups_show_in_results(timestamps):
    """coupled-bbr's detector puts the two paths through one bottleneck in one
    group, from the peer's timestamps and from RTT samples alike."""
    r = mpquic.simulate("shared-bottleneck", cc="coupled-bbr", duration=8.0, timestamps=timestamps)
    groups = [p["group"] for p in r.flows[0]["paths"]]
    assert groups[0] == groups[1], groups
    late = r.paths[(r.paths["flow"] == 0) & (r.paths["t"] > 7.0)]
    assert late.groupby("t")["group"].nunique().eq(1).all()
