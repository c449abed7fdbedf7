# The operator image: `kubetrain operator` runs the controllers against the cluster it runs in
# (deploy/operator/deployment.yaml). Only the package and its runtime dependencies go in: no
# test or training extras (jobs bring their own images).
#
#   docker build -t ghcr.io/kubetrain/kubetrain:0.1.0 .

FROM python:3.11-slim AS build
RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY kubetrain ./kubetrain
RUN pip install --no-cache-dir .

FROM python:3.11-slim
COPY --from=build /opt/venv /opt/venv
# PYTHONDONTWRITEBYTECODE: the root filesystem is read-only in the Deployment.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1
# A numeric non-root user, so runAsNonRoot can verify it without a passwd entry.
USER 65532:65532
WORKDIR /tmp
EXPOSE 8080 8081
# No init process: the operator is PID 1, so it must stop on SIGTERM by itself and release its
# Lease (tests/integration/deploy/test_operator_stop.py).
ENTRYPOINT ["kubetrain"]
CMD ["operator"]
