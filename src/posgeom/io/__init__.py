"""Files posgeom reads and writes: one-file artifacts (:mod:`.artifacts`: metadata inside .npz /
safetensors), atomic writes (:mod:`._atomic`), results folders and their manifest
(:mod:`._results`; :func:`.outputs.results_directory` is the one results-folder contract,
which :func:`posgeom.reports.results_folder` adds the report to) and validating array readers
(:mod:`._arrayfiles`)."""
