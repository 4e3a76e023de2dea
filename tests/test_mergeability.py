"""icml26.mergeability against exact oracles and against peft's merge utilities."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from peft.utils import merge_utils as pm

from icml26 import mergeability as mg
from icml26._common import seed_from, torch_generator

SMALL = [("identity", "parity"), ("hflip", "digit"), ("invert", "mod3"), ("noise", "ge5")]


@pytest.fixture(scope="module")
def setup4():
    torch.set_num_threads(1)
    tasks = mg.make_digit_tasks(SMALL, random_state=1)
    base = mg.pretrain_backbone(tasks.X_pretrain, tasks.y_pretrain, hidden=32, epochs=5, random_state=1)
    ft = mg.finetune_tasks(base, tasks, epochs=3, random_state=1)
    return tasks, base, ft


def _tvs(rng, shapes, n=2):
    return [{k: torch.from_numpy(rng.normal(size=s)) for k, s in shapes.items()} for _ in range(n)]


SHAPES = {"w": (5, 4), "b": (5,)}


# ----------------------------------------------------------------------------- direct implementations


def ties_direct(flat: list[np.ndarray], density: float) -> np.ndarray:
    """TIES by the paper's three steps on flat vectors: trim, elect sign, disjoint mean."""
    trimmed = []
    for v in flat:
        k = int(density * v.size)
        keep = np.argsort(-np.abs(v), kind="stable")[:k]
        t = np.zeros_like(v)
        t[keep] = v[keep]
        trimmed.append(t)
    S = np.stack(trimmed)
    elected = np.where(S.sum(0) >= 0, 1.0, -1.0)
    agree = np.sign(S) == elected
    return (S * agree).sum(0) / np.maximum(agree.sum(0), 1)


def test_ties_matches_direct_implementation():
    rng = np.random.default_rng(0)
    base = {k: torch.from_numpy(rng.normal(size=s)) for k, s in SHAPES.items()}
    tvs = _tvs(rng, SHAPES, 3)
    merged = mg.merge_ties(base, tvs, density=0.2, lam=1.0)
    flat = [np.concatenate([tv[k].numpy().ravel() for k in SHAPES]) for tv in tvs]
    want = ties_direct(flat, 0.2)
    got = np.concatenate([(merged[k] - base[k]).numpy().ravel() for k in SHAPES])
    np.testing.assert_allclose(got, want, atol=1e-12)
    # the peft function itself, on the same flat tensors
    ref = pm.ties([torch.from_numpy(f) for f in flat], torch.ones(3, dtype=torch.float64), density=0.2)
    np.testing.assert_allclose(ref.numpy(), want, atol=1e-12)


def test_authors_ties_is_per_tensor_direct_ties_scaled_by_0_3():
    """The authors' TIES (merge_pair's): the direct three steps within each tensor, times 0.3."""
    rng = np.random.default_rng(3)
    base = {k: torch.from_numpy(rng.normal(size=s)) for k, s in SHAPES.items()}
    tvs = _tvs(rng, SHAPES, 2)
    merged = mg.merge_pair("ties", base, tvs)
    assert mg.TIES_AUTHORS == {"density": 0.2, "lam": 0.3, "per_tensor": True}
    for k in SHAPES:
        want = 0.3 * ties_direct([tv[k].numpy().ravel() for tv in tvs], 0.2)
        np.testing.assert_allclose((merged[k] - base[k]).numpy().ravel(), want, atol=1e-12)
    # and it differs from the global trim on these vectors
    glob = mg.merge_ties(base, tvs, density=0.2, lam=0.3)
    assert not all(torch.allclose(glob[k], merged[k]) for k in SHAPES)


def test_authors_task_arithmetic_alpha_is_a_direct_sum():
    """Task arithmetic at the authors' fixed alpha = 0.3 is theta_0 + 0.3 (tau_a + tau_b)."""
    rng = np.random.default_rng(4)
    base = {k: torch.from_numpy(rng.normal(size=s)) for k, s in SHAPES.items()}
    tvs = _tvs(rng, SHAPES, 2)
    merged = mg.merge_pair("arithmetic", base, tvs, alpha=0.3)
    for k in SHAPES:
        np.testing.assert_allclose(merged[k].numpy(), (base[k] + 0.3 * (tvs[0][k] + tvs[1][k])).numpy(), atol=1e-12)


