"""The analysis of a corpus: counts -> estimate of D -> MDS -> scores (:mod:`.pipeline`,
:class:`.pipeline_result.PipelineResult`) and every encoding against it (:mod:`.compare`: the
registry's rows in :mod:`.rows`, :class:`.compare_result.ComparisonResult`, bootstrap intervals on
the rows in :mod:`.intervals`)."""
