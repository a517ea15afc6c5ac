"""The analysis stages, in the order the session runs them.

``chunking``, ``calibration`` (the support level τ), ``clustering``,
``topics`` (cluster names), ``screening`` (off-topic questions, with its
``lexical`` evidence) and ``measure`` (every coverage figure). ``similarity``
is the scan of chunk x question similarities they read, made blockwise by
:mod:`coverage_core.blockwise`.
"""