def test_loto_tol_is_used():
    """loto_mergeability takes the authors' fitting settings (tol 1e-5, patience 100, 2000 steps) and rejects a negative tol."""
    rng = np.random.default_rng(5)
    pairs = mg.task_pairs(5)
    M = rng.normal(size=(len(pairs), 3))
    y = M @ np.array([1.0, -0.5, 0.0]) + 0.3 * rng.normal(size=len(pairs))
    a = mg.loto_mergeability(M, y, pairs, lam=0.1, random_state=0, **mg.LOTO_AUTHORS)
    b = mg.loto_mergeability(M, y, pairs, lam=0.1, random_state=0)
    assert mg.LOTO_AUTHORS == {"max_steps": 2000, "patience": 100, "tol": 1e-5}
    assert a.coef.shape == b.coef.shape and np.all(np.isfinite(a.coef))
    with pytest.raises(ValueError):
        mg.loto_mergeability(M, y, pairs, tol=-1.0)


def test_ties_lambda_scales_and_all_agreeing_signs_give_mean():
    base = {"w": torch.zeros(2, 2)}
    tvs = [{"w": torch.tensor([[1.0, 2.0], [3.0, 4.0]])}, {"w": torch.tensor([[3.0, 2.0], [1.0, 4.0]])}]
    m = mg.merge_ties(base, tvs, density=0.999, lam=2.0)  # density just below 1: trims floor(0.999*4) = 3 entries
    # top-3 of each: [2,3,4] and [3,2,4] (ties by topk order) -> compare with the direct version
    want = ties_direct([tv["w"].numpy().ravel() for tv in tvs], 0.999)
    np.testing.assert_allclose(m["w"].numpy().ravel(), 2.0 * want, atol=1e-6)


def test_dare_matches_direct_implementation_with_the_same_masks():
    rng = np.random.default_rng(1)
    base = {k: torch.from_numpy(rng.normal(size=s)) for k, s in SHAPES.items()}
    tvs = _tvs(rng, SHAPES, 2)
    merged = mg.merge_dare(base, tvs, drop=0.9, random_state=7)
    flat = [torch.cat([tv[k].reshape(-1) for k in SHAPES]) for tv in tvs]
    torch.manual_seed(seed_from(7))
    masks = [torch.bernoulli(torch.full_like(f, 0.1)) for f in flat]  # peft draws one mask per tensor, in order
    want = sum(0.5 * f * mk / 0.1 for f, mk in zip(flat, masks, strict=True))
    got = torch.cat([(merged[k] - base[k]).reshape(-1) for k in SHAPES])
    torch.testing.assert_close(got, want, atol=1e-12, rtol=0)
    # reproducible, and the caller's global generator is left alone
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    again = mg.merge_dare(base, tvs, drop=0.9, random_state=7)
    after = torch.rand(1)
    assert torch.equal(before, after)
    for k in SHAPES:
        assert torch.equal(again[k], merged[k])


def test_dare_is_unbiased_in_expectation():
    base = {"w": torch.zeros(200, 50, dtype=torch.float64)}
    tvs = [{"w": torch.ones(200, 50, dtype=torch.float64)}, {"w": 3 * torch.ones(200, 50, dtype=torch.float64)}]
    m = mg.merge_dare(base, tvs, drop=0.5, random_state=0)
    assert abs(float(m["w"].mean()) - 2.0) < 0.05  # mean of the rescaled sparse updates


def test_task_arithmetic_and_weight_average_are_the_sums():
    rng = np.random.default_rng(2)
    base = {k: torch.from_numpy(rng.normal(size=s)) for k, s in SHAPES.items()}
    tvs = _tvs(rng, SHAPES, 2)
    ta = mg.merge_task_arithmetic(base, tvs, 0.7)
    wa = mg.merge_weight_average(base, tvs)
    for k in SHAPES:
        torch.testing.assert_close(ta[k], base[k] + 0.7 * (tvs[0][k] + tvs[1][k]))
        torch.testing.assert_close(wa[k], base[k] + 0.5 * (tvs[0][k] + tvs[1][k]))
        torch.testing.assert_close(mg.merge_task_arithmetic(base, tvs, 0.5)[k], wa[k])


