"""The chapter's two generated tasks: high-rank regression (task A) and a tiny BERT classifier (task B).

References
----------
Ding et al., *COBRA*, ICML 2026 (settings reconstructed); Devlin et al., BERT, NAACL 2019.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .._common import RandomState, check_int, check_random_state, check_real, seed_from
from ._checks import _int_vector

# --------------------------------------------------------------------------- task A: high-rank regression


@dataclass
class RegressionTask:
    """Task A: a frozen base MLP and a target that differs by planted low-rank updates.

    Attributes
    ----------
    base : torch.nn.Sequential
        The frozen base network (float32).
    layer_names : list of str
        Names of its Linear layers (``"0"``, ``"2"``, ...), in order.
    costs : numpy.ndarray of int
        :math:`d^{in}_l + d^{out}_l` per layer.
    max_ranks : numpy.ndarray of int
        :math:`\\min(d^{in}_l, d^{out}_l)`.
    true_ranks : numpy.ndarray of int
        The planted perturbations' ranks.
    X_train, y_train, X_test, y_test : torch.Tensor
        Inputs (n, d_in) and targets (n, d_out).
    """

    base: nn.Sequential
    layer_names: list[str]
    costs: np.ndarray
    max_ranks: np.ndarray
    true_ranks: np.ndarray
    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    extra: dict = field(default_factory=dict)


def highrank_regression_task(
    true_ranks: Sequence[int],
    *,
    d_in: int = 32,
    width: int = 64,
    d_out: int = 4,
    sigma: float = 0.6,
    noise: float = 0.01,
    n_train: int = 2048,
    n_test: int = 1024,
    random_state: RandomState = None,
) -> RegressionTask:
    """Task A (R): regress a network that differs from the base by planted low-rank updates.

    The base is an MLP with ``len(true_ranks)`` Linear layers (tanh between them),
    weights :math:`\\mathcal N(0, 1.2^2/d^{in})`. The target network adds to layer
    :math:`l` the update :math:`\\Delta W_l = \\sigma \\sum_{i \\le r^*_l} u_i v_i^\\top` with
    orthonormal :math:`u_i, v_i`, so every planted direction has singular value
    :math:`\\sigma`; :math:`y = f_{\\text{target}}(x) + \\varepsilon`, :math:`x \\sim \\mathcal N(0, I)`.

    Parameters
    ----------
    true_ranks : sequence of int
        Planted rank per layer (0 = no change); at most ``min(d_in_l, d_out_l)``.
    d_in, width, d_out : int
        Input, hidden and output sizes.
    sigma : float
        Singular value of each planted direction.
    noise : float
        Standard deviation of the target noise.
    n_train, n_test : int
        Sample sizes.
    random_state : int, Generator or None

    Returns
    -------
    RegressionTask

    References
    ----------
    Ding et al., ICML 2026 ("high-rank regression", setting reconstructed).
    """
    tr = _int_vector(true_ranks, "true_ranks", low=0)
    if tr.size < 2:
        raise ValueError("true_ranks needs at least two layers")
    d_in, width, d_out = (check_int(v, k, low=1) for v, k in ((d_in, "d_in"), (width, "width"), (d_out, "d_out")))
    sigma = check_real(sigma, "sigma", lo=0.0)
    noise = check_real(noise, "noise", lo=0.0)
    n_train, n_test = check_int(n_train, "n_train", low=2), check_int(n_test, "n_test", low=1)
    rng = check_random_state(random_state)
    dims = [d_in] + [width] * (tr.size - 1) + [d_out]
    mx = np.array([min(a, b) for a, b in zip(dims[:-1], dims[1:], strict=True)])
    if np.any(tr > mx):
        raise ValueError(f"true_ranks {tr.tolist()} exceed the layers' largest ranks {mx.tolist()}")
    layers: list[nn.Module] = []
    names = []
    target_layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:], strict=True)):
        W = rng.normal(0.0, 1.2 / np.sqrt(a), size=(b, a))
        bvec = rng.normal(0.0, 0.1, size=b)
        U = np.linalg.qr(rng.normal(size=(b, b)))[0][:, : tr[i]]
        V = np.linalg.qr(rng.normal(size=(a, a)))[0][:, : tr[i]]
        dW = sigma * U @ V.T
        for dst, w in ((layers, W), (target_layers, W + dW)):
            lin = nn.Linear(a, b)
            with torch.no_grad():
                lin.weight.copy_(torch.tensor(w, dtype=torch.float32))
                lin.bias.copy_(torch.tensor(bvec, dtype=torch.float32))
            dst.append(lin)
            if i < tr.size - 1:
                dst.append(nn.Tanh())
        names.append(str(2 * i))
    base = nn.Sequential(*layers)
    target = nn.Sequential(*target_layers)
    for p in list(base.parameters()) + list(target.parameters()):
        p.requires_grad_(False)
    Xtr = torch.tensor(rng.normal(size=(n_train, d_in)), dtype=torch.float32)
    Xte = torch.tensor(rng.normal(size=(n_test, d_in)), dtype=torch.float32)
    with torch.no_grad():
        ytr = target(Xtr) + noise * torch.tensor(rng.normal(size=(n_train, d_out)), dtype=torch.float32)
        yte = target(Xte)
    costs = np.array([a + b for a, b in zip(dims[:-1], dims[1:], strict=True)])
    return RegressionTask(base, names, costs, mx, tr, Xtr, ytr, Xte, yte, {"target": target, "dims": dims})


# --------------------------------------------------------------------------- task B: tiny encoder


@dataclass
class EncoderTask:
    """Task B: a tiny BERT, pretrained as a masked LM on a generated corpus, and a labelled task.

    Attributes
    ----------
    model : transformers.BertForSequenceClassification
        The pretrained encoder with a fresh two-class head (frozen).
    module_names : list of str
        The adapted Linear modules (query, key, value, attention output, FFN in and out
        of every layer).
    costs, max_ranks : numpy.ndarray of int
        Per adapted module.
    X_train, y_train, X_test, y_test : torch.Tensor
        Token ids (n, L) and labels (n,).
    pad_id : int
        The pad token (its embedding is the conductance baseline).
    mlm_loss : numpy.ndarray
        Pretraining loss per step.
    """

    model: nn.Module
    module_names: list[str]
    costs: np.ndarray
    max_ranks: np.ndarray
    X_train: torch.Tensor
    y_train: torch.Tensor
    X_test: torch.Tensor
    y_test: torch.Tensor
    pad_id: int
    mlm_loss: np.ndarray


def _markov_corpus(rng: np.random.Generator, T: np.ndarray, n: int, length: int, first: int) -> np.ndarray:
    V = T.shape[0]
    out = np.empty((n, length), dtype=np.int64)
    out[:, 0] = rng.integers(0, V, size=n)
    cum = T.cumsum(1)
    for j in range(1, length):
        u = rng.random(n)[:, None]
        out[:, j] = np.minimum((u > cum[out[:, j - 1]]).sum(1), V - 1)
    return out + first


def marker_encoder_task(
    *,
    vocab: int = 32,
    seq_len: int = 16,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    pretrain_steps: int = 300,
    n_corpus: int = 4096,
    n_train: int = 2048,
    n_test: int = 1024,
    lr: float = 3e-3,
    marker_rate: float = 0.25,
    n_markers: int = 3,
    rule: str = "count",
    random_state: RandomState = None,
) -> EncoderTask:
    """Task B (R): the GLUE stand-in — a tiny BERT pretrained here, then a sequence task.

    Sentences come from a random sparse Markov chain over ``vocab`` word tokens. The
    encoder (``transformers.BertConfig``, no dropout) is pretrained for
    ``pretrain_steps`` Adam steps as a masked LM (15 % of tokens masked). The labelled
    task: does a sentence hold more tokens of a first marker set than of a second
    (``n_markers`` tokens each, sentences with a tie are dropped)? Sentences are prefixed by
    ``[CLS]``; the pooler and the head of ``BertForSequenceClassification`` start from
    fresh weights.

    Parameters
    ----------
    vocab, seq_len, hidden, layers, heads : int
        Word tokens, words per sentence and the encoder's size.
    pretrain_steps, n_corpus : int
        Masked-LM steps and corpus size.
    n_train, n_test : int
        Labelled examples.
    lr : float
        Pretraining learning rate.
    marker_rate : float in (0, 1)
        Fraction of a labelled sentence's tokens replaced by marker tokens: the lower,
        the smaller the typical count difference and the harder the task.
    n_markers : int
        Tokens in each of the two marker sets.
    rule : {"count", "halves"}
        ``"count"``: more tokens of the first marker set than of the second?
        ``"halves"``: more tokens of the first set in the first half of the sentence than
        in the second half (the second set's tokens are distractors; ties are dropped) —
        a position-dependent count, harder for a small encoder.
    random_state : int, Generator or None

    Returns
    -------
    EncoderTask

    References
    ----------
    Devlin et al., BERT, NAACL 2019 (masked LM); Ding et al., ICML 2026 (GLUE, replaced
    by this generated task).
    """
    import transformers
    from transformers import BertConfig, BertForMaskedLM, BertForSequenceClassification

    vocab = check_int(vocab, "vocab", low=8)
    seq_len = check_int(seq_len, "seq_len", low=4)
    hidden, layers, heads = check_int(hidden, "hidden"), check_int(layers, "layers"), check_int(heads, "heads")
    if hidden % heads:
        raise ValueError(f"hidden={hidden} must be a multiple of heads={heads}")
    pretrain_steps = check_int(pretrain_steps, "pretrain_steps", low=0)
    n_corpus, n_train, n_test = (
        check_int(v, k, low=1) for v, k in ((n_corpus, "n_corpus"), (n_train, "n_train"), (n_test, "n_test"))
    )
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    marker_rate = check_real(marker_rate, "marker_rate", lo=0.0, hi=1.0, lo_open=True)
    n_markers = check_int(n_markers, "n_markers", low=1)
    if rule not in ("count", "halves"):
        raise ValueError(f"rule={rule!r}: allowed are 'count' and 'halves'")
    if 2 * n_markers > vocab:
        raise ValueError(f"n_markers={n_markers}: two marker sets need at most vocab={vocab} tokens")
    rng = check_random_state(random_state)
    transformers.logging.set_verbosity_error()
    PAD, CLS, MASK, FIRST = 0, 1, 2, 3
    V = vocab
    T = rng.random((V, V)) ** 4  # sparse-ish transitions
    T /= T.sum(1, keepdims=True)
    cfg = BertConfig(
        vocab_size=V + FIRST,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=2 * hidden,
        max_position_embeddings=seq_len + 1,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        pad_token_id=PAD,
        num_labels=2,
        attn_implementation="eager",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed_from(rng))
        mlm = BertForMaskedLM(cfg)
        clf = BertForSequenceClassification(cfg)
    corpus = torch.from_numpy(_markov_corpus(rng, T, n_corpus, seq_len, FIRST))
    corpus = torch.cat([torch.full((n_corpus, 1), CLS), corpus], 1)  # (n, L+1)
    opt = torch.optim.Adam(mlm.parameters(), lr=lr)
    mlm_loss = np.empty(pretrain_steps)
    mlm.train()
    for s in range(pretrain_steps):
        idx = torch.from_numpy(rng.choice(n_corpus, size=min(128, n_corpus), replace=False))
        ids = corpus[idx].clone()
        mask = torch.from_numpy(rng.random(ids.shape) < 0.15)
        mask[:, 0] = False
        labels = torch.where(mask, ids, torch.full_like(ids, -100))
        ids[mask] = MASK
        loss = mlm(input_ids=ids, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        mlm_loss[s] = float(loss.detach())
    clf.bert.load_state_dict(mlm.bert.state_dict(), strict=False)
    clf.eval()
    for p in clf.parameters():
        p.requires_grad_(False)
    markers = rng.choice(V, size=2 * n_markers, replace=False)
    set_a, set_b = markers[:n_markers] + FIRST, markers[n_markers:] + FIRST

    def labelled(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        xs, ys, have = [], [], 0
        while have < n:
            raw = _markov_corpus(rng, T, 2 * n, seq_len, FIRST)
            # make markers frequent: replace a fraction marker_rate of tokens by a marker token
            hit = rng.random(raw.shape) < marker_rate
            raw[hit] = rng.choice(markers + FIRST, size=int(hit.sum()))
            if rule == "count":
                ca, cb = np.isin(raw, set_a).sum(1), np.isin(raw, set_b).sum(1)
            else:  # "halves": set-A markers in the first half against the second half
                half = raw.shape[1] // 2
                ca, cb = np.isin(raw[:, :half], set_a).sum(1), np.isin(raw[:, half:], set_a).sum(1)
            keep = ca != cb
            xs.append(raw[keep])
            ys.append((ca > cb)[keep].astype(np.int64))
            have += int(keep.sum())
        x = np.concatenate(xs)[:n]
        y = np.concatenate(ys)[:n]
        x = np.concatenate([np.full((n, 1), CLS), x], 1)
        return torch.from_numpy(x), torch.from_numpy(y)

    Xtr, ytr = labelled(n_train)
    Xte, yte = labelled(n_test)
    names, costs, mx = [], [], []
    for i in range(layers):
        for sub in (
            "attention.self.query",
            "attention.self.key",
            "attention.self.value",
            "attention.output.dense",
            "intermediate.dense",
            "output.dense",
        ):
            nm = f"bert.encoder.layer.{i}.{sub}"
            lin = clf.get_submodule(nm)
            names.append(nm)
            costs.append(lin.in_features + lin.out_features)
            mx.append(min(lin.in_features, lin.out_features))
    return EncoderTask(clf, names, np.array(costs), np.array(mx), Xtr, ytr, Xte, yte, PAD, mlm_loss)
