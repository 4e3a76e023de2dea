"""icml26 — the thin library behind the executable companion to ICML 2026.

The top level holds the methods, one module or small package per paper:

========================  ==========================================================
chapter                   module
========================  ==========================================================
01 OPT-Engine             :mod:`icml26.optengine` (LP layer, text, problem classes,
                          instances, checker, paradigms)
02 ST-BCP                 :mod:`icml26.bcp` (``conformal``: BCP and ST-BCP;
                          ``protocol``: trials; ``pools``: classifier outputs)
03 BW-DAM                 :mod:`icml26.bwdam` (``geometry``, ``dynamics``, ``estimators``,
                          ``data``, ``evaluation``, ``experiments``)
04 LOCK-GP                :mod:`icml26.lockgp` (``substitution``, ``encoding``, ``kernels``,
                          ``models``, ``landscapes``, ``evaluation``)
05 OmniShow               :mod:`icml26.omnishow` on the video lab :mod:`icml26.videolab`
                          (``dit``: tiny DiT, flow matching; ``hoi``: HOI clips)
06 COBRA                  :mod:`icml26.cobra` (reconstructed from the abstract; peft, captum:
                          ``tasks``, ``contributions``, ``allocation``, ``adapters``,
                          ``experiments``)
07 FIBER                  :mod:`icml26.fiber` (``filters``, ``privacy``, ``optimizer``,
                          ``training``, ``experiments``, ``opacus_ref``)
08 CLGN                   :mod:`icml26.lut` (DWN exact: ``encoding``, ``efd``,
                          ``layers``, ``bits``, ``resources``; CLGN reconstructed:
                          ``clgn``)
09 VideoMAETok            :mod:`icml26.vmaetok` on the video lab (``sprites``, ``fvd``)
10 SafeMVDrive            :mod:`icml26.safedrive` (mechanism only: ``road``, ``traffic``: a
                          2-D road simulator; ``planner``; ``selector``: GRPO adversary
                          selection; ``scenarios``: two-stage generation; ``experiment``)
11 Moving Out / BASS      :mod:`icml26.movingout` (a pymunk physics game behind the
                          gymnasium API: ``geometry``, ``env``; scripted ``partners``,
                          ``bc`` and ``bass``)
12 Forward replay         :mod:`icml26.fwdedit` on the tiny-LM lab :mod:`icml26.tinylm`
                          (``tokenizer``, ``facts``, ``lab``)
13 DiscoverLLM            :mod:`icml26.discoverllm` (mechanism only: the intent-discovery
                          user simulator, discovery reward, response-type policies)
14 MOES-Pred              :mod:`icml26.moes` (reconstructed: ``molecules`` (RDKit/MMFF94),
                          ``noise`` (energy-sentinel), ``model`` (a small equivariant
                          network), ``train``)
15 PASV                   :mod:`icml26.pasv` (``posets``, ``games``, ``exact``, ``sampling``,
                          ``estimation``, ``mixing``, ``markets``, ``features``)
16 CoT safety heads       :mod:`icml26.cotsafety` on the tiny-LM lab (``traces``)
17 mPAIC / DDSO           :mod:`icml26.calib` (calibration metrics; DDSO reconstructed)
18 Mergeability           :mod:`icml26.mergeability` (``merges`` via peft's merge utilities,
                          ``models``, ``tasks``, ``metrics``, ``predictor``, ``sensitivity``)
19 BEST                   :mod:`icml26.best` (``metric``, ``harness``, ``tasks``,
                          ``programs``, ``scoring``)
========================  ==========================================================

Shared conventions (``random_state``, progress reporting) live in :mod:`icml26._common`,
group-relative GRPO advantages (chapters 10 and 13) in :mod:`icml26._grpo`. No file of the
library passes 1,200 lines and its imports form no cycle (``tests/test_library_shape.py``).
The book machinery is apart from the science, in :mod:`icml26.book`: the notebook
runtime (``chapter``, ``bench``) and the build tool (``runner``, ``site``, ``scorecard``,
``sync``, ``cli``; ``python -m icml26 --help``). No method module imports it.
"""

from importlib.metadata import PackageNotFoundError as _NotInstalled
from importlib.metadata import version as _version

try:  # one version, the package's (pyproject.toml); ``--version`` and the pages print the same
    __version__ = _version("icml26")
except _NotInstalled:  # pragma: no cover - the package is installed in every supported set-up
    __version__ = "unknown"