def test_tsv_of_orthogonal_low_rank_updates_is_their_sum():
    """Updates with orthogonal row and column spaces and rank <= k survive TSV unchanged."""
    rng = np.random.default_rng(3)
    Q1, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    Q2, _ = np.linalg.qr(rng.normal(size=(6, 6)))
    d1 = Q1[:, :3] @ np.diag([3.0, 1.0, 0.7]) @ Q2[:, :3].T  # rank k = min(8, 6) // 2 = 3 each
    d2 = Q1[:, 3:6] @ np.diag([2.0, 0.5, 0.2]) @ Q2[:, 3:6].T
    base = {"w": torch.zeros(8, 6, dtype=torch.float64), "b": torch.zeros(8, dtype=torch.float64)}
    tvs = [
        {"w": torch.from_numpy(d1), "b": torch.ones(8, dtype=torch.float64)},
        {"w": torch.from_numpy(d2), "b": 3 * torch.ones(8, dtype=torch.float64)},
    ]
    m = mg.merge_tsv(base, tvs)
    np.testing.assert_allclose(m["w"].numpy(), d1 + d2, atol=1e-10)
    np.testing.assert_allclose(m["b"].numpy(), 2.0, atol=1e-12)


def test_tsv_keeps_a_fraction_of_components_and_orthogonal_factors():
    rng = np.random.default_rng(4)
    base = {"w": torch.zeros(10, 10, dtype=torch.float64)}
    tvs = [{"w": torch.from_numpy(rng.normal(size=(10, 10)))} for _ in range(2)]
    m = mg.merge_tsv(base, tvs)["w"].numpy()
    # rank of the merged update is at most T * floor(10 / T) = 10; singular values are the kept ones
    kept = np.sort(np.concatenate([np.linalg.svd(tv["w"].numpy(), compute_uv=False)[:5] for tv in tvs]))[::-1]
    np.testing.assert_allclose(np.linalg.svd(m, compute_uv=False), kept, rtol=1e-8)


# ----------------------------------------------------------------------------- metrics


@pytest.mark.parametrize("grad", [dict(), dict(grad_batch=4), dict(grad_samples="first-train")])
def test_vectorised_metrics_equal_the_pairwise_loop(setup4, grad):
    tasks, base, ft = setup4
    pairs = mg.task_pairs(tasks.n_tasks)
    fast = mg.pairwise_metrics(base, ft, tasks, pairs, n_grad=6, n_act=5, subspace_k=4, sv_k=8, **grad)
    slow = mg.pairwise_metrics_loop(base, ft, tasks, pairs, n_grad=6, n_act=5, subspace_k=4, sv_k=8, **grad)
    assert fast.shape == (6, len(mg.METRIC_NAMES)) == (6, 28)
    np.testing.assert_allclose(fast, slow, rtol=1e-8, atol=1e-10)


def test_authors_gradient_draws_are_python_random_reset_per_pair():
    import random

    random.seed(42)
    first = sorted(random.sample(range(50), 10))
    second = sorted(random.sample(range(50), 10))
    a, b = mg.gradient_sample_draws(50, 10, grad_seed=42)
    assert a.tolist() == first and b.tolist() == second and a.tolist() != b.tolist()
    # the seed is reset: the same two sets every call
    a2, b2 = mg.gradient_sample_draws(50, 10)
    assert a2.tolist() == first and b2.tolist() == second


def test_gradient_weights_of_the_authors_batches():
    enc, inp = mg.gradient_weights(10, 8)
    # batch means summed over batches, divided by n: 1/80 for the first eight, 1/20 for the last two
    np.testing.assert_allclose(enc, [1 / 80] * 8 + [1 / 20] * 2)
    np.testing.assert_allclose(inp, [1 / 8] * 8 + [1 / 2] * 2)
    assert enc[-1] / enc[0] == pytest.approx(4.0)
    enc, inp = mg.gradient_weights(10, None)
    np.testing.assert_allclose(enc, 0.1) and np.testing.assert_allclose(inp, 0.1)
    enc, _ = mg.gradient_weights(8, 8)  # one full batch: every sample alike
    np.testing.assert_allclose(enc, 1 / 64)


