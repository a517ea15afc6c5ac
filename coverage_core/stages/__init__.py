"""The analysis stages the session runs before measuring, and the evidence they read.

``chunking``, ``calibration`` (the support level τ), ``clustering``, ``topics``
(cluster names), ``lexical`` and ``subjects`` (the word and subject evidence the
off-topic screener of :mod:`coverage_core.offtopic.screener` reads) and
``similarity``, the scan of chunk x question similarities, made blockwise by
:mod:`coverage_core.blockwise`. :mod:`coverage_core.measure` then computes
every coverage figure from them.
"""
