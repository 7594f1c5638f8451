"""The order an introsort (median-of-three quicksort, heapsort fallback, final insertion sort over
runs of 16, as in the GNU C++ library's ``std::sort``) gives a row of keys, descending.

Why this exists: DeepSeek's EPLB sorts loads with ``torch.sort(descending=True)``, which on the CPU
is such an unstable introsort. Among *equal* loads (replicas of one expert always have equal loads)
the order it leaves decides which GPU slot gets which replica. To give the same placement as the
reference on the same inputs, :mod:`core.balance` reproduces that order. Written from the
algorithm's description; only the order of equal keys depends on these details.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["introsort_order_desc"]

_THRESHOLD = 16


def introsort_order_desc(keys: np.ndarray) -> np.ndarray:
    """Indices that sort ``keys`` (1-D, no NaN) in descending order the way an introsort does."""
    vals = [float(x) for x in keys]
    idx = list(range(len(vals)))
    n = len(vals)
    if n > 1:
        _loop(vals, idx, 0, n, 2 * int(math.log2(n)))
        _final_insertion(vals, idx, 0, n)
    return np.asarray(idx, dtype=np.int64)


def _swap(v, ix, i, j):
    v[i], v[j] = v[j], v[i]
    ix[i], ix[j] = ix[j], ix[i]


def _loop(v, ix, first, last, depth):
    while last - first > _THRESHOLD:
        if depth == 0:
            _heap_sort(v, ix, first, last)
            return
        depth -= 1
        mid = first + (last - first) // 2
        _median_to_first(v, ix, first, first + 1, mid, last - 1)
        cut = _partition(v, ix, first + 1, last, first)
        _loop(v, ix, cut, last, depth)
        last = cut


def _median_to_first(v, ix, result, a, b, c):
    # comp(x, y) is "x sorts before y": x > y for descending order
    if v[a] > v[b]:
        if v[b] > v[c]:
            _swap(v, ix, result, b)
        elif v[a] > v[c]:
            _swap(v, ix, result, c)
        else:
            _swap(v, ix, result, a)
    elif v[a] > v[c]:
        _swap(v, ix, result, a)
    elif v[b] > v[c]:
        _swap(v, ix, result, c)
    else:
        _swap(v, ix, result, b)


def _partition(v, ix, first, last, pivot):
    p = v[pivot]
    while True:
        while v[first] > p:
            first += 1
        last -= 1
        while p > v[last]:
            last -= 1
        if not first < last:
            return first
        _swap(v, ix, first, last)
        first += 1


def _final_insertion(v, ix, first, last):
    if last - first > _THRESHOLD:
        _insertion(v, ix, first, first + _THRESHOLD)
        for i in range(first + _THRESHOLD, last):
            _linear_insert(v, ix, i)
    else:
        _insertion(v, ix, first, last)


def _insertion(v, ix, first, last):
    for i in range(first + 1, last):
        if v[i] > v[first]:
            val, key = v[i], ix[i]
            v[first + 1 : i + 1] = v[first:i]
            ix[first + 1 : i + 1] = ix[first:i]
            v[first], ix[first] = val, key
        else:
            _linear_insert(v, ix, i)


def _linear_insert(v, ix, last):
    val, key = v[last], ix[last]
    nxt = last - 1
    while val > v[nxt]:
        v[last], ix[last] = v[nxt], ix[nxt]
        last = nxt
        nxt -= 1
    v[last], ix[last] = val, key


def _heap_sort(v, ix, first, last):
    _make_heap(v, ix, first, last)
    while last - first > 1:
        last -= 1
        val, key = v[last], ix[last]
        v[last], ix[last] = v[first], ix[first]
        _adjust_heap(v, ix, first, 0, last - first, val, key)


def _make_heap(v, ix, first, last):
    length = last - first
    if length < 2:
        return
    parent = (length - 2) // 2
    while True:
        _adjust_heap(v, ix, first, parent, length, v[first + parent], ix[first + parent])
        if parent == 0:
            return
        parent -= 1


def _adjust_heap(v, ix, first, hole, length, val, key):
    top = hole
    child = hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        # comp(child, child - 1): the right child sorts before the left one -> take the left
        if v[first + child] > v[first + child - 1]:
            child -= 1
        v[first + hole], ix[first + hole] = v[first + child], ix[first + child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        v[first + hole], ix[first + hole] = v[first + child - 1], ix[first + child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and v[first + parent] > val:
        v[first + hole], ix[first + hole] = v[first + parent], ix[first + parent]
        hole = parent
        parent = (hole - 1) // 2
    v[first + hole], ix[first + hole] = val, key
