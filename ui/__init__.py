"""The Streamlit dashboard's shared helpers (coverage_core itself never imports streamlit).

``state``    every session-state key and its accessors
``settings`` the core's configuration flattened for widgets
``engine``   the dashboard's calls into coverage_core, without Streamlit
``loading``  reading the user's inputs (documents, vectors, saved analyses, questions) into the session
``flow``     page steps shared by several pages (embedding, analysis, checks)
``views``    one module per page: its tables and page-specific steps, without Streamlit
``exports``  the downloads: JSON and HTML reports, saved-analysis zip, improved CSV
``formats``  one number format per quantity
``messages`` core messages in the dashboard's words
``widgets``  shared widgets (tuning sliders, persistent table editors)
``sidebar``  the sidebar every page shows
"""
