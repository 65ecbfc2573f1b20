"""Every module imports on its own (no import cycles), and `import posgeom` stays light."""

import pkgutil
import subprocess
import sys
import warnings

import posgeom
from posgeom import PosgeomDeprecationWarning

HEAVY = ("torch", "transformers", "datasets", "dask", "matplotlib", "tokenizers")


def _modules():
    for info in pkgutil.walk_packages(posgeom.__path__, "posgeom."):
        name = info.name
        if name.split(".")[1] in ("nn", "models", "training", "reproduction", "experiments"):
            continue  # torch layers: imported by their own tests
        yield name


def test_each_core_module_imports_alone():
    code = (
        "import importlib, sys\n"
        "for name in sys.argv[1:]:\n"
        "    for key in [k for k in sys.modules if k.startswith('posgeom')]:\n"
        "        del sys.modules[key]\n"
        "    importlib.import_module(name)\n"
    )
    modules = list(_modules())
    assert "posgeom.geometry.gram" in modules and len(modules) > 50, "the walk lost the package"
    out = subprocess.run([sys.executable, "-c", code, *modules], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]


def test_import_posgeom_is_light():
    code = (
        "import sys, posgeom\n"
        "posgeom.hellinger_distances, posgeom.classical_mds, posgeom.stress\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"import posgeom pulled in {out.stdout.strip()}"


def test_every_public_name_resolves():
    """Each name of ``posgeom.__all__`` (and each lazily loaded subpackage) is an attribute (the
    deprecated ones warn the first time: tests/project/test_deprecations.py checks that)."""
    missing = []
    for name in [*posgeom.__all__, *sorted(posgeom._SUBMODULES)]:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PosgeomDeprecationWarning)
                getattr(posgeom, name)
        except AttributeError as exc:
            missing.append(f"{name}: {exc}")
    assert set(posgeom._DEPRECATED) <= set(posgeom.__all__)
    assert not missing, "\n".join(missing)
    assert posgeom.read_token_ids.__module__ == "posgeom.corpus.token_ids"


def test_the_old_experiment_names_are_the_new_modules_and_warn():
    """``posgeom.experiments.training`` / ``.reproduce`` (deprecated, one release) give the
    modules of ``posgeom.training`` / ``posgeom.reproduction`` themselves, submodules included,
    each with a DeprecationWarning naming the new import."""
    code = (
        "import warnings, sys\n"
        "warnings.simplefilter('always')\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    from posgeom.experiments.training.config import TrainConfig\n"
        "    import posgeom.experiments.reproduce.settings as old_settings\n"
        "import posgeom.training.config as config, posgeom.reproduction.settings as settings\n"
        "assert TrainConfig is config.TrainConfig and old_settings is settings\n"
        "assert sys.modules['posgeom.experiments.training'] is sys.modules['posgeom.training']\n"
        "assert config.__spec__.name == 'posgeom.training.config'\n"
        "print(sorted({str(x.message).split(' is ')[0] for x in w\n"
        "             if issubclass(x.category, DeprecationWarning)}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == str(
        sorted(
            [
                "posgeom.experiments.reproduce",
                "posgeom.experiments.reproduce.settings",
                "posgeom.experiments.training",
                "posgeom.experiments.training.config",
            ]
        )
    )
