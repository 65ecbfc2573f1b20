"""Performance benchmarks of posgeom (time and memory against peers); run from the repository root
as modules, e.g. ``python -m benchmarks.bench_geometry``. The studies that write the docs pages
(estimation, extension, reproduction) are in ``studies/``."""
