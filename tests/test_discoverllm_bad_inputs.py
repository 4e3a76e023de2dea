"""Bad input to icml26.discoverllm: a message naming an unknown dimension (as a dict or in free
text), unknown kinds, paths outside the option tree, bad sizes and seeds give a clear
ValueError/TypeError from icml26 itself."""

from __future__ import annotations

import numpy as np
import torch
from badinput import covers, exempt, rejects
from hypothesis import given, settings
from hypothesis import strategies as st

from icml26 import discoverllm as D
from icml26.discoverllm.simulator import IntentNode, Message

FAST = settings(max_examples=20, deadline=None, derandomize=True)
TASK = D.TaskConfig()

exempt("discoverllm.simulator.Message", "a frozen record; IntentSimulator.parse validates it (covered)")
exempt("discoverllm.simulator.UserReply", "a frozen record the simulator builds")
exempt("discoverllm.simulator.StepResult", "a frozen record the simulator builds")
exempt("discoverllm.policy.Episode", "a record filled by run_episodes")
exempt("discoverllm.policy.TaskConfig", "a frozen record; the simulator and assistant it builds check its fields (covered)")
exempt("discoverllm.assistant.TokenCosts", "a frozen record of message lengths; step() checks the token count (covered)")


def sim():
    s = TASK.simulator(random_state=0)
    s.reset()
    return s


@covers("discoverllm.simulator.IntentSimulator")
@FAST
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12).filter(lambda d: d not in TASK.dims))
def test_message_naming_unknown_dimension(dim):
    s = sim()
    rejects(s.step, Message("artifact", ({dim: (0, 0)},), 10), match=f"unknown dimension '{dim}'.*subject")
    rejects(s.step, {"kind": "question", "options": [{dim: (1,)}], "tokens": 10}, match="unknown dimension")


@covers("discoverllm.adapter.parse_message", "discoverllm.adapter.run_dialogue")
@FAST
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=10).filter(lambda d: d not in TASK.dims))
def test_free_text_naming_unknown_dimension(dim):
    rejects(D.parse_message, f"Option 1: {dim}=a.b, subject=a", TASK.dims, match=f"unknown dimension '{dim}'")
    rejects(D.parse_message, f"Do you want {dim}=c?", TASK.dims, match="unknown dimension")
    rejects(D.run_dialogue, lambda h: f"Would you like {dim}=a?", TASK.simulator(), turns=2, match="unknown dimension")


def test_simulator_bad_messages():
    s = sim()
    rejects(s.step, Message("draft", ({"subject": (0,)},), 10), match="kind='draft'")
    rejects(s.step, Message("artifact", ({"subject": (0, 9)},), 10), match="not in the option tree")
    rejects(s.step, Message("artifact", ({"subject": (0, 0, 0)},), 10), match="not in the option tree")
    rejects(s.step, Message("artifact", ({"subject": (0,)},), -3), match="tokens")
    rejects(s.step, {"kind": "artifact", "options": []}, match="missing")
    rejects(s.step, "hello", match="Message or a dict")
    rejects(s.step, Message("artifact", (["subject"],), 10), match="map dimension")
    rejects(D.IntentSimulator(("a",)).step, Message("question", ({"a": ()},), 1), match="reset")


def test_simulator_bad_construction():
    rejects(D.IntentSimulator, ("a", "a"), match="distinct")
    rejects(D.IntentSimulator, ("a b",), match="identifiers")
    rejects(D.IntentSimulator, ("a",), depth=0, match="depth")
    rejects(D.IntentSimulator, ("a",), branching=1, match="branching")
    rejects(D.IntentSimulator, ("a",), branching=30, match="branching")
    rejects(D.IntentSimulator, ("a",), update_prob=0.0, match="update_prob")
    rejects(D.IntentSimulator, ("a",), lam=-1.0, match="lam")
    rejects(D.IntentSimulator, ("a",), hierarchies=[D.chain_hierarchy("b", (0,))], match="one IntentNode root per dimension")
    rejects(D.IntentSimulator, ("a",), random_state="x", match="random_state")


