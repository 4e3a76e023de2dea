"""Locate-then-edit parameter editing (chapter 12): OneLayer (ROME-style), MEMIT (with and
without the division of the residual), forward replay (FE), and causal tracing to find
the layers that store a fact.

The package holds :mod:`icml26.fwdedit.editing` (the editors and their shared closed
form), :mod:`icml26.fwdedit.evaluation` (the metrics, the Jacobian diagnostic and the
tune-then-test protocol) and :mod:`icml26.fwdedit.locate` (ROME's causal
tracing and the choice of edited layers from it); every public name is importable from
``icml26.fwdedit``.

References
----------
Liu, Liu, Deng, Teh and Lee, "From Backward Spreading to Forward Replay: Revisiting Target
Construction in LLM Parameter Editing", ICML 2026, arXiv:2605.00358; code
https://github.com/jugechengzi/FE. Meng et al., "Mass-Editing Memory in a Transformer"
(MEMIT), ICLR 2023; Meng et al., "Locating and Editing Factual Associations in GPT"
(ROME), NeurIPS 2022.
"""

# the private helpers (_apply ... _target_id) are re-exported for the tests
from .editing import (  # noqa: F401
    METHODS,
    EditConfig,
    EditResult,
    _apply,
    _blocks,
    _contexts,
    _keys_and_hidden,
    _prompt_ids,
    _requests,
    _run,
    _subject_hidden,
    _target_id,
    anchor_efficacy,
    collect_keys,
    edit,
    key_covariance,
    layer_update,
    mlp_projections,
    optimise_anchor,
    optimise_anchors,
)
from .evaluation import SELECTIONS, edit_metrics, jacobian_cosine, next_token_logprobs, tune_and_test
from .locate import TRACE_KINDS, causal_trace, critical_layers, edit_window

__all__ = [
    "METHODS",
    "SELECTIONS",
    "TRACE_KINDS",
    "EditConfig",
    "EditResult",
    "anchor_efficacy",
    "causal_trace",
    "collect_keys",
    "critical_layers",
    "edit",
    "edit_metrics",
    "edit_window",
    "jacobian_cosine",
    "key_covariance",
    "layer_update",
    "mlp_projections",
    "next_token_logprobs",
    "optimise_anchor",
    "optimise_anchors",
    "tune_and_test",
]
