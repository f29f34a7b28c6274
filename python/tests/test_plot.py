import mpquic
from mpquic import plot


def test_plots(tmp_path):
    runs = {s: mpquic.simulate("break", scheduler=s, duration=2) for s in ("minrtt", "rr")}
    r = runs["minrtt"]
    files = {
        "thr": plot.throughput(r, save=tmp_path / "thr.png"),
        "good": plot.goodput(runs, save=tmp_path / "good.png"),
        "ooo": plot.ooo(runs, save=tmp_path / "ooo.png"),
        "cdf": plot.cdf(runs, save=tmp_path / "cdf.png"),
        "rtt": plot.rtt_cdf(r, save=tmp_path / "rtt.png"),
    }
    for name, fig in files.items():
        p = tmp_path / f"{name}.png"
        assert p.stat().st_size > 5000, name
        assert fig.axes
    # One line per path plus the goodput line.
    assert len(files["thr"].axes[0].lines) == 3
    df = mpquic.sweep({"scheduler": ["minrtt", "rr"], "seed": [1, 2]}, scenario="break",
                      duration=1, progress=False)
    fig = plot.bars(df, "scenario", "goodput_bps", "scheduler", scale=1e-6,
                    save=tmp_path / "bars.png")
    assert len(fig.axes[0].patches) == 2
