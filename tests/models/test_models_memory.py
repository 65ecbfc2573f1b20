"""Host memory of ``analyze-model`` that does not depend on the model (issue 32).

Each figure is the kernel's high-water mark (``VmHWM``) of a fresh child process
(:func:`helpers.memory.child_peak_mib`), never a timing. The baseline is a child that imports
what any run of a Llama needs (torch, transformers, posgeom's models layer and transformers'
Llama code); a tiny random Llama's ``analyze-model`` adds its corpus, tokenizer, forward passes
and analysis, a few MiB each. The command line must not import what the command does not run:
building the parser used to import ``scipy.stats`` through ``probe``'s default (~33 MiB, the
same in float32 and bfloat16, a third of the part of SmolLM2's peak that did not shrink with
the dtype).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from helpers.memory import child_peak_mib  # noqa: E402
from helpers.models import WORDS, tiny_llama  # noqa: E402

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not os.path.exists("/proc/self/status"),
    reason="VmHWM is read from Linux's /proc",
)

_IMPORTS = (
    "import torch, transformers, posgeom.models.analysis, posgeom.cli.model_commands, "
    "transformers.models.llama.modeling_llama"
)
#: what a tiny model's analyze-model may add to the baseline, measured 2026-12-05 (x86_64,
#: torch 2.13 CPU, the same package versions): 36-40 MiB in the project's venv and 60-66 MiB in a
#: fresh clone's venv built by .ci/run's install lines (whose `import torch` alone peaks 52 MiB
#: higher: native allocations that differ by environment, not posgeom's); with scipy.stats
#: imported, 33 MiB more. The bound leaves room for the fresh venv; the assertion below names
#: scipy.stats itself
BOUND_MIB = 90


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("memory")
    folder = tiny_llama(root / "llama")["folder"]
    rng = np.random.default_rng(0)
    corpus = root / "corpus.txt"
    lines = [" ".join(rng.choice(WORDS[:12], size=40)) for _ in range(60)]
    corpus.write_text("\n".join(lines) + "\n")
    return {"folder": folder, "corpus": corpus, "root": root}


def _command(tiny, dtype: str) -> str:
    argv = ["-q", "analyze-model", str(tiny["folder"]), str(tiny["corpus"]), "-n", "16"]
    argv += ["--no-plot", "--bootstrap", "10", "--dtype", dtype, "--threads", "1"]
    argv += ["-o", str(tiny["root"] / f"out-{dtype}"), "--overwrite"]
    return (
        "import sys\nfrom posgeom.cli.main import main\n"
        f"assert main({argv!r}) == 0\n"
        "assert 'scipy.stats' not in sys.modules, 'analyze-model imported scipy.stats'\n"
    )


def test_analyze_model_on_a_tiny_llama_adds_little_to_the_imports(tiny):
    """The model-independent part of the peak, in bfloat16 (a tiny model's weights are nothing
    in any dtype): below BOUND_MIB, and the command (its parser: every command registered)
    never imports scipy.stats."""
    base = child_peak_mib(_IMPORTS)
    peak = child_peak_mib(_command(tiny, "bfloat16"))
    assert peak - base < BOUND_MIB, (base, peak)
    assert (Path(tiny["root"]) / "out-bfloat16" / "summary.json").is_file()