@covers(
    "discoverllm.simulator.hierarchy_score",
    "discoverllm.simulator.chain_hierarchy",
    "discoverllm.simulator.path_label",
    "discoverllm.simulator.IntentNode",
)
def test_tree_helpers():
    rejects(D.hierarchy_score, [IntentNode("a", ())], "happiness", match="attr='happiness'")
    rejects(D.chain_hierarchy, "a", ("x",), match="index")
    rejects(D.chain_hierarchy, "a", (-1,), match="index")
    rejects(D.path_label, "a", (30,), match="index")
    rejects(D.path_label, 3, (0,), match="dim")
    rejects(IntentNode, "a", (0,), aware=0.7, match="aware")
    rejects(IntentNode, "a", (0,), satisfied=2, match="satisfied")


@covers("discoverllm.reward.discovery_reward", "discoverllm.reward.token_penalty")
@FAST
@given(st.sampled_from([np.nan, np.inf, "1", None]))
def test_reward_bad_numbers(x):
    rejects(D.discovery_reward, x, 10)
    rejects(D.token_penalty, x)
    rejects(D.token_penalty, -1, match="tokens")
    rejects(D.token_penalty, 10, tau=-5.0, match="tau")


@covers("discoverllm.assistant.SymbolicAssistant")
def test_assistant_bad_actions():
    a = TASK.assistant(random_state=0)
    rejects(a.compose, 6, match="action=6")
    rejects(a.compose, -1, match="action")
    rejects(a.compose, 1.5, match="action")
    rejects(D.SymbolicAssistant, TASK.dims, 0, 4, match="depth")


@covers(
    "discoverllm.policy.ResponseTypePolicy",
    "discoverllm.policy.run_episode",
    "discoverllm.policy.run_episodes",
    "discoverllm.policy.train_response_policy",
)
def test_policy_and_rollout_bad_inputs():
    p = D.ResponseTypePolicy(TASK.n_features, random_state=0)
    rejects(p.probs, np.zeros((2, 3)), match="shape")
    rejects(D.ResponseTypePolicy, 0, match="n_features")
    rejects(D.run_episodes, TASK, None, sim_seeds=[1, 2], random_states=[1], match="same length")
    rejects(D.run_episode, TASK, None, sim_seed=0, random_state=-1, match="random_state")
    rejects(D.train_response_policy, TASK, iterations=0, match="iterations")
    rejects(D.train_response_policy, TASK, group_size=1, match="group_size")
    rejects(D.train_response_policy, TASK, lr=0.0, match="lr")


@covers("discoverllm.policy.response_type_advantages", "discoverllm.policy.response_type_objective")
def test_pg_bad_inputs():
    rejects(D.response_type_advantages, [1.0, 2.0], [0], match="same length")
    rejects(D.response_type_advantages, [1.0, np.nan], [0, 0], match="finite")
    rejects(D.response_type_advantages, [1.0, 2.0], [0, 0], eps=0.0, match="eps")
    rejects(D.response_type_advantages, [1.0, 2.0], [0, 0], sd="batch", match="sd")
    rejects(D.response_type_advantages, [1.0, 2.0], [0, 1], match="at least 2")
    lp = torch.zeros(3)
    rejects(D.response_type_objective, lp, torch.tensor([0, 1]), torch.zeros(2), match="same length")
    rejects(D.response_type_objective, lp, torch.tensor([0, 1, 5]), torch.zeros(2), match="episode indices")
    rejects(D.response_type_objective, lp, torch.tensor([0, 0, 0]), torch.zeros(2), match="at least one step")


