"""Every module imports on its own (no import cycles), and `import posgeom` stays light."""

import pkgutil
import subprocess
import sys

import posgeom

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
    """Each name of ``posgeom.__all__`` (and each lazily loaded subpackage) is an attribute."""
    missing = []
    for name in [*posgeom.__all__, *sorted(posgeom._SUBMODULES)]:
        try:
            getattr(posgeom, name)
        except AttributeError as exc:
            missing.append(f"{name}: {exc}")
    assert not missing, "\n".join(missing)
    assert posgeom.read_token_ids.__module__ == "posgeom.corpus.token_ids"
