import pytest

import mpquic


def test_sweep_grid(capsys):
    df = mpquic.sweep({"scheduler": ["minrtt", "rr"], "seed": [1, 2]},
                      scenario="testbed-2x100-loss1", duration=1.5, processes=2)
    assert len(df) == 4
    # Grid order: cartesian product, last key fastest.
    assert list(df["scheduler"]) == ["minrtt", "minrtt", "rr", "rr"]
    assert list(df["seed"]) == [1, 2, 1, 2]
    assert (df["scenario"] == "testbed-2x100-loss1").all()
    assert (df["goodput_bps"] > 0).all()
    assert {"a.throughput_bps", "b.throughput_bps", "a.share"} <= set(df.columns)
    # Each row equals the single run with the same arguments.
    one = mpquic.simulate("testbed-2x100-loss1", scheduler="rr", seed=2, duration=1.5)
    assert df.iloc[3]["goodput_bps"] == one.summary["goodput_bps"]
    err = capsys.readouterr().err
    try:
        import tqdm  # noqa: F401
    except ImportError:
        assert "sweep: 4/4 runs" in err


def test_sweep_list_and_errors():
    runs = [{"scenario": "break", "cc": "cubic"}, {"scenario": "break", "cc": "nope"}]
    df = mpquic.sweep(runs, duration=1, processes=2, progress=False, errors="record")
    assert len(df) == 2
    assert df.iloc[0]["goodput_bps"] > 0
    assert "unknown congestion controller" in df.iloc[1]["error"]
    with pytest.raises(mpquic.ConfigError):
        mpquic.sweep(runs, duration=1, progress=False)
    with pytest.raises(TypeError, match="unknown simulate"):
        mpquic.sweep({"scenario": ["break"], "colour": ["red"]}, progress=False)


def test_sweep_processes_backend():
    df = mpquic.sweep({"cc": ["cubic", "bbr"]}, scenario="break", duration=1,
                      processes=2, progress=False, backend="processes")
    assert list(df["cc"]) == ["cubic", "bbr"]
    assert (df["goodput_bps"] > 0).all()
