"""Build, train, cache and load tiny GPT-2 language models.

A *recipe* names everything that decides a trained model: the corpus generator (a
function ``"module:name"`` returning a list of strings or of token-id lists) and its
keyword arguments, the ``GPT2Config`` fields, the seed and the optimiser schedule. Its
SHA-256 hash keys a cache folder ``<book root>/_build/models/<key>/`` (or
``$ICML26_MODEL_CACHE/<key>/``) written with ``save_pretrained``; a chapter loads it back
with ``AutoModelForCausalLM.from_pretrained(local_dir)`` and
``AutoTokenizer.from_pretrained(local_dir)``: the same code path a reader's own model
takes. A cache miss retrains (a few tens of seconds at the chapters' ci sizes). Weights
are never committed.

Usage
-----
>>> from icml26.tinylm.lab import Recipe, load_or_train, train_causal_lm, gpt2_config
>>> recipe = Recipe(
...     corpus="icml26.tinylm.facts:fact_corpus",       # or a module-level function object
...     corpus_kwargs=dict(n_subjects=80, n_relations=2),
...     config=dict(n_layer=4, n_embd=64, n_head=4),     # GPT2Config fields (vocab from the corpus)
...     seed=0, steps=600, batch_size=64, lr=3e-3)
>>> model, tok, path = load_or_train(recipe)             # doctest: +SKIP
>>> batch = tok(["zorami lives in"], return_tensors="pt", padding=True)   # doctest: +SKIP
>>> logits = model(**batch).logits                       # doctest: +SKIP

The trainer alone, on any corpus (strings with a tokenizer, or token-id lists):

>>> from icml26.tinylm.tokenizer import build_word_tokenizer, word_vocabulary
>>> texts = ["a b c", "a c b"]
>>> tok = build_word_tokenizer(word_vocabulary(texts))
>>> from transformers import GPT2LMHeadModel             # doctest: +SKIP
>>> model = GPT2LMHeadModel(gpt2_config(len(tok), n_layer=2, n_embd=32, n_head=2))  # doctest: +SKIP
>>> losses = train_causal_lm(model, texts, tok, steps=50, random_state=0)           # doctest: +SKIP

Text corpora are encoded with the tokenizer (``<bos>`` prepended) and ``<eos>`` appended;
token-id corpora are used as given. ``load_or_train`` builds the tokenizer from the words
of a text corpus (:func:`icml26.tinylm.tokenizer.build_word_tokenizer`); a token-id corpus
needs ``Recipe(vocab_size=...)`` and gets no tokenizer (``tok`` is ``None``).

References
----------
Radford et al., "Language Models are Unsupervised Multitask Learners" (GPT-2), 2019;
Hugging Face ``transformers``: ``GPT2Config``, ``GPT2LMHeadModel``, ``save_pretrained``.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from icml26._common import RandomState, check_int, check_real, progress, seed_from

CACHE_ENV = "ICML26_MODEL_CACHE"
_CONFIG_DEFAULTS = dict(n_layer=4, n_embd=64, n_head=4, n_positions=32)


def gpt2_config(vocab_size: int, **fields: Any):
    """A ``GPT2Config`` for a tiny model: no dropout, the lab's special-token ids.

    Parameters
    ----------
    vocab_size : int
        Number of tokens (``len(tokenizer)``).
    **fields
        Any ``GPT2Config`` field (``n_layer``, ``n_embd``, ``n_head``, ``n_positions``,
        ``n_inner``, ...); defaults ``n_layer=4, n_embd=64, n_head=4, n_positions=32``.

    Returns
    -------
    transformers.GPT2Config

    References
    ----------
    Hugging Face ``transformers`` (GPT2Config, GPT2LMHeadModel, ``save_pretrained``/``from_pretrained``).
    """
    from transformers import GPT2Config

    vocab_size = check_int(vocab_size, "vocab_size", low=2)
    kw = dict(_CONFIG_DEFAULTS)
    kw.update(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=2, eos_token_id=3, pad_token_id=0)
    kw.update(fields)
    if kw["n_embd"] % kw["n_head"]:
        raise ValueError(f"n_embd={kw['n_embd']} must be divisible by n_head={kw['n_head']}")
    return GPT2Config(vocab_size=vocab_size, **kw)


def _encode_corpus(corpus: Sequence, tokenizer) -> list[list[int]]:
    if isinstance(corpus, (str, bytes)) or not isinstance(corpus, Sequence) or len(corpus) == 0:
        raise ValueError("corpus must be a non-empty list of strings or of token-id lists")
    if all(isinstance(t, str) for t in corpus):
        if tokenizer is None:
            raise ValueError("a text corpus needs a tokenizer")
        eos = tokenizer.eos_token_id
        return [list(ids) + ([eos] if eos is not None else []) for ids in tokenizer(list(corpus))["input_ids"]]
    out = []
    for i, seq in enumerate(corpus):
        if isinstance(seq, str) or not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in seq):
            raise ValueError(f"corpus[{i}] must be a list of non-negative token ids (or all items strings)")
        if len(seq) < 2:
            raise ValueError(f"corpus[{i}] has {len(seq)} tokens; a training sequence needs at least 2")
        out.append(list(seq))
    return out


def train_causal_lm(
    model,
    corpus: Sequence,
    tokenizer=None,
    *,
    steps: int = 600,
    batch_size: int = 64,
    lr: float = 3e-3,
    weight_decay: float = 0.01,
    warmup: int = 50,
    random_state: RandomState = 0,
    desc: str = "train",
) -> list[float]:
    """Train a causal LM in place with AdamW on next-token loss over a corpus.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        Any causal LM taking ``input_ids``, ``attention_mask`` and ``labels``.
    corpus : list of str, or list of list of int
        Training sequences (texts are encoded with ``tokenizer`` plus ``<eos>``).
    tokenizer : tokenizer, optional
        Needed for a text corpus; its ``pad_token_id`` pads batches (0 otherwise).
    steps, batch_size : int
        Optimiser steps and sequences per step (sampled with replacement-free epochs).
    lr, weight_decay : float
        AdamW settings; the rate warms up linearly for ``warmup`` steps, then decays
        with a cosine to 10 %.
    warmup : int
        Warm-up steps (>= 0).
    random_state : int, numpy.random.Generator or None
        Seed of the batch order.
    desc : str
        Progress label.

    Returns
    -------
    list of float
        The training loss of every step.

    References
    ----------
    Loshchilov and Hutter, "Decoupled Weight Decay Regularization" (AdamW), ICLR 2019.
    """
    import math

    import torch

    steps = check_int(steps, "steps", low=1)
    batch_size = check_int(batch_size, "batch_size", low=1)
    warmup = check_int(warmup, "warmup", low=0)
    lr = check_real(lr, "lr", lo=0.0, lo_open=True)
    weight_decay = check_real(weight_decay, "weight_decay", lo=0.0)
    if not hasattr(model, "parameters") or not callable(model):
        raise TypeError(f"model must be a torch causal LM, got {type(model).__name__}")
    seqs = _encode_corpus(corpus, tokenizer)
    n_pos = getattr(getattr(model, "config", None), "n_positions", None)
    if n_pos is not None and max(len(s) for s in seqs) > n_pos:
        raise ValueError(f"the longest corpus sequence has {max(len(s) for s in seqs)} tokens > n_positions={n_pos}")
    pad = tokenizer.pad_token_id if tokenizer is not None and tokenizer.pad_token_id is not None else 0
    g = torch.Generator().manual_seed(seed_from(random_state))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay, betas=(0.9, 0.98))

    def rate(t: int) -> float:
        if t < warmup:
            return (t + 1) / warmup
        frac = (t - warmup) / max(1, steps - warmup)
        return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, rate)
    model.train()
    order, pos, losses = torch.randperm(len(seqs), generator=g), 0, []
    for _ in progress(range(steps), desc):
        if pos + batch_size > len(order):
            order, pos = torch.randperm(len(seqs), generator=g), 0
        idx = order[pos : pos + batch_size].tolist()
        pos += batch_size
        batch = [seqs[i] for i in idx]
        L = max(len(s) for s in batch)
        ids = torch.full((len(batch), L), pad, dtype=torch.long)  # (B, L)
        mask = torch.zeros((len(batch), L), dtype=torch.long)  # (B, L)
        for r, s in enumerate(batch):
            ids[r, : len(s)] = torch.tensor(s)
            mask[r, : len(s)] = 1
        logits = model(input_ids=ids, attention_mask=mask).logits  # (B, L, V)
        labels = ids[:, 1:].masked_fill(mask[:, 1:] == 0, -100)  # (B, L-1)
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses


def _fn_name(fn: Callable | str) -> str:
    if isinstance(fn, str):
        if ":" not in fn:
            raise ValueError(f"corpus={fn!r} must be 'module:function' or a module-level function")
        return fn
    if callable(fn) and getattr(fn, "__module__", None) and "<" not in getattr(fn, "__qualname__", "<"):
        return f"{fn.__module__}:{fn.__qualname__}"
    raise ValueError(f"corpus={fn!r} must be 'module:function' or a module-level function (not a lambda)")


def _resolve(name: str) -> Callable:
    mod, _, attr = name.partition(":")
    try:
        obj: Any = importlib.import_module(mod)
    except ImportError as exc:
        raise ValueError(
            f"corpus={name!r}: cannot import module {mod!r} ({exc}); give 'module:function' with an "
            "importable module, e.g. 'icml26.tinylm.facts:fact_corpus'"
        ) from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ValueError(
                f"corpus={name!r}: module {mod!r} has no {attr!r} (no attribute {part!r}); "
                "give 'module:function' naming a function of that module"
            )
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"corpus={name!r} names a {type(obj).__name__}, not a function")
    return obj


@dataclass(frozen=True)
class Recipe:
    """Everything that decides a trained lab model (hashed into its cache key).

    Parameters
    ----------
    corpus : str or callable
        The corpus generator, ``"module:function"`` or a module-level function; called
        as ``corpus(**corpus_kwargs)``, it returns a list of strings (a word tokenizer is
        built from their words) or of token-id lists.
    corpus_kwargs : dict
        JSON-serialisable keyword arguments of the generator.
    config : dict
        ``GPT2Config`` fields (see :func:`gpt2_config`); ``vocab_size`` comes from the corpus.
    seed : int
        Model initialisation and batch order.
    steps, batch_size : int
        Training length.
    lr : float
        Peak learning rate.
    vocab_size : int, optional
        Only for token-id corpora.

    References
    ----------
    The lab's own cache convention (see the module docstring).
    """

    corpus: Any
    corpus_kwargs: dict = field(default_factory=dict)
    config: dict = field(default_factory=dict)
    seed: int = 0
    steps: int = 600
    batch_size: int = 64
    lr: float = 3e-3
    vocab_size: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "corpus", _fn_name(self.corpus))
        check_int(self.seed, "seed", low=0)
        check_int(self.steps, "steps", low=1)
        check_int(self.batch_size, "batch_size", low=1)
        check_real(self.lr, "lr", lo=0.0, lo_open=True)
        for name in ("corpus_kwargs", "config"):
            try:
                json.dumps(getattr(self, name), sort_keys=True)
            except TypeError as e:
                raise ValueError(f"{name}={getattr(self, name)!r} must be JSON-serialisable: {e}") from None

    def as_dict(self) -> dict:
        """The recipe as plain JSON data (what the key hashes).

        Returns
        -------
        dict
        """
        return dict(
            corpus=self.corpus,
            corpus_kwargs=self.corpus_kwargs,
            config={**_CONFIG_DEFAULTS, **self.config},
            seed=self.seed,
            steps=self.steps,
            batch_size=self.batch_size,
            lr=self.lr,
            vocab_size=self.vocab_size,
            format=1,
        )

    def key(self) -> str:
        """16 hex digits of the SHA-256 of :meth:`as_dict` (sorted JSON).

        Returns
        -------
        str
        """
        return hashlib.sha256(json.dumps(self.as_dict(), sort_keys=True).encode()).hexdigest()[:16]


def model_cache_dir() -> Path:
    """The model cache: ``$ICML26_MODEL_CACHE``, else ``<book root>/_build/models``, else ``./_build/models``.

    Parameters
    ----------
    None

    Returns
    -------
    pathlib.Path

    References
    ----------
    The lab's own cache convention.
    """
    env = os.environ.get(CACHE_ENV, "").strip()
    if env:
        return Path(env)
    root = Path(__file__).resolve().parents[3]
    if (root / "pyproject.toml").exists() and (root / "book").is_dir():
        return root / "_build" / "models"
    return Path.cwd() / "_build" / "models"


def load_or_train(recipe: Recipe, *, cache_dir: str | Path | None = None, retrain: bool = False):
    """The recipe's model, loaded from the cache with ``from_pretrained`` or trained and saved.

    Parameters
    ----------
    recipe : Recipe
        What to build.
    cache_dir : path, optional
        Cache root (default :func:`model_cache_dir`); the model lives in ``<root>/<key>/``.
    retrain : bool
        Train and overwrite even if cached.

    Returns
    -------
    model : transformers.PreTrainedModel
        Loaded with ``AutoModelForCausalLM.from_pretrained(path)``, in eval mode.
    tokenizer : transformers.PreTrainedTokenizerFast or None
        Loaded with ``AutoTokenizer.from_pretrained(path)`` (None for token-id corpora).
    path : pathlib.Path
        The model folder (also holds ``recipe.json`` and ``train_log.json``: losses, seconds).

    Raises
    ------
    TypeError
        For a ``recipe`` that is not a :class:`Recipe`, or a corpus generator that is not a
        function or does not return a list.
    ValueError
        For a corpus ``"module:function"`` whose module cannot be imported or has no such
        function, and for a corpus the trainer cannot use (see :func:`train_causal_lm`).

    References
    ----------
    Hugging Face ``transformers`` (GPT2Config, GPT2LMHeadModel, ``save_pretrained``/``from_pretrained``).
    """
    if not isinstance(recipe, Recipe):
        raise TypeError(f"recipe must be a Recipe, got {type(recipe).__name__}")
    root = Path(cache_dir) if cache_dir is not None else model_cache_dir()
    path = root / recipe.key()
    if retrain or not (path / "config.json").exists():
        _train_into(recipe, path)
    return _load(path)


class _QuietHF:
    """Silence transformers' logging and progress bars (the strict book build fails on stderr)."""

    def __enter__(self):
        import logging

        from transformers.utils import logging as hf_logging

        self._verbosity = hf_logging.get_verbosity()
        self._bars = hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity(logging.ERROR)
        hf_logging.disable_progress_bar()
        return self

    def __exit__(self, *exc):
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity(self._verbosity)
        if self._bars:
            hf_logging.enable_progress_bar()
        return False


