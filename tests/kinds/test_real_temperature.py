"""real_temperature's draw of distinct members: the first n + 1 of a uniformly random permutation,
taken without sorting whole rows (bit-identical to the stable argsort it replaced)."""

from __future__ import annotations

import numpy as np
import pytest

from attnsim.kinds.real_temperature.kernel import first_of_permutation


@pytest.mark.parametrize(("members", "k"), [(2048, 17), (2048, 129), (256, 129), (20, 20), (5, 3)])
def test_first_of_permutation_is_the_stable_argsort_prefix(members, k):
    u = np.random.default_rng(members + k).random((300, members))
    expected = np.argsort(u, axis=1, kind="stable")[:, :k]
    assert np.array_equal(first_of_permutation(u, k), expected)


@pytest.mark.parametrize("k", [1, 5, 17, 49, 50])
def test_ties_are_broken_by_index_as_a_stable_sort_does(k):
    u = np.floor(np.random.default_rng(k).random((300, 50)) * 10) / 10  # many ties, at the cut too
    expected = np.argsort(u, axis=1, kind="stable")[:, :k]
    assert np.array_equal(first_of_permutation(u, k), expected)
