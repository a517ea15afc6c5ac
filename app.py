"""Dashboard entry point: page navigation, nothing else (each page draws the shared sidebar, ``ui.sidebar``).

Run with ``streamlit run app.py`` (see ``run.sh``).
"""

import streamlit as st

from ui import sidebar

# An emoji icon: Streamlit draws it as an inline image. A ":material/…:" page icon would make every browser fetch
# the favicon from fonts.gstatic.com, and nothing may leave this server. (Material icons elsewhere are drawn with
# the font Streamlit ships itself.)
PAGE_ICON = "🧭"
st.set_page_config(page_title="RAG test-set coverage", page_icon=PAGE_ICON, layout="wide")

PAGES = [
    st.Page("pages/1_upload.py", title="Upload", icon=":material/upload_file:", default=True),
    st.Page("pages/2_configure.py", title="Configure", icon=":material/tune:"),
    st.Page("pages/3_results.py", title="Results", icon=":material/monitoring:"),
    st.Page("pages/4_gaps.py", title="Gap analysis", icon=":material/troubleshoot:"),
    st.Page("pages/5_fitness.py", title="Knowledge-base fitness", icon=":material/target:"),
    st.Page("pages/6_compare.py", title="Compare test sets", icon=":material/compare_arrows:"),
    st.Page("pages/7_retrieval.py", title="Retrieval and chunking", icon=":material/manage_search:"),
    st.Page("pages/8_subquestions.py", title="Sub-questions", icon=":material/account_tree:"),
    st.Page("pages/9_traffic.py", title="Production traffic", icon=":material/query_stats:"),
    st.Page("pages/10_history.py", title="History", icon=":material/history:"),
]

page = st.navigation(PAGES)
try:
    page.run()
finally:
    sidebar.forget()
