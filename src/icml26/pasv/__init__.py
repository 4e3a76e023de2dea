"""Priority-Aware Shapley Value (PASV): exact values, an adjacent-swap MH sampler, data valuation.

Reference: K. Lee, Z. Liu, W. Tang, Y. Zhang, "Priority-Aware Shapley Value", ICML 2026,
arXiv:2602.09326. Equation numbers below are the paper's. No code accompanies the paper;
everything here is re-derived from it.

The package has one module per concern; everything public is importable from here:

:mod:`~icml26.pasv.posets`
    Precedence closures, linear extensions and the PASV order distribution (eq. 4).
:mod:`~icml26.pasv.games`
    The :class:`Utility` protocol, :func:`game_table`, :class:`CachedUtility`,
    :func:`prefix_values`.
:mod:`~icml26.pasv.exact`
    Exact SV, random order values, PASV/PSV, WSV, and the DP :class:`PasvDP`.
:mod:`~icml26.pasv.sampling`
    The adjacent-swap MH sampler (Alg. 1) and the uniform / rejection baselines.
:mod:`~icml26.pasv.estimation`
    Monte Carlo values (eq. 1), :func:`pasv_mc`, :func:`priority_sweep`.
:mod:`~icml26.pasv.mixing`
    The mixing diagnostic and the sampler experiments (:func:`mixing_runs`,
    :func:`sampler_efficiency`).
:mod:`~icml26.pasv.markets`
    The digits data market, its utilities and the market experiments (:func:`value_markets`,
    :func:`value_block_markets`).
:mod:`~icml26.pasv.features`
    Feature attribution over the diabetes features (:func:`feature_sweep_shift`).

Each module imports only modules listed above it (and the private input checks, ``_checks``).

Conventions
-----------
Players are ``0 .. n-1``. A precedence relation (a DAG / partial order) is stored as its
strict transitive closure ``R``: a boolean ``(n, n)`` array with ``R[i, j]`` true iff
``i`` must come before ``j`` (``i ≺ j``). Every function that takes ``R`` checks that it
is one (square, boolean, irreflexive, transitive, hence acyclic) and raises
``ValueError`` naming the cycle or the missing pair otherwise; :func:`precedence_closure`
builds it from edges. An order ``π`` is an int array holding the players in arrival
order; ``S_t = {π_1, .., π_t}`` is the prefix of length ``t``. Coalitions are boolean
masks of shape ``(n,)`` or, for exact computations over all ``2**n`` coalitions, the
bitmask ``sum(2**i for i in S)``; a *game table* ``U`` has length ``2**n`` and is
indexed by bitmask.

Utilities follow one protocol, :class:`Utility`: an attribute ``n`` and
``__call__(mask)`` taking **one** coalition, a boolean mask of shape ``(n,)``, and
returning a float. Batches go through :func:`game_table` (all or some coalitions) and
:func:`prefix_values` (every prefix of many orders; a utility may offer a faster
``values_along(orders)``).

Randomness: functions and classes that draw take ``random_state`` (int, Generator or
None), converted by :func:`icml26._common.check_random_state`.

The PASV order distribution (eq. 4) on the linear extensions ``Π_⪯`` is

.. math:: p(π) \\propto \\prod_{t=1}^{n} \\frac{|M_t|\\, λ_{π_t}}{\\sum_{k \\in M_t} λ_k},
          \\qquad M_t = \\max_⪯(S_t) = \\{i \\in S_t : \\nexists j \\in S_t,\\ i ≺ j\\},

and every value here is a random order value (eq. 1),
``ψ_i(U) = E_{π∼p}[U(π^i ∪ {i}) − U(π^i)]``. Equal weights give the precedence Shapley
value PSV (Prop. 3.1), an ordered partition gives the weighted Shapley value WSV (Prop. 3.2),
and the empty DAG with equal weights the Shapley value SV.
"""

from __future__ import annotations

from .estimation import marginal_contributions, pasv_mc, priority_sweep, rov_estimate
from .exact import PasvDP, feasible_masks, pasv_exact, rov_exact, shapley_exact, wsv_exact
from .features import DIABETES_FEATURES as DIABETES_FEATURES  # public, outside __all__ as before
from .features import ImputedFeatureUtility, diabetes_dags, feature_sweep_shift
from .games import CachedUtility, Utility, game_table, prefix_values
from .markets import (
    BLOCK_EDGES,
    BLOCKS,
    PROVIDERS,
    CoalitionModelUtility,
    DataMarket,
    KNNUtility,
    make_data_market,
    value_block_markets,
    value_markets,
)
from .markets import BLOCK_PROVIDER as BLOCK_PROVIDER  # public, outside __all__ as before
from .mixing import mixing_runs, pairwise_discrepancy_trace, sampler_efficiency
from .posets import (
    block_closure,
    is_linear_extension,
    linear_extensions,
    maximal_elements,
    order_distribution,
    order_log_weights,
    ordered_partition_closure,
    precedence_closure,
    random_dag,
    topological_order,
)
from .sampling import AdjacentSwapSampler, sample_linear_extensions_rejection, uniform_permutations

__all__ = [
    "value_markets",
    "value_block_markets",
    "feature_sweep_shift",
    "mixing_runs",
    "sampler_efficiency",
    "Utility",
    "precedence_closure",
    "block_closure",
    "random_dag",
    "ordered_partition_closure",
    "topological_order",
    "is_linear_extension",
    "linear_extensions",
    "maximal_elements",
    "order_log_weights",
    "order_distribution",
    "feasible_masks",
    "game_table",
    "shapley_exact",
    "rov_exact",
    "pasv_exact",
    "wsv_exact",
    "PasvDP",
    "AdjacentSwapSampler",
    "sample_linear_extensions_rejection",
    "uniform_permutations",
    "CachedUtility",
    "prefix_values",
    "rov_estimate",
    "priority_sweep",
    "marginal_contributions",
    "pasv_mc",
    "DataMarket",
    "make_data_market",
    "KNNUtility",
    "CoalitionModelUtility",
    "pairwise_discrepancy_trace",
    "diabetes_dags",
    "ImputedFeatureUtility",
    "BLOCKS",
    "BLOCK_EDGES",
    "PROVIDERS",
]

_PAPER = 'K. Lee, Z. Liu, W. Tang, Y. Zhang, "Priority-Aware Shapley Value", ICML 2026, arXiv:2602.09326'
