"""One test for every registered positional family (parametrised over the registry).

Every family builds, its distances are symmetric with a zero diagonal and its arrays read-only, its
torch module (when it has one) gives the geometry of its numpy build, it builds the encodings of its
comparison rows (and scores nothing), the pipeline's row is the score of the encoding it chose,
and the registry round-trips it. A new family gets all of this
by registering; it only has to add its own reference tests.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import posgeom.encodings as E
from helpers.models import tiny_bert_config
from helpers.pipeline import mds_rows
from posgeom._errors import PosgeomError
from posgeom.corpus.counting import count_positions
from posgeom.encodings._registry import ComparisonContext, RowEncoding, TorchSpec
from posgeom.pipeline import GeometryConfig, analyze
from posgeom.scores.table import score_encoding
from posgeom.synthetic import synthetic_corpus

os.environ["HF_HUB_OFFLINE"] = "1"

N = 12
NAMES = list(E.families())


@pytest.fixture(scope="module")
def corpus():
    counts = count_positions(synthetic_corpus(400, length=N, seed=3), max_positions=N)
    return counts, analyze(counts, mds_rows(model_dim=16, max_rank=0, noise=None, seed=0))


@pytest.fixture(scope="module")
def bert():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = tiny_bert_config(50, 32, num_hidden_layers=1)
    return transformers.BertModel(config).eval()


def _required(name, request, tmp_path_factory, corpus):
    """Real objects for the build parameters a family requires."""
    out = {}
    for need in E.family(name).requires:
        if need == "source":
            out["source"] = corpus[1].distances
        elif need == "model":
            out["model"] = request.getfixturevalue("bert")
        elif need == "path":
            path = tmp_path_factory.mktemp("enc") / "vectors.npy"
            np.save(path, np.random.default_rng(0).standard_normal((N, 5)))
            out["path"] = path
        else:  # pragma: no cover - a new requirement needs a fixture here
            raise AssertionError(f"no fixture for requirement {need!r}")
    return out


@pytest.mark.parametrize("name", NAMES)
def test_builds_symmetric_zero_diagonal_read_only(name, request, tmp_path_factory, corpus):
    enc = E.get(name, N, **_required(name, request, tmp_path_factory, corpus))
    assert isinstance(enc, E.PositionEncoding) and enc.n_positions == N
    dist = enc.distances
    assert dist.shape == (N, N) and dist.dtype == np.float64
    np.testing.assert_array_equal(dist, dist.T)
    np.testing.assert_array_equal(np.diag(dist), 0.0)
    assert np.all(dist >= 0) and np.all(np.isfinite(dist))
    for array in (enc.vectors, enc.distance_matrix):
        if array is not None:
            assert not array.flags.writeable
            with pytest.raises(ValueError):
                array[0, 0] = 1.0
    assert not dist.flags.writeable and enc.distances is dist  # read-only, built once


@pytest.mark.parametrize("name", NAMES)
def test_registry_round_trip(name):
    fam = E.family(name)
    assert fam.name == name and E.families()[name] is fam and name in E.available()
    if fam.mechanism_kind is not None:
        assert E.family_of_mechanism(fam.mechanism_kind) is fam
    with pytest.raises(PosgeomError, match="already registered"):
        E.register(type(fam))


def test_unknown_family_names_the_known_ones():
    with pytest.raises(PosgeomError, match=r"known encodings: .*sinusoidal"):
        E.family("bogus")


def _context(corpus, **kw):
    res = corpus[1]
    fitted = {"mds": res.mds, "low_rank_mds": res.mds.truncate(3)}  # as the pipeline hands in
    fitted |= {"mds+smacof": res.refined} if res.refined is not None else {}
    return ComparisonContext(
        n_positions=N,
        n_kept=N,
        model_dim=16,
        n_heads=4,
        rope_head_dim=4,
        rope_base=10000.0,
        seed=0,
        fitted=fitted,
        **kw,
    )


@pytest.mark.parametrize("name", NAMES)
def test_a_family_builds_its_rows_encodings(name, corpus, request):
    """A family builds (named encodings with their description and parameters), it never
    scores: one encoding for a plain family, one per head for a per-head one."""
    from posgeom.encodings.comparison import comparable_encodings

    learned = request.getfixturevalue("bert") if E.family(name).comparison_needs else None
    fam = E.family(name)
    made = fam.encodings(_context(corpus, learned_model=learned))
    if name not in comparable_encodings():
        assert made == {}
        return
    assert made and all(isinstance(r, RowEncoding) for r in made.values())
    for row in made.values():
        assert isinstance(row.description, str) and row.description
        assert isinstance(row.parameters, int) and row.parameters >= 0
        assert row.encoding.distances.shape == (N, N)
    if fam.row_choice is None:
        assert list(made) == [name] and all(r.head is None for r in made.values())
    else:
        assert len(made) == 4 and [r.head["head"] for r in made.values()] == [0, 1, 2, 3]


@pytest.mark.parametrize("name", [x for x in NAMES if not E.family(x).comparison_needs])
def test_the_pipeline_row_is_the_score_of_the_chosen_encoding(name, corpus):
    """The row analyze scores for a family is every registered score of the encoding the family
    built (the head its row_choice picks), as the public score_encoding computes it."""
    from posgeom.encodings.comparison import comparable_encodings

    if name not in comparable_encodings():
        return
    counts, _ = corpus
    config = GeometryConfig(model_dim=16, n_heads=4, rope_head_dim=4, max_rank=0, noise=None)
    res = analyze(counts, config.replace(families=(name,), refine=name == "mds+smacof"))
    fam = E.family(name)
    made = fam.encodings(_context((counts, res)))
    target = res.distances
    scored = {k: score_encoding(r.encoding, target, seed=0) for k, r in made.items()}
    best = (
        next(iter(made))
        if fam.row_choice is None
        else min(scored, key=lambda k: (scored[k][fam.row_choice], list(made).index(k)))
    )
    row = res.row(name)
    assert row["description"] == made[best].description
    for key in ("paper", "scale_optimal", "stress1", "violation_rate", "separation"):
        assert row[key] == pytest.approx(scored[best][key], rel=1e-12, abs=1e-15), key
    heads = [h for h in res.heads if h["family"] == name]
    assert len(heads) == (0 if fam.row_choice is None else 4)
    assert all(h["paper"] >= row["paper"] for h in heads)


def _torch_geometry(module, n):
    """Distances of a torch position module's geometry over positions 0 .. n-1 (float64)."""
    import torch

    from posgeom.encodings._base import symmetrize
    from posgeom.nn import ALiBiBias, PositionEmbedding, RotaryEmbedding
    from posgeom.scores._encoding import encoding_distances

    def as_distances(vectors):
        return encoding_distances(vectors, encoding_kind="vectors")

    if isinstance(module, PositionEmbedding):
        return as_distances(module(n).detach().double().numpy())
    if isinstance(module, RotaryEmbedding):
        cos, sin = module(torch.arange(n), dtype=torch.float64)
        h = module.head_dim // 2
        return as_distances(torch.cat([cos[:, :h], sin[:, :h]], 1).numpy())
    assert isinstance(module, ALiBiBias)
    return symmetrize(-module(n)[0].double().numpy())  # head 0: m_0 |i - j|


