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
from typing import Any, Sequence

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
        """Checked arrays from a file's trees (``features``: the length of a sample)."""
        if not isinstance(trees, list) or not trees:
            raise SelectorError(f"{where}.trees: expected a non-empty list of trees")
        parts: dict[str, list] = {k: [] for k in FIELDS}
        roots, offset, depth = [], 0, 0
        for t, tree in enumerate(trees):
            here = f"{where}.trees[{t}]"
            arrays = _tree_arrays(tree, here)
            depth = max(depth, _check_tree(arrays, features, here))
            roots.append(offset)
            for key in ("left", "right"):
                arrays[key] = np.where(arrays[key] >= 0, arrays[key] + offset, -1)
            for key in FIELDS:
                parts[key].append(arrays[key])
            offset += len(arrays["feature"])
        joined = {k: np.concatenate(v) for k, v in parts.items()}
        return Forest(joined["feature"], joined["threshold"], joined["left"], joined["right"],
                      joined["value"], np.asarray(roots, dtype=np.int64), depth)


def _local(children: np.ndarray, start: int) -> list[int]:
    """Children numbered within their tree again (-1 stays -1)."""
    return [int(i - start) if i >= 0 else -1 for i in children]


def _tree_arrays(tree: Any, where: str) -> dict[str, np.ndarray]:
    if not isinstance(tree, dict):
        raise SelectorError(f"{where}: expected an object with {', '.join(FIELDS)}")
    out = {}
    for key in FIELDS:
        values = tree.get(key)
        if not isinstance(values, list) or not values or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            raise SelectorError(f"{where}.{key}: expected a non-empty list of numbers")
        out[key] = np.asarray(values, dtype=np.float64 if key in ("threshold", "value")
                              else np.int64)
        if key not in ("threshold", "value") and not np.array_equal(out[key],
                                                                    np.asarray(values)):
            raise SelectorError(f"{where}.{key}: expected integers")
    sizes = {len(v) for v in out.values()}
    if len(sizes) != 1:
        raise SelectorError(f"{where}: {', '.join(FIELDS)} differ in length")
    if not np.isfinite(out["value"]).all() or np.isnan(out["threshold"]).any():
        raise SelectorError(f"{where}: a value or threshold is not a finite number")
    return out


def _check_tree(a: dict[str, np.ndarray], features: int, where: str) -> int:
    """The tree's depth; a node whose children are not later nodes (so a walk could loop), or a
    feature index out of range, is an error naming the node."""
    n = len(a["feature"])
    depth = np.zeros(n, dtype=np.int64)
    for i in range(n):
        f, lo, hi = int(a["feature"][i]), int(a["left"][i]), int(a["right"][i])
        if f < 0:
            if lo != -1 or hi != -1:
                raise SelectorError(f"{where}: leaf {i} has children")
            continue
        if f >= features:
            raise SelectorError(f"{where}.feature[{i}]: {f} is not one of the "
                                f"{features} features")
        if not (i < lo < n and i < hi < n):
            raise SelectorError(f"{where}: node {i}'s children must be later nodes of the tree")
        depth[lo] = max(depth[lo], depth[i] + 1)
        depth[hi] = max(depth[hi], depth[i] + 1)
    return int(depth.max())