def _direct_gradients(base, ft, tasks, t, X, y, batch):
    """The authors' loop for one model: batches in order, batch-mean loss, encoder grads summed then / n."""
    n = len(y)
    p = {k: ft.params[k][t].double().clone().requires_grad_(True) for k in base}
    hw, hb = ft.head_weight[t].double(), ft.head_bias[t].double()
    enc_sum, inputs = None, []
    for lo in range(0, n, batch or n):
        xb = torch.from_numpy(X[lo : lo + (batch or n)]).double().requires_grad_(True)
        h = torch.relu(xb @ p["fc1.weight"].T + p["fc1.bias"])
        h = torch.relu(h @ p["fc2.weight"].T + p["fc2.bias"])
        z = (h @ hw.T + hb)[:, : tasks.n_classes[t]]
        loss = torch.nn.functional.cross_entropy(z, torch.from_numpy(y[lo : lo + (batch or n)]))
        g = torch.autograd.grad(loss, [*p.values(), xb])
        flat = torch.cat([q.reshape(-1) for q in g[:-1]])
        enc_sum = flat if enc_sum is None else enc_sum + flat
        inputs.append(g[-1].reshape(-1))
    return enc_sum / (n if batch else 1), torch.cat(inputs)


@pytest.mark.parametrize("batch", [None, 4])
def test_gradient_metrics_equal_a_direct_computation(setup4, batch):
    tasks, base, ft = setup4
    n = 6
    fa, fb = mg.gradient_sample_draws(tasks.X_test.shape[1], n)
    M = mg.pairwise_metrics(base, ft, tasks, [(1, 3)], n_grad=n, n_act=5, subspace_k=4, sv_k=8, grad_batch=batch)
    ga, ia = _direct_gradients(base, ft, tasks, 1, tasks.X_test[1, fa], tasks.y_test[1, fa], batch)
    gb, ib = _direct_gradients(base, ft, tasks, 3, tasks.X_test[3, fb], tasks.y_test[3, fb], batch)
    col = {n_: M[0, i] for i, n_ in enumerate(mg.METRIC_NAMES)}
    assert col["encoder_gradient_l2_distance"] == pytest.approx(float((ga - gb).norm()), rel=1e-10)
    assert col["input_gradient_l2_distance"] == pytest.approx(float((ia - ib).norm()), rel=1e-10)
    assert col["encoder_gradient_dot_product"] == pytest.approx(float(ga @ gb), rel=1e-10)
    # the authors' draws: the two tasks of a pair see different base images; the earlier version, the same
    assert fa.tolist() != fb.tolist()
    M0 = mg.pairwise_metrics(base, ft, tasks, [(1, 3)], n_grad=n, n_act=5, subspace_k=4, sv_k=8, grad_samples="first-train")
    g0a, _ = _direct_gradients(base, ft, tasks, 1, tasks.X_train[1, :n], tasks.y_train[1, :n], None)
    g0b, _ = _direct_gradients(base, ft, tasks, 3, tasks.X_train[3, :n], tasks.y_train[3, :n], None)
    assert M0[0, mg.METRIC_NAMES.index("encoder_gradient_l2_distance")] == pytest.approx(float((g0a - g0b).norm()), rel=1e-10)


def test_metric_closed_forms(setup4):
    tasks, base, ft = setup4
    M = mg.pairwise_metrics(base, ft, tasks, [(0, 1)])[0]
    col = dict(zip(mg.METRIC_NAMES, M, strict=True))
    ta, tb = (np.concatenate([(ft.params[k][t].double() - base[k].double()).numpy().ravel() for k in base]) for t in (0, 1))
    cos = ta @ tb / np.linalg.norm(ta) / np.linalg.norm(tb)
    assert math.isclose(col["task_vector_cosine_similarity"], cos, rel_tol=1e-9)
    assert math.isclose(col["weight_space_angle"], math.degrees(math.acos(cos)), rel_tol=1e-9)
    s = np.linalg.svd(np.stack([ta, tb]), compute_uv=False)
    p = s / s.sum()
    assert math.isclose(col["effective_rank"], math.exp(-(p * np.log(p)).sum()), rel_tol=1e-7)
    assert math.isclose(col["stable_rank"], s.sum() ** 2 / (s**2).sum(), rel_tol=1e-9)
    assert 1.0 <= col["effective_rank"] <= 2.0
    for n in ("right_subspace_overlap_top_k", "interaction_matrix_overlap_top_k"):
        assert 0.0 <= col[n] <= 1.0 + 1e-12


