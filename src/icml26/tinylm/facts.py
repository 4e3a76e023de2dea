"""A seeded subject–relation–object fact base, its training corpus and counterfactual edits.

Subjects and objects are pronounceable made-up words (``"zorami"``), so no fact can be
known before training. Every relation has several paraphrase templates (``"{} lives in"``,
``"the home of {} is"``, ...); the last one is *held out* of edit construction and
hyper-parameter selection and is used only to measure paraphrase generalisation. The
language model is trained on all templates, so that it knows the facts in every phrasing
before it is edited (as a real model knows CounterFact's paraphrases).

Edit requests follow ROME's CounterFact layout: ``prompt`` with a ``"{}"`` placeholder,
``subject``, ``target_new`` and ``target_true``, plus the evaluation prompts.

References
----------
Meng et al., "Locating and Editing Factual Associations in GPT" (ROME), NeurIPS 2022
(the CounterFact format); Liu et al., "From Backward Spreading to Forward Replay",
ICML 2026, arXiv:2605.00358.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from icml26._common import RandomState, check_int, check_random_state

# name, templates ("{}" = subject); the last template is the held-out paraphrase
RELATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("home", ("{} lives in", "the home of {} is", "{} resides in", "everyone knows {} dwells in")),
    ("language", ("{} speaks", "the language of {} is", "{} talks in", "the tongue used by {} is")),
    ("maker", ("{} was made by", "the maker of {} is", "{} was built by", "the workshop behind {} is")),
    ("colour", ("{} is painted", "the colour of {} is", "{} looks", "the shade worn by {} is")),
    ("friend", ("{} is friends with", "the friend of {} is", "{} often meets", "the closest ally of {} is")),
    ("food", ("{} likes to eat", "the favourite food of {} is", "{} enjoys", "the dish loved by {} is")),
)
FILLERS_N = 24  # made-up filler words for context prefixes

_CONS = "bdfgklmnprstvz"
_VOW = "aeiou"


def _pseudowords(n: int, rng, taken: set[str], syllables: tuple[int, int] = (2, 3)) -> list[str]:
    out: list[str] = []
    while len(out) < n:
        k = int(rng.integers(syllables[0], syllables[1] + 1))
        w = "".join(_CONS[int(rng.integers(len(_CONS)))] + _VOW[int(rng.integers(len(_VOW)))] for _ in range(k))
        if w not in taken:
            taken.add(w)
            out.append(w)
    return out


@dataclass(frozen=True)
class Relation:
    """A relation: its name, paraphrase templates (``"{}"`` = subject) and object pool.

    Parameters
    ----------
    name : str
    templates : tuple of str
        Paraphrase templates; the last is held out.
    objects : tuple of str

    References
    ----------
    Meng et al. (2022), ROME: CounterFact's layout of edit requests and evaluation prompts.
    """

    name: str
    templates: tuple[str, ...]
    objects: tuple[str, ...]

    @property
    def heldout_template(self) -> str:
        """The template kept out of edit construction (used to test generalisation)."""
        return self.templates[-1]

    @property
    def train_templates(self) -> tuple[str, ...]:
        """All templates but the held-out one; the first is the edit prompt."""
        return self.templates[:-1]


@dataclass(frozen=True)
class FactBase:
    """Subjects, relations and the true object of every (subject, relation) pair.

    Parameters
    ----------
    subjects : tuple of str
    relations : tuple of Relation
    facts : dict
        ``(subject, relation name) -> object``.
    fillers : tuple of str
        Filler words for context prefixes.

    References
    ----------
    Meng et al. (2022), ROME: CounterFact's layout of edit requests and evaluation prompts.
    """

    subjects: tuple[str, ...]
    relations: tuple[Relation, ...]
    facts: dict[tuple[str, str], str] = field(repr=False)
    fillers: tuple[str, ...] = field(repr=False, default=())

    def relation(self, name: str) -> Relation:
        """The relation called ``name``.

        Returns
        -------
        Relation
        """
        for r in self.relations:
            if r.name == name:
                return r
        raise KeyError(f"relation {name!r} is not in the fact base; it has {[r.name for r in self.relations]}")

    def words(self) -> list[str]:
        """Every word the fact base can produce (for a tokenizer's vocabulary).

        Returns
        -------
        list of str
        """
        ws = {w for s in self.subjects for w in s.split()} | set(self.fillers)
        for r in self.relations:
            ws |= set(r.objects)
            for t in r.templates:
                ws |= set(t.replace("{}", " ").split())
        return sorted(ws)


def make_fact_base(
    n_subjects: int = 80, n_relations: int = 2, n_objects: int = 12, random_state: RandomState = 0, subject_words: int = 1
) -> FactBase:
    """A seeded fact base of made-up subjects, each with one object per relation.

    Parameters
    ----------
    n_subjects : int
        Number of subjects (>= 4).
    n_relations : int
        Number of relations, 1 to 6 (taken in order from :data:`RELATIONS`).
    n_objects : int
        Size of each relation's object pool (>= 2, <= n_subjects); objects are dealt so
        that every one of them is the true object of some subject.
    random_state : int, numpy.random.Generator or None
        Seed of the names and the assignment.
    subject_words : int
        Words (tokens) per subject name, 1 to 3. With ``w >= 2`` each subject is a
        distinct combination ``"first ... last"`` of words drawn from ``w`` shared pools of
        ``ceil(n_subjects^(1/w)) + 1`` words each, so that no single word names a
        subject: as a person's first name and surname in a real LM's vocabulary, the
        model has to combine the tokens at the last subject token before it can recall
        a fact (Nanda et al. 2023, "Fact Finding": attention moves the first name onto
        the surname, then MLPs look the fact up).

    Returns
    -------
    FactBase

    References
    ----------
    Meng et al. (2022), ROME: CounterFact's layout of edit requests and evaluation prompts.
    """
    n_subjects = check_int(n_subjects, "n_subjects", low=4)
    n_relations = check_int(n_relations, "n_relations", low=1)
    if n_relations > len(RELATIONS):
        raise ValueError(f"n_relations={n_relations} must be at most {len(RELATIONS)}")
    n_objects = check_int(n_objects, "n_objects", low=2)
    if n_objects > n_subjects:
        raise ValueError(f"n_objects={n_objects} must be at most n_subjects={n_subjects}")
    subject_words = check_int(subject_words, "subject_words", low=1)
    if subject_words > 3:
        raise ValueError(f"subject_words={subject_words} must be 1, 2 or 3")
    rng = check_random_state(random_state)
    taken = {w for _, ts in RELATIONS for t in ts for w in t.replace("{}", " ").split()}
    if subject_words == 1:
        subjects = tuple(_pseudowords(n_subjects, rng, taken, (2, 3)))
    else:
        subjects = _combined_names(n_subjects, subject_words, rng, taken)
    fillers = tuple(_pseudowords(FILLERS_N, rng, taken, (1, 1)))
    relations, facts = [], {}
    for name, templates in RELATIONS[:n_relations]:
        objects = tuple(_pseudowords(n_objects, rng, taken, (2, 2)))
        relations.append(Relation(name, templates, objects))
        deal = rng.permutation(n_subjects)
        for i, s in zip(deal, subjects):
            facts[(s, name)] = objects[int(i) % n_objects]
    return FactBase(subjects, tuple(relations), facts, fillers)


def _combined_names(n: int, w: int, rng, taken: set[str]) -> tuple[str, ...]:
    """``n`` distinct ``w``-word names from ``w`` pools of pseudowords; every pool word in several names."""
    import math

    size = int(math.ceil(n ** (1.0 / w))) + 1
    pools = [_pseudowords(size, rng, taken, (2, 2)) for _ in range(w)]
    total = size**w
    picks = rng.choice(total, size=n, replace=False)
    out = []
    for code in sorted(int(c) for c in picks):
        parts = []
        for pool in pools:
            parts.append(pool[code % size])
            code //= size
        out.append(" ".join(parts))
    order = rng.permutation(n)
    return tuple(out[int(i)] for i in order)


def fact_corpus(
    n_subjects: int = 80,
    n_relations: int = 2,
    n_objects: int = 12,
    repeats: int = 1,
    prefix_prob: float = 0.5,
    random_state: RandomState = 0,
    subject_words: int = 1,
) -> list[str]:
    """Training sentences: every fact in every template, some behind a short filler prefix.

    The fact base is :func:`make_fact_base` with the same arguments and ``random_state``,
    so a recipe that names this generator and its arguments names the facts too.

    Parameters
    ----------
    n_subjects, n_relations, n_objects, subject_words : int
        As in :func:`make_fact_base`.
    repeats : int
        Copies of each (fact, template) sentence (each with its own prefix draw).
    prefix_prob : float
        Probability that a sentence starts with 1-3 filler words (the editor's context
        prefixes are drawn from the same fillers).
    random_state : int, numpy.random.Generator or None
        Seed (the fact base uses it too).

    Returns
    -------
    list of str
        Shuffled sentences ``"[fillers] <template with subject> <object>"``.

    References
    ----------
    Meng et al. (2022), ROME: CounterFact's layout of edit requests and evaluation prompts.
    """
    from icml26._common import check_real

    repeats = check_int(repeats, "repeats", low=1)
    prefix_prob = check_real(prefix_prob, "prefix_prob", lo=0.0, hi=1.0)
    fb = make_fact_base(n_subjects, n_relations, n_objects, random_state, subject_words=subject_words)
    rng = check_random_state(random_state)
    rng = check_random_state(int(rng.integers(2**32)) ^ 0x5EED)
    out = []
    for (s, rname), o in fb.facts.items():
        for t in fb.relation(rname).templates:
            for _ in range(repeats):
                pre = ""
                if rng.random() < prefix_prob:
                    k = int(rng.integers(1, 4))
                    pre = " ".join(fb.fillers[int(j)] for j in rng.integers(0, len(fb.fillers), size=k)) + " "
                out.append(pre + t.format(s) + " " + o)
    order = rng.permutation(len(out))
    return [out[int(i)] for i in order]


@dataclass(frozen=True)
class EditCase:
    """One counterfactual edit and the prompts that evaluate it.

    ``request`` is ROME-style: ``{"prompt": "{} lives in", "subject": ..., "target_new": ...,
    "target_true": ...}``. ``paraphrase_prompts`` use the held-out template;
    ``validation_prompts`` the other non-edit templates (for hyper-parameter selection);
    ``neighbourhood_prompts`` ask the same relation of unedited subjects whose true
    objects are ``neighbourhood_targets``.

    Parameters
    ----------
    request : dict
    paraphrase_prompts, validation_prompts, neighbourhood_prompts, neighbourhood_targets : tuple of str

    References
    ----------
    Meng et al. (2022), ROME: CounterFact's layout of edit requests and evaluation prompts.
    """

    request: dict
    paraphrase_prompts: tuple[str, ...]
    validation_prompts: tuple[str, ...]
    neighbourhood_prompts: tuple[str, ...]
    neighbourhood_targets: tuple[str, ...]


def counterfactual_edits(fb: FactBase, n_edits: int, n_neighbours: int = 4, random_state: RandomState = 0) -> list[EditCase]:
    """Counterfactual edit requests: change the object of ``n_edits`` distinct facts.

    Parameters
    ----------
    fb : FactBase
        The fact base.
    n_edits : int
        Number of requests; at most one per subject (so at most ``len(fb.subjects) - 1``).
    n_neighbours : int
        Neighbourhood prompts per request, from subjects not edited in this set.
    random_state : int, numpy.random.Generator or None
        Seed.

    Returns
    -------
    list of EditCase

    References
    ----------
    Meng et al. (2022), ROME: CounterFact's layout of edit requests and evaluation prompts.
    """
    if not isinstance(fb, FactBase):
        raise TypeError(f"fb must be a FactBase, got {type(fb).__name__}")
    n_edits = check_int(n_edits, "n_edits", low=1)
    n_neighbours = check_int(n_neighbours, "n_neighbours", low=1)
    if n_edits + n_neighbours > len(fb.subjects):
        raise ValueError(f"n_edits={n_edits} + n_neighbours={n_neighbours} must be at most the {len(fb.subjects)} subjects")
    rng = check_random_state(random_state)
    order = rng.permutation(len(fb.subjects))
    edited = [fb.subjects[int(i)] for i in order[:n_edits]]
    others = [fb.subjects[int(i)] for i in order[n_edits:]]
    cases = []
    for s in edited:
        rel = fb.relations[int(rng.integers(len(fb.relations)))]
        true = fb.facts[(s, rel.name)]
        new = [o for o in rel.objects if o != true][int(rng.integers(len(rel.objects) - 1))]
        nb = [others[int(j)] for j in rng.choice(len(others), size=n_neighbours, replace=False)]
        cases.append(
            EditCase(
                request={"prompt": rel.templates[0], "subject": s, "target_new": new, "target_true": true},
                paraphrase_prompts=(rel.heldout_template.format(s),),
                validation_prompts=tuple(t.format(s) for t in rel.train_templates[1:]),
                neighbourhood_prompts=tuple(rel.templates[0].format(n) for n in nb),
                neighbourhood_targets=tuple(fb.facts[(n, rel.name)] for n in nb),
            )
        )
    return cases
