"""DiscoverLLM, mechanism only: the intent-discovery user simulator, the discovery reward,
response-type policies trained with group-normalised policy gradients, and an adapter that
lets a real LLM talk to the simulator.

Submodules: :mod:`~icml26.discoverllm.simulator`, :mod:`~icml26.discoverllm.reward`,
:mod:`~icml26.discoverllm.assistant`, :mod:`~icml26.discoverllm.policy`,
:mod:`~icml26.discoverllm.adapter`.

References
----------
Kim, T. S., Lee, Y., Yu, J., Chung, J. J. Y. and Kim, J. "DiscoverLLM: From Executing
Intents to Discovering Them." ICML 2026, arXiv:2602.03429; https://github.com/tsook/discoverllm.
"""

from .adapter import count_tokens, parse_message, render_message, run_dialogue, scripted_responder
from .assistant import ACTIONS, SymbolicAssistant, TokenCosts
from .policy import (
    BASELINES,
    Episode,
    ResponseTypePolicy,
    TaskConfig,
    response_type_advantages,
    response_type_objective,
    run_episode,
    run_episodes,
    summarize_episodes,
    train_and_evaluate,
    train_response_policy,
    turn_action_rewards,
)
from .reward import discovery_reward, token_penalty
from .simulator import IntentNode, IntentSimulator, Message, StepResult, UserReply, chain_hierarchy, hierarchy_score, path_label

__all__ = [
    "ACTIONS",
    "BASELINES",
    "Episode",
    "IntentNode",
    "IntentSimulator",
    "Message",
    "ResponseTypePolicy",
    "StepResult",
    "SymbolicAssistant",
    "TaskConfig",
    "TokenCosts",
    "UserReply",
    "chain_hierarchy",
    "count_tokens",
    "discovery_reward",
    "hierarchy_score",
    "parse_message",
    "path_label",
    "render_message",
    "response_type_advantages",
    "response_type_objective",
    "run_dialogue",
    "run_episode",
    "run_episodes",
    "scripted_responder",
    "summarize_episodes",
    "train_and_evaluate",
    "token_penalty",
    "train_response_policy",
    "turn_action_rewards",
]