def _load(path: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _QuietHF():
        model = AutoModelForCausalLM.from_pretrained(path)
        tok = AutoTokenizer.from_pretrained(path) if (path / "tokenizer.json").exists() else None
    model.eval()
    return model, tok, path


def _train_into(recipe: Recipe, path: Path) -> None:
    import torch
    from transformers import GPT2LMHeadModel

    from .tokenizer import build_word_tokenizer, word_vocabulary

    corpus = _resolve(recipe.corpus)(**recipe.corpus_kwargs)
    if isinstance(corpus, (str, bytes)) or not isinstance(corpus, Sequence):
        raise TypeError(
            f"corpus {recipe.corpus!r} returned a {type(corpus).__name__}; it must return a list of strings or of token-id lists"
        )
    tok = None
    if corpus and all(isinstance(t, str) for t in corpus):
        tok = build_word_tokenizer(word_vocabulary(corpus))
        vocab = len(tok)
    elif recipe.vocab_size is None:
        raise ValueError("a token-id corpus needs Recipe(vocab_size=...)")
    else:
        vocab = recipe.vocab_size
    t0 = time.perf_counter()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed_from(recipe.seed))
        model = GPT2LMHeadModel(gpt2_config(vocab, **recipe.config))
    losses = train_causal_lm(
        model,
        corpus,
        tok,
        steps=recipe.steps,
        batch_size=recipe.batch_size,
        lr=recipe.lr,
        random_state=recipe.seed,
        desc=f"train {recipe.key()}",
    )
    seconds = time.perf_counter() - t0
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    try:
        with _QuietHF():
            model.save_pretrained(tmp)
            if tok is not None:
                tok.save_pretrained(tmp)
        (tmp / "recipe.json").write_text(json.dumps(recipe.as_dict(), indent=1, sort_keys=True))
        (tmp / "train_log.json").write_text(json.dumps(dict(losses=losses, seconds=seconds, n_sequences=len(corpus))))
        if path.exists():
            shutil.rmtree(path, ignore_errors=True)
        try:
            os.replace(tmp, path)
        except OSError:  # another process won the race: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
