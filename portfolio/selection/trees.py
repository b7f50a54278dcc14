"""A regression forest as a selector file holds it, and its evaluation in plain numpy.

The model is fitted by scikit-learn at training time (:mod:`.fit`, the ``learn`` extra) and
shipped as arrays: per tree, for each node, the feature index it splits on (-1 at a leaf), the
threshold, the two children (-1 at a leaf) and the leaf value. Solving needs only numpy: a plain
install's run evaluates a selector without scikit-learn.

The split rule is scikit-learn's: a sample goes left when its value, as a 32-bit float, is at
most the threshold (scikit-learn's trees read their input as float32 and compare it with a
float64 threshold), so the predictions here equal ``RandomForestRegressor.predict`` exactly
(``tests/test_selection_model.py``). The forest's prediction is the mean of its trees', summed in
tree order as scikit-learn sums them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .schedule import SelectorError

FIELDS = ("feature", "threshold", "left", "right", "value")


@dataclass(frozen=True)
class Forest:
    """Every tree's nodes concatenated (children as indices into the concatenation), the roots,
    and the depth the evaluation walks (the deepest leaf's)."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    depth: int

    def predict(self, x: np.ndarray) -> float:
        """The mean of the trees' leaf values for one sample ``x`` (the selector's feature
        vector, in the file's feature order)."""
        xs = np.asarray(x, dtype=np.float32).astype(np.float64)
        node = self.roots.copy()
        for _ in range(self.depth):
            feat = self.feature[node]
            inner = feat >= 0
            if not inner.any():
                break
            goes_left = xs[np.where(inner, feat, 0)] <= self.threshold[node]
            node = np.where(inner, np.where(goes_left, self.left[node], self.right[node]), node)
        # the trees' values added in order, then divided, as scikit-learn averages them (a
        # pairwise mean may differ in the last bit)
        return float(np.cumsum(self.value[node])[-1] / len(node))

    def predict_many(self, rows: np.ndarray) -> np.ndarray:
        """:meth:`predict` for each row of a 2-d array."""
        return np.array([self.predict(r) for r in np.atleast_2d(rows)], dtype=np.float64)

    def to_json(self) -> dict:
        """``{"trees": [{feature, threshold, left, right, value}, ...]}``, children local to
        their tree (as scikit-learn numbers them)."""
        bounds = [*self.roots.tolist(), len(self.feature)]
        trees = []
        for start, end in zip(bounds[:-1], bounds[1:]):
            part = slice(start, end)
            trees.append({"feature": [int(f) for f in self.feature[part]],
                          "threshold": [float(t) for t in self.threshold[part]],
                          "left": _local(self.left[part], start),
                          "right": _local(self.right[part], start),
                          "value": [float(v) for v in self.value[part]]})
        return {"trees": trees}

    @staticmethod
    def from_trees(trees: Sequence[dict], features: int, where: str) -> "Forest":
        """Checked arrays from a file's trees (``features``: the length of a sample). Checked
        for the whole forest at once, in numpy: a shipped selector has hundreds of trees, and
        it is read inside a run's budget."""
        if not isinstance(trees, list) or not trees:
            raise SelectorError(f"{where}.trees: expected a non-empty list of trees")
        parts: dict[str, list] = {k: [] for k in FIELDS}
        sizes = []
        for t, tree in enumerate(trees):
            if not isinstance(tree, dict):
                raise SelectorError(f"{where}.trees[{t}]: expected an object with "
                                    f"{', '.join(FIELDS)}")
            lengths = set()
            for key in FIELDS:
                values = tree.get(key)
                if not isinstance(values, list) or not values:
                    raise SelectorError(f"{where}.trees[{t}].{key}: expected a non-empty list "
                                        f"of numbers")
                parts[key].extend(values)
                lengths.add(len(values))
            if len(lengths) != 1:
                raise SelectorError(f"{where}.trees[{t}]: {', '.join(FIELDS)} differ in length")
            sizes.append(lengths.pop())
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        arrays = {key: _numbers(parts[key], key, where, starts) for key in FIELDS}
        tree_start = np.repeat(starts, sizes)
        for key in ("left", "right"):
            arrays[key] = np.where(arrays[key] >= 0, arrays[key] + tree_start, -1)
        depth = _check_forest(arrays, features, tree_start + np.repeat(sizes, sizes), where,
                              starts)
        return Forest(arrays["feature"], arrays["threshold"], arrays["left"], arrays["right"],
                      arrays["value"], starts, depth)


def _node(index: int, starts: np.ndarray) -> str:
    """``trees[t]`` and the node's number in it, for an error about the node ``index``."""
    t = int(np.searchsorted(starts, index, side="right")) - 1
    return f"trees[{t}]", str(index - int(starts[t]))


def _numbers(values: list, key: str, where: str, starts: np.ndarray) -> np.ndarray:
    """One field of every tree as an array: numbers (integers for indices), finite values."""
    integral = key not in ("threshold", "value")
    array = np.asarray(values)
    ok = array.dtype.kind in ("i", "f") and (not integral or array.dtype.kind == "i")
    if not ok:
        bad = next(i for i, v in enumerate(values) if isinstance(v, bool) or not isinstance(
            v, int if integral else (int, float)))
        tree, node = _node(bad, starts)
        raise SelectorError(f"{where}.{tree}.{key}[{node}]: expected "
                            f"{'an integer' if integral else 'a number'}, got {values[bad]!r}")
    array = array.astype(np.int64 if integral else np.float64)
    if not integral and not (np.isfinite(array) if key == "value" else ~np.isnan(array)).all():
        tree, node = _node(int(np.flatnonzero(~np.isfinite(array))[0]), starts)
        raise SelectorError(f"{where}.{tree}.{key}[{node}]: not a finite number")
    return array


def _check_forest(a: dict[str, np.ndarray], features: int, tree_end: np.ndarray, where: str,
                  starts: np.ndarray) -> int:
    """The deepest leaf's depth; a leaf with children, a split on a feature out of range, or a
    node whose children are not later nodes of its tree (so a walk could loop) is an error
    naming the tree and the node."""
    feature, left, right = a["feature"], a["left"], a["right"]
    index = np.arange(len(feature))
    leaf = feature < 0
    checks = (
        (leaf & ((left != -1) | (right != -1)), "a leaf (feature -1) has children"),
        (~leaf & (feature >= features), f"the feature is not one of the {features} features"),
        (~leaf & ~((index < left) & (left < tree_end) & (index < right) & (right < tree_end)),
         "its children must be later nodes of the tree"),
    )
    for bad, what in checks:
        if bad.any():
            tree, node = _node(int(np.flatnonzero(bad)[0]), starts)
            raise SelectorError(f"{where}.{tree}: node {node}: {what}")
    depth = np.zeros(len(feature), dtype=np.int64)
    inner = np.flatnonzero(~leaf)
    for _ in range(len(feature)):   # one level a turn: at most as many turns as levels
        deeper = depth.copy()
        np.maximum.at(deeper, left[inner], depth[inner] + 1)
        np.maximum.at(deeper, right[inner], depth[inner] + 1)
        if np.array_equal(deeper, depth):
            break
        depth = deeper
    return int(depth.max())


def _local(children: np.ndarray, start: int) -> list[int]:
    """Children numbered within their tree again (-1 stays -1)."""
    return [int(i - start) if i >= 0 else -1 for i in children]
