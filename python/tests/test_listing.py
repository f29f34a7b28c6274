import mpquic


def test_congestion_controllers():
    names = mpquic.congestion_controllers()
    for n in ("newreno", "cubic", "bbr", "bbr3", "coupled-bbr", "coupled-bbr-alg1", "lia", "olia", "balia"):
        assert n in names


def test_schedulers():
    names = mpquic.schedulers()
    for n in ("minrtt", "rr", "redundant", "arp"):
        assert n in names


def test_scenarios():
    by_name = {s["name"]: s for s in mpquic.scenarios()}
    assert "break" in by_name and "testbed-2x100" in by_name
    b = by_name["break"]
    assert b["paths"] == ["a", "b"]
    assert b["duration"] == 40.0
    assert b["file"].endswith("break.toml")
    assert "error" not in b


def test_load_scenario_dict_roundtrip():
    d = {"name": "one", "duration": 2.5,
         "path": [{"name": "x", "up": "data/const-20mbps", "down": "data/const-20mbps",
                   "delay_ms": 10.0, "loss": {"model": "bernoulli", "p": 0.001}}]}
    text = mpquic.scenario_toml(d)
    assert "[[path]]" in text and 'name = "x"' in text
    info = mpquic.load_scenario(d)
    assert info["name"] == "one" and info["paths"] == ["x"] and info["duration"] == 2.5