def test_identical_models_have_maximal_overlap(setup4):
    tasks, base, ft = setup4
    twin = mg.FineTuned(
        params={k: torch.stack([v[0], v[0]]) for k, v in ft.params.items()},
        head_weight=torch.stack([ft.head_weight[0]] * 2),
        head_bias=torch.stack([ft.head_bias[0]] * 2),
        test_accuracy=ft.test_accuracy[:2],
        val_accuracy=ft.val_accuracy[:2],
    )
    two = mg.make_digit_tasks(SMALL[:1] + [("hflip", "parity")], random_state=1)
    # the same model evaluated on the same task data: make both tasks' data the first task's
    same = mg.DigitTasks(
        names=("a", "b"),
        n_classes=np.array([2, 2]),
        X_pretrain=two.X_pretrain,
        y_pretrain=two.y_pretrain,
        **{f"{v}_{s}": np.stack([getattr(two, f"{v}_{s}")[0]] * 2) for v in "Xy" for s in ("train", "val", "test")},
    )
    # on the same samples (the earlier first-train choice); the authors' draws give the two sides different samples
    col = dict(zip(mg.METRIC_NAMES, mg.pairwise_metrics(base, twin, same, [(0, 1)], grad_samples="first-train")[0], strict=True))
    drawn = dict(zip(mg.METRIC_NAMES, mg.pairwise_metrics(base, twin, same, [(0, 1)])[0], strict=True))
    assert drawn["encoder_gradient_l2_distance"] > 1e-3 and drawn["task_vector_l2_distance"] == col["task_vector_l2_distance"]
    for n in (
        "task_vector_cosine_similarity",
        "right_subspace_overlap_top_k",
        "interaction_matrix_overlap_top_k",
        "encoder_gradient_cosine_similarity",
        "input_gradient_cosine_similarity",
        "activation_cosine_similarity",
    ):
        assert math.isclose(col[n], 1.0, rel_tol=1e-9), n
    for n in ("task_vector_l2_distance", "encoder_gradient_l2_distance", "input_gradient_l2_distance"):
        assert abs(col[n]) < 1e-6, n
    assert math.isclose(col["effective_rank"], 1.0, abs_tol=1e-6)


# ----------------------------------------------------------------------------- predictor


def test_pearson_predictor_recovers_a_planted_linear_relation():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(300, 6))
    w_true = np.array([0.5, -0.3, 0.0, 0.0, 0.2, 0.0])
    y = X @ w_true + 1.7
    w = mg.fit_pearson_l1(X, y, lam=0.0, max_steps=2000, random_state=0)
    cos = w @ w_true / np.linalg.norm(w) / np.linalg.norm(w_true)
    assert cos > 0.999  # Pearson is scale free: the direction is what is identified
    r = np.corrcoef(X @ w, y)[0, 1]
    assert r > 0.999
    # with an L1 weight the irrelevant metrics go to (exactly) zero and the signs are kept
    ws = mg.fit_pearson_l1(X, y, lam=0.5, random_state=0)
    assert np.all(ws[[2, 3, 5]] == 0) and np.all(np.sign(ws[[0, 1, 4]]) == np.sign(w_true[[0, 1, 4]]))


def test_mse_objective_recovers_scale():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(200, 3))
    w_true = np.array([0.4, -0.2, 0.1])
    w = mg.fit_pearson_l1(X, X @ w_true, lam=0.0, objective="mse", max_steps=1000, patience=1000, random_state=0)
    np.testing.assert_allclose(w, w_true, atol=0.02)


def test_loto_folds_use_training_statistics_only():
    rng = np.random.default_rng(2)
    pairs = mg.task_pairs(6)
    M = rng.normal(size=(len(pairs), 4))
    y = M @ np.array([1.0, -1.0, 0.0, 0.5]) + 0.1 * rng.normal(size=len(pairs))
    res = mg.loto_mergeability(M, y, pairs, lam=0.0, random_state=0)
    assert res.coef.shape == (6, 4) and res.fold_r.shape == (6,)
    assert np.all(res.fold_r > 0.8) and res.pooled_r > 0.5
    # fold 0 holds out task 0: its coefficients cannot depend on the pairs containing task 0
    M2, y2 = M.copy(), y.copy()
    val0 = [i for i, p in enumerate(pairs) if 0 in p]
    M2[val0] = 1e3 * rng.normal(size=(len(val0), 4))
    y2[val0] = rng.normal(size=len(val0))
    res2 = mg.loto_mergeability(M2, y2, pairs, lam=0.0, random_state=0)
    np.testing.assert_allclose(res2.coef[0], res.coef[0])


