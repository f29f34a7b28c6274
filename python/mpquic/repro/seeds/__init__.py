"""The experiments of each seed paper; importing registers them."""

from . import (  # noqa: F401
    realtraces, seed000, seed000_sim, seed000_testbed, seed001, seed002, seed003, seed004)
