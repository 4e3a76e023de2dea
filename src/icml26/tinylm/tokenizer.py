"""A word-level tokenizer that is a genuine Hugging Face fast tokenizer.

The lab's corpora are made of whitespace-separated words, so one token per word is all a
tiny model needs. Building it from the ``tokenizers`` library's ``WordLevel`` model and
wrapping it in :class:`transformers.PreTrainedTokenizerFast` means that every analysis
meets the same object a reader's own model comes with: ``tok(texts, return_tensors="pt",
padding=True)``, ``encode``/``decode``, ``pad``, ``save_pretrained`` and
``AutoTokenizer.from_pretrained(local_dir)``.

Special tokens: ``<pad>`` (id 0), ``<unk>`` (1), ``<bos>`` (2, prepended to every encoded
text, as Llama's tokenizer does) and ``<eos>`` (3).
"""

from __future__ import annotations

from collections.abc import Iterable

SPECIAL_TOKENS = ("<pad>", "<unk>", "<bos>", "<eos>")


def word_vocabulary(texts: Iterable[str]) -> list[str]:
    """The sorted set of whitespace-separated words in ``texts`` (special tokens excluded).

    Parameters
    ----------
    texts : iterable of str
        The corpus.

    Returns
    -------
    list of str

    Raises
    ------
    TypeError
        For a single string (which would be read letter by letter) or an item that is not a str.

    References
    ----------
    Hugging Face ``tokenizers`` (``pre_tokenizers.WhitespaceSplit`` splits the same way).
    """
    if isinstance(texts, (str, bytes)):
        raise TypeError(
            f"texts={texts[:40]!r} is a single {type(texts).__name__}; pass a list of texts "
            "(word_vocabulary([text])), not one string, which would give its letters"
        )
    words: set[str] = set()
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}]={t!r} is not a str")
        words.update(t.split())
    return sorted(words - set(SPECIAL_TOKENS))


def build_word_tokenizer(words: Iterable[str]):
    """A Hugging Face fast tokenizer with one token per word of ``words``.

    Parameters
    ----------
    words : iterable of str
        The vocabulary (without special tokens; duplicates are dropped, order is kept).
        Words may not contain whitespace.

    Returns
    -------
    transformers.PreTrainedTokenizerFast
        ``vocab_size == 4 + number of distinct words``; unknown words map to ``<unk>``;
        ``<bos>`` is prepended when ``add_special_tokens`` is true (the default).

    References
    ----------
    Hugging Face ``tokenizers``: ``models.WordLevel``, ``pre_tokenizers.WhitespaceSplit``.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab: dict[str, int] = {t: i for i, t in enumerate(SPECIAL_TOKENS)}
    for w in words:
        if not isinstance(w, str) or not w or any(c.isspace() for c in w):
            raise ValueError(f"word {w!r} must be a non-empty str without whitespace")
        if w not in vocab:
            vocab[w] = len(vocab)
    if len(vocab) == len(SPECIAL_TOKENS):
        raise ValueError("words is empty: a tokenizer needs at least one word")
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", vocab["<bos>"])]
    )
    core.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with single spaces
    return PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>", eos_token="<eos>"
    )
