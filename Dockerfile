# One image for every rainforest service of docker-compose.yml: the Dask scheduler and
# workers, the data generator and the training job (the same code on every process, as
# Dask requires: tasks are rainforest functions, unpickled on the workers).
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml README.md ./
COPY rainforest rainforest
COPY storage storage
COPY boat boat
COPY scripts scripts
# bokeh serves the scheduler's dashboard (http://localhost:8787)
RUN pip install --no-cache-dir . "bokeh>=3.1"

# Numba compiles the kernels once per container into this cache.
ENV NUMBA_CACHE_DIR=/tmp/numba-cache
