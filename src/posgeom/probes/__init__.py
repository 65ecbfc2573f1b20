"""Where a model keeps position: probes, beside the corpus geometry (issue 26).

* :mod:`~posgeom.probes.table`: absolute-position and order probes of a position table
  (Wang & Chen 2020, PE-Study's protocol), with intervals over seeds and folds;
* :mod:`~posgeom.probes.layers`: linear and small-MLP probes of absolute position from every
  layer's hidden states, on held-out sequences (Haviv et al. 2022);
* :mod:`~posgeom.probes.positional`: the positional part's share and rank (Song & Zhong 2023);
* :mod:`~posgeom.probes.monotone`: hidden channels monotone in position (Yu et al. 2025);
* :mod:`~posgeom.probes.agreement`: probe error beside stress and R² across layers, a verdict;
* :mod:`~posgeom.probes.result`: :class:`ProbeResult` (JSON, Markdown, folder; its HTML page:
  :mod:`~posgeom.probes.report`).

``import posgeom.probes`` needs only numpy and scipy; layer probes import torch when they run.
"""

from posgeom.probes.api import probe
from posgeom.probes.result import ProbeResult
from posgeom.probes.sources import read_table
from posgeom.probes.table import TableProbes, probe_table

__all__ = ["ProbeResult", "TableProbes", "probe", "probe_table", "read_table"]