@covers("discoverllm.adapter.count_tokens", "discoverllm.adapter.render_message", "discoverllm.adapter.scripted_responder")
def test_adapter_bad_inputs():
    rejects(D.count_tokens, None, match="str")
    rejects(D.parse_message, b"Option 1: subject=a", TASK.dims, match="str")
    rejects(D.render_message, Message("question", ({"tone": ()},), 0), filler=-1, match="filler")
    rejects(D.scripted_responder, TASK.dims, 2, 4, [], match="schedule")
    rejects(D.scripted_responder, TASK.dims, 2, 4, [9], match="schedule")
    r = D.scripted_responder(TASK.dims, 2, 4, [2])
    rejects(r, [], match="end with a user message")
    rejects(D.run_dialogue, "not callable", TASK.simulator(), match="callable")
    rejects(D.run_dialogue, lambda h: 42, TASK.simulator(), match="return a str")
    rejects(D.run_dialogue, lambda h: "hi", TASK.simulator(), turns=0, match="turns")


# ----------------------------------------------------------------------------- silent answers (issue 22)


@covers("discoverllm.adapter.parse_message", "discoverllm.assistant.SymbolicAssistant", "discoverllm.adapter.scripted_responder")
def test_a_single_string_of_dims_is_not_read_letter_by_letter():
    # parse_message(text, "subject") used to report the dimensions as the letters s, u, b, ...
    rejects(D.parse_message, "What subject do you have in mind?", "subject", match="single string")
    rejects(D.parse_message, "What subject?", ["subject", 3], match="non-empty str")
    rejects(D.SymbolicAssistant, "tone", 2, 4, match="single string")
    rejects(D.scripted_responder, "tone", 2, 4, [2], match="single string")
    assert D.parse_message("What subject do you have in mind?", ["subject"]).options == ({"subject": ()},)


@covers("discoverllm.simulator.IntentSimulator")
def test_step_after_the_episode_is_done_is_refused():
    root = D.chain_hierarchy("tone", (1,))
    s = D.IntentSimulator(("tone",), depth=1, branching=4, hierarchies=[root], random_state=0)
    s.reset()
    res = None
    for _ in range(20):  # offer the target until the user is content
        res = s.step(Message("artifact", ({"tone": (1,)},), 10))
        if res.done:
            break
    assert res is not None and res.done
    rejects(s.step, Message("artifact", ({"tone": (1,)},), 10), match="episode is done.*reset")
    s.reset()  # a new conversation may be stepped again
    s.step(Message("question", ({"tone": ()},), 5))
    assert s.turn == 1


@covers("discoverllm.policy.run_episodes")
def test_run_episodes_needs_at_least_one_conversation():
    # sim_seeds=[] used to return an empty list
    rejects(D.run_episodes, TASK, None, sim_seeds=[], random_states=[], match="sim_seeds is empty")
    rejects(D.run_episodes, TASK, None, sim_seeds="12", random_states="12", match="sequence")
    rejects(D.run_episodes, TASK, None, sim_seeds=[1.5], random_states=[0], match="sim_seeds entry")


@covers(
    "discoverllm.policy.summarize_episodes",
    "discoverllm.policy.turn_action_rewards",
    "discoverllm.policy.train_and_evaluate",
    "discoverllm.policy.train_response_policy",
    "discoverllm.simulator.IntentSimulator",
)
def test_authors_setting_helpers_bad_inputs():
    rejects(D.summarize_episodes, [], match="eps is empty")
    rejects(D.summarize_episodes, "ab", match="sequence of Episode")
    rejects(D.summarize_episodes, [1, 2], match="Episode objects")
    rejects(D.turn_action_rewards, TASK, None, sim_seeds="12", random_states=[1, 2], match="sequence")
    rejects(D.turn_action_rewards, TASK, None, sim_seeds=[1], random_states=[1, 2], match="same length")
    rejects(
        D.train_and_evaluate, TASK, iterations=0, groups=1, group_size=2, sim_seeds=[1], random_states=[1], match="iterations"
    )
    rejects(D.train_response_policy, TASK, iterations=1, reward="episode", match="reward='episode'")
    rejects(D.IntentSimulator, ("a",), awareness="max", match="awareness='max'")