def test_batched_folds_equal_single_fits():
    """The batched LOTO fit equals fitting each fold alone (same init, same stopping)."""
    rng = np.random.default_rng(3)
    pairs = mg.task_pairs(5)
    M = rng.normal(size=(len(pairs), 3))
    y = M[:, 0] - M[:, 2] + rng.normal(size=len(pairs))
    res = mg.loto_mergeability(M, y, pairs, lam=0.1, random_state=4)
    gen = torch_generator(4)
    init = torch.randn(5, 3, generator=gen, dtype=torch.float64) * 0.1
    for f in range(5):
        tr = np.array([f not in p for p in pairs])
        Xtr = M[tr]
        lo, hi = Xtr.min(0), Xtr.max(0)
        Xs = (Xtr - lo) / (hi - lo) * 2 - 1
        w = init[f].clone().requires_grad_(True)
        opt = torch.optim.Adam([w], lr=0.01)
        best, wait = math.inf, 0
        Xt, yt = torch.from_numpy(Xs), torch.from_numpy(y[tr])
        for _ in range(1000):
            p = Xt @ w
            pc, yc = p - p.mean(), yt - yt.mean()
            loss = -(pc * yc).sum() / (torch.sqrt((pc**2).sum() * (yc**2).sum()) + 1e-8) + 0.1 * w.abs().sum()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if loss.item() < best - 1e-4:
                best, wait = loss.item(), 0
            else:
                wait += 1
            if wait >= 50:
                break
        want = w.detach().numpy().copy()
        want[np.abs(want) < 1e-3] = 0
        np.testing.assert_allclose(res.coef[f], want, atol=1e-10)


def test_driver_agreement():
    a = np.array([5.0, -4, 3, 2, 1, 0, 0])
    b = np.array([-5.0, 4, 0, 0, 0, 3, 2])
    ov, sg = mg.driver_agreement({"a": a, "b": b}, k=3)
    assert ov[0, 1] == pytest.approx(2 / 3) and sg[0, 1] == 0.0
    ov, sg = mg.driver_agreement({"a": a, "b": a}, k=5)
    assert ov[0, 1] == 1.0 and sg[0, 1] == 1.0


# ----------------------------------------------------------------------------- the pipeline


def test_tasks_and_finetunes(setup4):
    tasks, base, ft = setup4
    assert tasks.X_train.shape[0] == 4 and tasks.X_train.shape[2] == 64
    assert tasks.X_pretrain.shape[0] == 1797 // 2
    np.testing.assert_array_equal(tasks.n_classes, [2, 10, 3, 2])
    assert set(np.unique(tasks.y_train[2])) <= {0, 1, 2}
    # hflip of the identity images; invert is 1 - x
    assert np.all(ft.test_accuracy > 1 / tasks.n_classes)  # better than chance after a short fine-tune
    again = mg.finetune_tasks(base, tasks, epochs=3, random_state=1)
    for k in base:
        assert torch.equal(again.params[k], ft.params[k])


def test_transforms_are_what_they_say():
    t = mg.make_digit_tasks([("identity", "digit"), ("hflip", "digit"), ("rot90", "digit"), ("invert", "digit")], random_state=0)
    img = t.X_train[0].reshape(-1, 8, 8)
    np.testing.assert_array_equal(t.X_train[1].reshape(-1, 8, 8), img[:, :, ::-1])
    np.testing.assert_array_equal(t.X_train[2].reshape(-1, 8, 8), np.rot90(img, axes=(1, 2)))
    np.testing.assert_allclose(t.X_train[3], 1 - t.X_train[0])
    np.testing.assert_array_equal(t.y_train[0], t.y_train[1])


