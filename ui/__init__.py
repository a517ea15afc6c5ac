"""The Streamlit dashboard's shared helpers (coverage_core itself never imports streamlit).

``state``   every session-state key and its accessors
``engine``  the dashboard's calls into coverage_core, without Streamlit
``flow``    page steps shared by several pages (inputs, embedding, analysis)
``widgets`` shared widgets (tuning sliders, persistent table editors)
``sidebar`` the sidebar every page shows
"""