@pytest.mark.parametrize("name", NAMES)
def test_numpy_and_torch_agree(name, corpus):
    pytest.importorskip("torch")
    fam = E.family(name)
    spec = TorchSpec(n=N, d=16, n_heads=4, seed=0, geometry=corpus[1], rank=3)
    try:
        module = fam.torch_module(spec)
    except PosgeomError as exc:
        assert "no torch module" in str(exc)
        return
    params = fam.torch_build_params(spec)
    if module is None or params is None:  # NoPE; randomly initialised tables
        return
    expected = fam.build(N, **params).distances
    np.testing.assert_allclose(_torch_geometry(module, N), expected, atol=2e-5 * expected.max())


def test_a_new_family_is_one_file(tmp_path):
    """The ARCHITECTURE.md example (tests/encodings/family_example.py), imported in a fresh process: it is
    listed, built, compared by default and scored like any family, with no other file touched."""
    import subprocess
    import sys
    from pathlib import Path

    script = """
import numpy as np
import posgeom.pipeline.rows, posgeom.encodings as E  # imported before the family is registered
import family_example
from posgeom.pipeline import GeometryConfig, analyze
from posgeom.encodings.comparison import default_encodings
from posgeom.corpus.counting import count_positions
from posgeom.synthetic import synthetic_corpus
assert "kerple_log" in E.available() and "kerple_log" in default_encodings()
assert E.role_of("kerple_log") == "candidate"
enc = E.get("kerple_log", 5, r1=2.0, r2=0.5)
np.testing.assert_allclose(enc.distances[0, 4], 2.0 * np.log(3.0))
counts = count_positions(synthetic_corpus(200, length=8, seed=0), max_positions=8)
config = GeometryConfig(model_dim=8, families=("kerple_log",), noise=None)
row = analyze(counts, config, kind="compare").row("kerple_log")
assert row["parameters"] == 0 and row["description"].startswith("KERPLE-log")
print("ok")
"""
    here = Path(__file__).parent
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(here), *sys.path]))
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_importing_the_families_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, posgeom.encodings, posgeom.pipeline.job; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_demo_rope_row_is_the_per_head_rope_of_compare():
    """Regression: ``posgeom demo`` scored ``rope(n, head_dim=d)`` (the sinusoidal geometry
    exactly: 64.9 for both at d = 128) while ``compare`` scored per-head RoPE (66.98)."""
    import subprocess
    import sys

    args = ["-q", "demo", "-d", "128", "--sequences", "300", "-n", "16"]
    out = subprocess.run(
        [sys.executable, "-m", "posgeom.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    rows = {
        cells[1].strip(): float(cells[2])
        for line in out.stdout.splitlines()
        if line.startswith("| ") and len(cells := line.split("|")) > 3
        if cells[2].strip().replace(".", "", 1).replace("e-", "", 1).isdigit()
    }
    counts = count_positions(synthetic_corpus(300, length=16, seed=0), max_positions=16)
    config = GeometryConfig(  # the demo scores against the plug-in geometry
        model_dim=128, families=("sinusoidal", "rope"), noise=None, estimator="plugin"
    )
    res = analyze(counts, config, kind="compare")
    assert rows["rope"] == pytest.approx(res.row("rope")["paper"], rel=1e-3)
    assert rows["sinusoidal"] == pytest.approx(res.row("sinusoidal")["paper"], rel=1e-3)
    assert rows["rope"] != pytest.approx(rows["sinusoidal"], rel=1e-3)


def test_roles_and_refits():
    """Each family says its role; the fitted ones refit to a replicate's distances (checked
    against an independent numpy MDS of a Euclidean configuration)."""
    from scipy.spatial.distance import pdist, squareform

    from helpers.mds import numpy_mds
    from posgeom.encodings._registry import ROLES

    assert all(fam.role in ROLES for fam in E.families().values())
    assert E.families_with_role("baseline") == ("nope", "random")
    assert set(E.families_with_role("fitted")) == {"mds", "low_rank_mds", "mds+smacof"}
    assert E.role_of("sinusoidal") == E.role_of("a user's encoding") == "candidate"
    pts = np.random.default_rng(0).normal(size=(9, 3)) * [3.0, 2.0, 1.0]
    dist = squareform(pdist(pts))
    full = E.family("mds").refit(dist, model_dim=6, low_rank=2)
    np.testing.assert_allclose(full.distances, dist, atol=1e-9)
    low = E.family("low_rank_mds").refit(dist, model_dim=6, low_rank=2)
    coords, _ = numpy_mds(dist**2, 2)
    np.testing.assert_allclose(low.distances, squareform(pdist(coords)), atol=1e-9)
    assert E.family("mds+smacof").refit(dist, model_dim=6, low_rank=2) is None
    assert E.family("sinusoidal").refit(dist, model_dim=6, low_rank=2) is None
