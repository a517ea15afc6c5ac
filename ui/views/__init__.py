"""One module per page: the tables and page-specific steps a page shows, without Streamlit.

A page reads its widgets, calls its view (``from ui.views import gaps as view``)
and :mod:`ui.flow`, and shows what comes back; downloads are in :mod:`ui.exports`.
"""
