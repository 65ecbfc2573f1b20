"""Studies that regenerate docs pages from posgeom runs (``python -m studies.atlas``)."""