def test_score_pair_merges(setup4):
    tasks, base, ft = setup4
    pairs = [(0, 1), (2, 3)]
    res = mg.score_pair_merges(base, ft, tasks, pairs, random_state=0)
    assert set(res) == set(mg.MERGE_METHODS)
    for r in res.values():
        assert r["normalised"].shape == (2,) and np.all(r["normalised"] >= 0)
    assert set(res["arithmetic"]["alpha"]) <= {0.3, 0.5, 0.7, 1.0}
    # the TIES setting reaches the merge: the earlier global trim at scale 1 against a direct call
    glob = mg.score_pair_merges(base, ft, tasks, pairs, methods=["ties"], ties=mg.TIES_GLOBAL)
    tvs = [ft.task_vector(base, t) for t in range(tasks.n_tasks)]
    direct = [mg.merge_ties(base, [tvs[a], tvs[b]], density=0.2, lam=1.0, per_tensor=False) for a, b in pairs]
    acc = mg._pair_accuracy(direct, ft, tasks, pairs, "test")
    np.testing.assert_array_equal(glob["ties"]["accuracy"], acc)
    # one alpha: that alpha for every pair
    fixed = mg.score_pair_merges(base, ft, tasks, pairs, methods=["arithmetic"], alphas=[0.3])
    assert fixed["arithmetic"]["alpha"].tolist() == [0.3, 0.3]
    # a "merge" of a model with itself by weight averaging is the model: normalised accuracy 1
    self_pair = mg.FineTuned(
        params={k: torch.stack([v[0], v[0]]) for k, v in ft.params.items()},
        head_weight=torch.stack([ft.head_weight[0]] * 2),
        head_bias=torch.stack([ft.head_bias[0]] * 2),
        test_accuracy=np.repeat(ft.test_accuracy[0], 2),
        val_accuracy=np.repeat(ft.val_accuracy[0], 2),
    )
    same = mg.DigitTasks(
        names=("a", "b"),
        n_classes=np.array([2, 2]),
        X_pretrain=tasks.X_pretrain,
        y_pretrain=tasks.y_pretrain,
        **{f"{v}_{s}": np.stack([getattr(tasks, f"{v}_{s}")[0]] * 2) for v in "Xy" for s in ("train", "val", "test")},
    )
    r = mg.score_pair_merges(base, self_pair, same, [(0, 1)], methods=["weight_avg", "tsv"])
    assert r["weight_avg"]["normalised"][0] == pytest.approx(1.0)


def test_sensitivity_fits_are_the_direct_calls(setup4):
    tasks, base, ft = setup4
    pairs = mg.task_pairs(tasks.n_tasks)
    kw = dict(n_grad=6, n_act=5, subspace_k=4, sv_k=8)
    merged = mg.score_pair_merges(base, ft, tasks, pairs, alphas=[0.3], random_state=0)
    M = mg.pairwise_metrics(base, ft, tasks, pairs, **kw)
    fit = dict(max_steps=50, patience=10, tol=1e-5)
    out = mg.sensitivity_fits(
        base,
        ft,
        tasks,
        pairs,
        M,
        merged,
        grad_variants={"before": dict(grad_samples="first-train")},
        metric_kw=kw,
        lam=0.5,
        fit=fit,
        random_state=3,
    )
    Mb = mg.pairwise_metrics(base, ft, tasks, pairs, **kw, grad_samples="first-train")
    np.testing.assert_array_equal(out["grad"]["before"]["M"], Mb)
    # only the six gradient columns differ from the primary metrics
    grad_cols = [i for i, n in enumerate(mg.METRIC_NAMES) if "gradient" in n]
    other = [i for i in range(len(mg.METRIC_NAMES)) if i not in grad_cols]
    np.testing.assert_array_equal(Mb[:, other], M[:, other])
    assert not np.allclose(Mb[:, grad_cols], M[:, grad_cols])
    direct = mg.loto_mergeability(Mb, merged["dare"]["normalised"], pairs, lam=0.5, random_state=3, **fit)
    np.testing.assert_array_equal(out["grad"]["before"]["loto"]["dare"].coef, direct.coef)
    glob = mg.score_pair_merges(base, ft, tasks, pairs, methods=["ties"], ties=mg.TIES_GLOBAL, random_state=3)["ties"]
    np.testing.assert_array_equal(out["merge"]["ties_global"]["target"]["normalised"], glob["normalised"])
    tuned = out["merge"]["arithmetic_tuned"]["target"]
    assert set(tuned["alpha"]) <= {0.3, 0.5, 0.7, 1.0}
    direct = mg.loto_mergeability(M, tuned["normalised"], pairs, lam=0.5, random_state=3, **fit)
    np.testing.assert_array_equal(out["merge"]["arithmetic_tuned"]["loto"].coef, direct.coef)
