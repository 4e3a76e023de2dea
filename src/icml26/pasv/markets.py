"""Data valuation: the digits data market with lineage, its utilities, and the market experiment.

:class:`DataMarket` and :func:`make_data_market` build the stand-in for the paper's MNIST
market (Sec. 5.1, Fig. 4; providers :data:`PROVIDERS`, blocks :data:`BLOCKS` and their DAG
:data:`BLOCK_EDGES`); :class:`KNNUtility` (point coalitions) and
:class:`CoalitionModelUtility` (provider coalitions) are the utilities;
:func:`value_markets` is chapter 15's data-market experiment (Table 1) and
:func:`value_block_markets` its exact providers-as-players game over many market draws.

Reference: K. Lee, Z. Liu, W. Tang, Y. Zhang, "Priority-Aware Shapley Value", ICML 2026,
arXiv:2602.09326. Conventions (closures ``R``, orders, bitmask game tables): :mod:`icml26.pasv`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .._common import RandomState, check_random_state
from ._checks import _check_features, _check_int, _check_labels, _check_mask, _check_orders
from .estimation import pasv_mc, rov_estimate
from .exact import pasv_exact, shapley_exact, wsv_exact
from .games import game_table
from .posets import block_closure, ordered_partition_closure, precedence_closure
from .sampling import uniform_permutations

__all__ = [
    "PROVIDERS",
    "BLOCKS",
    "BLOCK_EDGES",
    "BLOCK_PROVIDER",
    "DataMarket",
    "make_data_market",
    "KNNUtility",
    "CoalitionModelUtility",
    "value_markets",
    "value_block_markets",
]


PROVIDERS = ("Owner", "Anchor", "Booster", "Copier", "Poisoner")


BLOCKS = ("Owner", "Anchor", "Booster|O", "Booster|A", "Copier|O", "Copier|A", "Poisoner|O", "Poisoner|A")


# Owner -> Anchor; Owner -> the Owner-derived half of each reuser; Anchor -> the Anchor-derived half (Fig. 4)
BLOCK_EDGES = ((0, 1), (0, 2), (1, 3), (0, 4), (1, 5), (0, 6), (1, 7))


BLOCK_PROVIDER = np.array([0, 1, 2, 2, 3, 3, 4, 4])


class DataMarket:
    """A data market on scikit-learn's digits (a stand-in for the paper's MNIST market, Sec. 5.1).

    Attributes
    ----------
    X, y : arrays (n, 64), (n,)
        Training points of all providers, block by block.
    block : int array (n,)
        Block of each point (index into ``BLOCKS``).
    provider : int array (n,)
        Provider of each point (index into ``PROVIDERS``).
    X_test, y_test : arrays
        Balanced held-out test set.

    Parameters
    ----------
    X, y, block, X_test, y_test : arrays
        As the attributes (``block`` values in ``0 .. 7``).

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 5.1, Fig. 4 and Table 1.
    """

    def __init__(self, X, y, block, X_test, y_test):
        X, X_test = _check_features(X, "X"), _check_features(X_test, "X_test")
        y, y_test = _check_labels(y, X.shape[0], "y"), _check_labels(y_test, X_test.shape[0], "y_test")
        block = np.asarray(block)
        if block.shape != y.shape or block.dtype.kind not in "iu" or block.min() < 0 or block.max() >= len(BLOCKS):
            raise ValueError(f"block must hold one block index in 0..{len(BLOCKS) - 1} per point, got shape {block.shape}")
        if X.shape[1] != X_test.shape[1]:
            raise ValueError(f"X and X_test must have the same number of features, got {X.shape[1]} and {X_test.shape[1]}")
        self.X, self.y, self.block = X, y, block
        self.provider = BLOCK_PROVIDER[block]
        self.X_test, self.y_test = X_test, y_test

    @property
    def n(self) -> int:
        """Number of points (players)."""
        return len(self.y)

    def closure(self) -> np.ndarray:
        """Point-level precedence closure of the lineage DAG (Fig. 4).

        Returns
        -------
        ndarray of bool, shape (n, n)

        References
        ----------
        .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Fig. 4.
        """
        return block_closure(self.block, BLOCK_EDGES)

    def weights(self, b: float, c: Sequence[float] = (0, 1, 0, 2, 2)) -> np.ndarray:
        """Provider weights ``λ = b**c[provider]``.

        Parameters
        ----------
        b : float
            Base, finite and > 0.
        c : sequence of 5 floats
            Exponents of (Owner, Anchor, Booster, Copier, Poisoner); the paper's ``(0, 1, 0, 2, 2)``.

        Returns
        -------
        ndarray, shape (n,)

        References
        ----------
        .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 5.1.
        """
        if isinstance(b, (bool, np.bool_)) or not isinstance(b, (int, float, np.integer, np.floating)):
            raise TypeError(f"b={b!r} must be a number > 0")
        if not (math.isfinite(b) and b > 0):
            raise ValueError(f"b={b!r} must be finite and > 0")
        c = np.asarray(c, dtype=float)
        if c.shape != (len(PROVIDERS),) or not np.all(np.isfinite(c)):
            raise ValueError(f"c must be {len(PROVIDERS)} finite exponents, one per provider {PROVIDERS}, got {c}")
        return float(b) ** c[self.provider]


def _rotate(img: np.ndarray, angle: float) -> np.ndarray:
    from scipy.ndimage import rotate

    return rotate(img.reshape(8, 8), angle, reshape=False, order=1, mode="constant").ravel()


def make_data_market(n_per_half: int = 10, n_test_per_class: int = 30, random_state: RandomState = None) -> DataMarket:
    """Build the digits data market with lineage (stand-in for the paper's MNIST market).

    Providers (each ``2 * n_per_half`` points): **Owner** (original digits, classes balanced);
    **Anchor** (each Owner-derived parent rotated by ±(8–15)°: a classical augmentation);
    **Booster** (half synthesised from Owner, half from Anchor: the mean of two same-class parents
    plus Gaussian noise, a crude class-conditional generator standing in for GAN/diffusion
    samples); **Copier** (exact copies, half of Owner, half of Anchor points); **Poisoner** (copies
    like Copier, labels replaced by a random other class). Pixel values are scaled to [0, 1].

    Parameters
    ----------
    n_per_half : int
        Points in each half-provider block (a provider has ``2 * n_per_half``), >= 1.
    n_test_per_class : int
        Test digits per class, >= 1; with the Owner's ``ceil(n_per_half / 5)`` points per
        class it must fit in the smallest digits class (174 images).
    random_state : int, Generator or None
        Seed or generator.

    Returns
    -------
    DataMarket

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 5.1 and Fig. 4.
    """
    from sklearn.datasets import load_digits

    n_per_half = _check_int(n_per_half, "n_per_half")
    n_test_per_class = _check_int(n_test_per_class, "n_test_per_class")
    rng = check_random_state(random_state)
    Xall, yall = load_digits(return_X_y=True)
    cmin = int(np.bincount(yall).min())
    if n_test_per_class + -(-2 * n_per_half // 10) > cmin:
        raise ValueError(
            f"n_test_per_class={n_test_per_class} plus the {-(-2 * n_per_half // 10)} Owner points per class "
            f"that n_per_half={n_per_half} needs exceed the {cmin} images of the smallest digits class"
        )
    Xall = Xall / 16.0
    idx = rng.permutation(len(yall))
    test = np.concatenate([idx[yall[idx] == c][:n_test_per_class] for c in range(10)])
    pool = np.setdiff1d(idx, test)
    pool = pool[rng.permutation(pool.size)]
    m = 2 * n_per_half
    # balanced Owner: cycle over classes
    by_class = [pool[yall[pool] == c] for c in range(10)]
    owner = np.array([by_class[i % 10][i // 10] for i in range(m)])
    Xo, yo = Xall[owner], yall[owner]
    angles = rng.uniform(8, 15, m) * rng.choice([-1, 1], m)
    Xa = np.stack([_rotate(x, a) for x, a in zip(Xo, angles)])
    ya = yo.copy()

    def synth(Xp, yp, count):
        out_x, out_y = [], []
        for _ in range(count):
            i = rng.integers(len(yp))
            same = np.flatnonzero(yp == yp[i])
            j = rng.choice(same)
            x = 0.5 * (Xp[i] + Xp[j]) + rng.normal(0, 0.05, Xp.shape[1])
            out_x.append(np.clip(x, 0, 1))
            out_y.append(yp[i])
        return np.array(out_x), np.array(out_y)

    h = n_per_half
    XbO, ybO = synth(Xo, yo, h)
    XbA, ybA = synth(Xa, ya, h)
    co, ca = rng.choice(m, h, replace=False), rng.choice(m, h, replace=False)
    po, pa = rng.choice(m, h, replace=False), rng.choice(m, h, replace=False)

    def flip(y):
        return (y + rng.integers(1, 10, size=y.size)) % 10

    X = np.concatenate([Xo, Xa, XbO, XbA, Xo[co], Xa[ca], Xo[po], Xa[pa]])
    y = np.concatenate([yo, ya, ybO, ybA, yo[co], ya[ca], flip(yo[po]), flip(ya[pa])])
    block = np.repeat(np.arange(8), [m, m, h, h, h, h, h, h])
    return DataMarket(X, y, block, Xall[test], yall[test])


class KNNUtility:
    """Test accuracy of a k-NN classifier retrained on a coalition of training points (Sec. 5.1).

    ``U(S)`` is the accuracy on the test set of the majority vote among the ``min(k, |S|)``
    nearest members of ``S`` (Euclidean; a tied vote goes to the class whose members have the
    smaller sum of distance ranks, then to the smaller label);
    ``U(∅) = 1 / n_classes``, the accuracy of a constant guess on a balanced test set.
    :meth:`values_along` computes all prefixes of many orders at once, incrementally.
    A :class:`Utility`: called on one coalition mask of shape ``(n,)``.

    Parameters
    ----------
    X, y : arrays (n, d), (n,)
        Training points (the players) and their labels in ``0 .. n_classes-1``.
    X_test, y_test : arrays (T, d), (T,)
        Test set.
    k : int
        Neighbours (>= 1).
    n_classes : int
        Number of classes (>= 2).

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 5.1 (k-NN test accuracy as the utility).
    """

    def __init__(self, X, y, X_test, y_test, k: int = 5, n_classes: int = 10):
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k={k!r} must be a positive integer")
        n_classes = _check_int(n_classes, "n_classes", low=2)
        X, X_test = _check_features(X, "X"), _check_features(X_test, "X_test")
        if X.shape[1] != X_test.shape[1]:
            raise ValueError(f"X and X_test must have the same number of features, got {X.shape[1]} and {X_test.shape[1]}")
        y, y_test = _check_labels(y, X.shape[0], "y"), _check_labels(y_test, X_test.shape[0], "y_test")
        if max(y.max(), y_test.max()) >= n_classes:
            raise ValueError(f"labels must lie in 0..{n_classes - 1} (n_classes={n_classes})")
        self.k, self.n_classes = int(k), int(n_classes)
        self.y = y
        self.y_test = y_test
        d2 = (X_test**2).sum(1)[:, None] + (X**2).sum(1)[None, :] - 2 * X_test @ X.T
        # rank-based distances make ties impossible and the result deterministic
        self.rank = np.argsort(np.argsort(d2, axis=1, kind="stable"), axis=1).astype(np.int64)  # (T, n)
        self.n = len(self.y)
        self.n_calls = 0

    def __call__(self, mask: np.ndarray) -> float:
        """Test accuracy of the k-NN vote of the coalition ``mask`` (shape ``(n,)``)."""
        mask = _check_mask(mask, self.n)
        self.n_calls += 1
        if not mask.any():
            return 1.0 / self.n_classes
        idx = np.flatnonzero(mask)
        r = self.rank[:, idx]  # (T, s)
        kk = min(self.k, idx.size)
        nn = np.argsort(r, axis=1)[:, :kk]  # (T, kk) nearest first
        lab = self.y[idx][nn]  # (T, kk)
        rk = np.take_along_axis(r, nn, axis=1)
        onehot = lab[..., None] == np.arange(self.n_classes)  # (T, kk, C)
        score = np.sum(onehot * (self._tie - rk[..., None]), axis=1)  # (T, C), integers: exact ties
        return float(np.mean(score.argmax(-1) == self.y_test))

    @property
    def _tie(self) -> int:
        # score_c = (k·n + 1)·count_c − Σ_{members of c} rank: the count decides, the rank sum breaks ties
        return self.k * self.n + 1

    def values_along(self, orders: np.ndarray, batch: int = 128) -> np.ndarray:
        """Accuracy after each prefix of each order, by incremental top-k and vote updates.

        Parameters
        ----------
        orders : int array, shape (m, n)
            Permutations of the points.
        batch : int
            Orders processed together (memory ~ ``batch * T * n``).

        Returns
        -------
        ndarray, shape (m, n+1)
            Equal to calling the utility on every prefix.

        References
        ----------
        .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), eq. 1 and Sec. 5.1.
        """
        orders = _check_orders(orders, self.n)
        batch = _check_int(batch, "batch")
        m, n = orders.shape
        T, k, C = self.rank.shape[0], self.k, self.n_classes
        out = np.empty((m, n + 1))
        out[:, 0] = 1.0 / C
        self.n_calls += m * n
        for s in range(0, m, batch):
            o = orders[s : s + batch]  # (B, n)
            B = o.shape[0]
            D = self.rank[:, o].transpose(1, 2, 0).copy()  # (B, n, T) distance rank of each arrival
            L = self.y[o]  # (B, n)
            BT = B * T
            topd = np.full((BT, k), n, dtype=np.int64)  # rank n: empty slot (ranks are 0..n-1)
            topl = np.full((BT, k), -1, dtype=np.int64)  # -1: empty slot
            score = np.zeros((BT, C), dtype=np.int64)
            flat = np.arange(BT)
            yt = np.tile(self.y_test, B)
            for t in range(n):
                d = D[:, t, :].ravel()  # (BT,)
                lab = np.repeat(L[:, t], T)
                worst = topd.argmax(-1)
                wv = topd[flat, worst]
                rep = np.flatnonzero(d < wv)
                old = topl[rep, worst[rep]]
                had = old >= 0
                score[rep[had], old[had]] -= self._tie - wv[rep[had]]
                score[rep, lab[rep]] += self._tie - d[rep]
                topd[rep, worst[rep]] = d[rep]
                topl[rep, worst[rep]] = lab[rep]
                out[s : s + B, t + 1] = (score.argmax(-1) == yt).reshape(B, T).mean(1)
        return out


class CoalitionModelUtility:
    """Utility of a coalition of *providers* (blocks): a model retrained on their pooled data, scored on a test set.

    ``U(G) = score(model fitted on ⋃_{g∈G} data_g)``; ``U(∅) = empty_value``. Values are cached by
    coalition, so an exact computation over ``2**n_groups`` coalitions trains each model once.

    A :class:`Utility`: called on one coalition mask of shape ``(n_groups,)``.

    Parameters
    ----------
    make_model : callable
        Returns a fresh scikit-learn estimator (``fit``/``score``).
    X, y : arrays
        Pooled training data; ``groups[i]`` is the provider/block of point ``i``.
    groups : int array (len(y),)
        Group of each point, ``0 .. n_groups-1``.
    X_test, y_test : arrays
        Test set for ``score``.
    empty_value : float
        ``U(∅)`` (finite).

    References
    ----------
    .. [1] Lee et al., ICML 2026 (arXiv:2602.09326), Sec. 5.1 (providers valued by retraining).
    """

    def __init__(self, make_model, X, y, groups, X_test, y_test, empty_value: float = 0.1):
        if not callable(make_model):
            raise TypeError(f"make_model must be a callable returning an estimator, got {type(make_model).__name__}")
        X, X_test = _check_features(X, "X"), _check_features(X_test, "X_test")
        g = np.asarray(groups)
        if g.shape != (X.shape[0],) or g.dtype.kind not in "iu" or g.min() < 0:
            raise ValueError(f"groups must hold one non-negative group index per row of X ({X.shape[0]}), got shape {g.shape}")
        y = np.asarray(y)
        if y.shape[:1] != (X.shape[0],) or np.asarray(y_test).shape[:1] != (X_test.shape[0],):
            raise ValueError(f"y and y_test must have one entry per row of X and X_test, got {y.shape} and {np.shape(y_test)}")
        if isinstance(empty_value, (bool, np.bool_)) or not isinstance(empty_value, (int, float, np.integer, np.floating)):
            raise TypeError(f"empty_value={empty_value!r} must be a number")
        if not math.isfinite(empty_value):
            raise ValueError(f"empty_value={empty_value!r} must be finite")
        self.make_model, self.X, self.y = make_model, X, y
        self.groups = g.astype(int)
        self.n = int(self.groups.max()) + 1
        self.X_test, self.y_test, self.empty_value = X_test, y_test, float(empty_value)
        self.cache: dict[int, float] = {}
        self.n_fits = 0

    def __call__(self, mask: np.ndarray) -> float:
        """``U(G)`` of the coalition of groups ``mask`` (shape ``(n_groups,)``), cached."""
        mask = _check_mask(mask, self.n)
        key = int(np.sum(mask.astype(np.int64) << np.arange(self.n)))
        if key not in self.cache:
            if not mask.any():
                self.cache[key] = self.empty_value
            else:
                rows = mask[self.groups]
                model = self.make_model().fit(self.X[rows], self.y[rows])
                self.cache[key] = float(model.score(self.X_test, self.y_test))
                self.n_fits += 1
        return self.cache[key]


def value_markets(
    market_seeds,
    *,
    market_half: int,
    n_test_per_class: int,
    knn_k: int,
    mh_orders: int,
    burn_n2: int,
    thin_n2: int,
    mh_chains: int,
    weight_bases: Sequence[float] = (2, 8, 32),
):
    """Chapter 15's data-market experiment (the paper's Table 1): provider values under every method.

    For every seed ``ms`` a market is drawn (:func:`make_data_market`); its points are valued
    with a :class:`KNNUtility` by the Shapley value (``mh_orders`` uniform orders, seeded by
    ``ms``), WSV (:func:`pasv_mc` on the two-block order with weights of base 8), PSV (the
    market's precedence closure, equal weights) and PASV with weight bases ``weight_bases``;
    the MH chains use burn-in ``burn_n2 n^2`` and thinning ``thin_n2 n^2`` and are seeded
    by ``100 ms + k`` for the ``k``-th method. Point values are summed per provider.

    Parameters
    ----------
    market_seeds : iterable of int
    market_half, n_test_per_class : int
        Passed to :func:`make_data_market`.
    knn_k : int
        Neighbours of the :class:`KNNUtility`.
    mh_orders, burn_n2, thin_n2, mh_chains : int
        Orders per estimate, burn-in and thinning in units of ``n^2``, MH chains.
    weight_bases : sequence of float
        The PASV weight bases ``b``.

    Returns
    -------
    (list of dict, list of dict, list of DataMarket)
        Rows ``seed, method, provider, value``; per market, the :func:`pasv_mc` results by
        method; the markets.
    References
    ----------
    .. [1] Lee et al., "Priority-Aware Shapley Value", ICML 2026 (arXiv:2602.09326), Sec. 5 (data-market experiment, Table 1).
    """
    rows, extras, markets = [], [], []
    for ms in market_seeds:
        market = make_data_market(market_half, n_test_per_class, random_state=ms)
        n = market.n
        util = KNNUtility(market.X, market.y, market.X_test, market.y_test, k=knn_k)
        R = market.closure()
        R_wsv = ordered_partition_closure([np.flatnonzero(market.provider == 0), np.flatnonzero(market.provider != 0)])
        mh = dict(n_samples=mh_orders, burn_in=burn_n2 * n * n, thin=thin_n2 * n * n, n_chains=mh_chains)
        vals, extra = {}, {}
        O = uniform_permutations(n, mh_orders, random_state=ms)
        vals["SV"] = rov_estimate(util.values_along(O), O)[0]
        runs = {"WSV": (R_wsv, market.weights(8)), "PSV": (R, None)}
        runs.update({f"PASV b={b}": (R, market.weights(b)) for b in weight_bases})
        for k, (name, (RR, lam)) in enumerate(runs.items()):
            res = pasv_mc(util, RR, lam, random_state=ms * 100 + k, **mh)
            vals[name] = res["psi"]
            extra[name] = res
        markets.append(market)
        extras.append(extra)
        for method, v in vals.items():
            sums = np.bincount(market.provider, weights=v, minlength=5)
            rows += [dict(seed=ms, method=method, provider=PROVIDERS[j], value=sums[j]) for j in range(5)]
    return rows, extras, markets


def value_block_markets(
    market_seeds,
    *,
    block_half: int,
    block_test_per_class: int,
    block_k: int,
    weight_bases: Sequence[float] = (2, 8, 32),
    c: Sequence[float] = (0, 1, 0, 2, 2),
    empty_value: float = 0.1,
):
    """Exact provider values of the providers-as-players game, one market draw per seed.

    For every seed ``ms`` a market is drawn (:func:`make_data_market` with ``block_half``
    points per half-provider block and ``block_test_per_class`` test digits per class); its
    eight lineage blocks (:data:`BLOCKS`) are the players, and ``U(G)`` is the test accuracy of
    a ``block_k``-NN classifier trained on the pooled blocks of ``G``
    (:class:`CoalitionModelUtility`, ``U(∅) = empty_value``). All ``2**8`` coalition
    utilities are tabulated once, and every value is exact (no Monte Carlo):

    * SV: :func:`shapley_exact`;
    * WSV (b=8): :func:`wsv_exact` on the ordered partition (Owner, the rest) with
      ``λ = 8**c``;
    * PSV: :func:`pasv_exact` on the closure of :data:`BLOCK_EDGES`, equal weights;
    * PASV b: :func:`pasv_exact` with block weights ``λ = b**c[provider]`` for each ``b`` in
      ``weight_bases``,

    all by linear-extension enumeration of eq. 4 (random order values, eq. 1). Block values
    are summed per provider.

    Parameters
    ----------
    market_seeds : iterable of int
        One market draw per seed (each a ``random_state`` of :func:`make_data_market`).
    block_half, block_test_per_class : int
        Passed to :func:`make_data_market`.
    block_k : int
        Neighbours of the k-NN classifier, >= 1.
    weight_bases : sequence of float
        The PASV weight bases ``b`` (finite, > 0).
    c : sequence of 5 floats
        Weight exponents of (Owner, Anchor, Booster, Copier, Poisoner); the paper's
        ``(0, 1, 0, 2, 2)``.
    empty_value : float
        ``U(∅)``.

    Returns
    -------
    (list of dict, list of ndarray, list of DataMarket)
        Rows ``seed, method, provider, value``; per market its game table ``U`` (shape
        ``(256,)``); the markets.

    References
    ----------
    .. [1] Lee et al., "Priority-Aware Shapley Value", ICML 2026 (arXiv:2602.09326), Sec. 5.1
       (providers valued by retraining), Table 1 and Fig. 5.
    """
    from sklearn.neighbors import KNeighborsClassifier

    block_k = _check_int(block_k, "block_k")
    c = np.asarray(c, dtype=float)
    if c.shape != (len(PROVIDERS),) or not np.all(np.isfinite(c)):
        raise ValueError(f"c must be {len(PROVIDERS)} finite exponents, one per provider {PROVIDERS}, got {c}")
    bases = [float(b) for b in weight_bases]
    if not all(math.isfinite(b) and b > 0 for b in bases):
        raise ValueError(f"weight_bases={list(weight_bases)!r} must be finite and > 0")
    nb = len(BLOCKS)
    R = precedence_closure(nb, BLOCK_EDGES)
    c_blocks = c[BLOCK_PROVIDER]  # (8,)
    rows, tables, markets = [], [], []
    for ms in market_seeds:
        market = make_data_market(block_half, block_test_per_class, random_state=ms)
        util = CoalitionModelUtility(
            lambda: KNeighborsClassifier(block_k),
            market.X,
            market.y,
            market.block,
            market.X_test,
            market.y_test,
            empty_value=empty_value,
        )
        U = game_table(util, nb)  # (256,)
        vals = {
            "SV": shapley_exact(U),
            "WSV (b=8)": wsv_exact(U, [[0], list(range(1, nb))], 8.0**c_blocks),
            "PSV": pasv_exact(U, R),
        }
        vals.update({f"PASV b={b:g}": pasv_exact(U, R, b**c_blocks) for b in bases})
        for method, v in vals.items():
            sums = np.bincount(BLOCK_PROVIDER, weights=v, minlength=len(PROVIDERS))
            rows += [dict(seed=ms, method=method, provider=PROVIDERS[j], value=float(sums[j])) for j in range(len(PROVIDERS))]
        tables.append(U)
        markets.append(market)
    return rows, tables, markets
