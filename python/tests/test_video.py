"""simulate(workload="video") and recv_window from Python."""

import pytest

import mpquic


def test_video_summary_counts_pictures():
    r = mpquic.simulate("lte-wifi-A1", cc="cubic", workload="video", duration=20)
    s = r.summary
    assert s["workload"] == "video" and s["video_frames"] == 180 * 25
    # 20 s of a 3-minute stream: only the pictures due by then are judged.
    assert 400 < s["video_played"] + s["video_discarded"] < 600
    assert 4.5e6 < s["goodput_bps"] < 6e6  # the stream's rate, not the paths'


def test_other_workloads_have_no_video_fields():
    s = mpquic.simulate("lte-wifi-A1", duration=2).summary
    assert s["workload"] == "h3" and "video_frames" not in s


def test_unknown_workload_is_a_value_error():
    with pytest.raises(ValueError, match="unknown workload"):
        mpquic.simulate("lte-wifi-A1", workload="vod", duration=1)


def test_small_receive_window_limits_goodput():
    big = mpquic.simulate("testbed-2x100", duration=5).summary["goodput_bps"]
    small = mpquic.simulate("testbed-2x100", duration=5, recv_window=200_000).summary["goodput_bps"]
    # 200 kB per 50 ms RTT is at most 32 Mbit/s, against ~190 unbounded.
    assert small < 40e6 < big
    with pytest.raises(ValueError, match="recv_window"):
        mpquic.simulate("testbed-2x100", duration=1, recv_window=0)
