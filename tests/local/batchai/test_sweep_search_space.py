"""Azure ML's search-space distributions as the service draws from them, and the grid's order."""
from __future__ import annotations

import math

import pytest

from horovod_batchai.local.batchai.sweeps.search_space import grid_points, parse_search_space, random_point
from horovod_batchai.local.core.arm_errors import InvalidParameter

SPACE = {
    "c": ["choice", [[16, 32, "x"]]], "u": ["uniform", [-2, 3]], "lu": ["loguniform", [-3, 0]],
    "n": ["normal", [10, 0.5]], "ln": ["lognormal", [0, 0.25]], "qu": ["quniform", [0, 1, 0.25]],
    "qlu": ["qloguniform", [0, 3, 2]], "qn": ["qnormal", [100, 5, 10]], "qln": ["qlognormal", [1, 0.1, 0.5]],
    "r": ["randint", [4]],
}


def test_each_distribution_draws_what_azure_ml_says():
    space = parse_search_space(SPACE)
    draws = [random_point(space, 3, i) for i in range(300)]
    assert {d["c"] for d in draws} == {16, 32, "x"}
    assert all(-2 <= d["u"] <= 3 for d in draws)
    assert all(math.exp(-3) <= d["lu"] <= 1 for d in draws)  # exp(uniform(-3, 0))
    assert 9.8 < sum(d["n"] for d in draws) / len(draws) < 10.2
    assert all(d["ln"] > 0 for d in draws)
    assert {d["qu"] for d in draws} <= {0, 0.25, 0.5, 0.75, 1.0}
    assert all(d["qlu"] % 2 == 0 and d["qlu"] <= math.exp(3) + 1 for d in draws)
    assert all(d["qn"] % 10 == 0 for d in draws) and all(d["qln"] % 0.5 == 0 for d in draws)
    assert {d["r"] for d in draws} == {0, 1, 2, 3}
    assert random_point(space, 3, 7) == draws[7]  # the same seed and index, the same trial


def test_the_grid_is_every_combination_the_first_parameter_slowest():
    space = parse_search_space({"a": ["choice", [[1, 2]]], "b": ["choice", [["x", "y", "z"]]]})
    assert grid_points(space) == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 1, "b": "z"},
                                  {"a": 2, "b": "x"}, {"a": 2, "b": "y"}, {"a": 2, "b": "z"}]


@pytest.mark.parametrize("raw, said", [
    ({"x": ["uniform", [1, 1]]}, "low < high"),
    ({"x": ["normal", [0, 0]]}, "sigma"),
    ({"x": ["quniform", [0, 1, 0]]}, "q of"),
    ({"x": ["randint", [0]]}, "upper bound"),
    ({"x": ["choice", [[]]]}, "non-empty"),
    ({"x": ["uniform", [0]]}, "takes 2 argument"),
    ({"x": "uniform(0, 1)"}, "[distribution, [arguments]]"),
    ({"bad-name": ["choice", [[1]]]}, "name"),
    ({}, "at least one"),
])
def test_a_bad_search_space_says_what_is_wrong(raw, said):
    with pytest.raises(InvalidParameter) as caught:
        parse_search_space(raw)
    assert said in caught.value.message
