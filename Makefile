# Two entry points for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run extras test lint unit crds k8s-openapi manifests clean envtest chromium docker dashboard-assets

# A real Kubernetes control plane for the tests that run against one (envtest's convention:
# KUBEBUILDER_ASSETS names a directory with kube-apiserver, kube-controller-manager,
# kube-scheduler and etcd). Given from outside, it is used as it is; otherwise the archive of
# the shared folder beside this checkout is unpacked into .envtest/, with Debian's etcd
# beside it. Without either, those tests skip and say what to set.
K8S_ARCHIVE := ../shared/k8s/kubernetes-v1.28.7-linux-amd64.tar.xz
ENVTEST_DIR := .envtest/k8s-v1.28.7
ifeq ($(origin KUBEBUILDER_ASSETS),undefined)
ifneq ($(wildcard $(K8S_ARCHIVE)),)
export KUBEBUILDER_ASSETS := $(abspath $(ENVTEST_DIR))
ENVTEST_STAMP := $(ENVTEST_DIR)/.unpacked
endif
endif

# `make run` installs what the main example needs and nothing more: kubetrain, torch (CPU wheel)
# and scikit-learn (the train extra). Every other framework, MPI and the Kubeflow SDKs come with
# `make extras` (and `make test`), each behind a stamp of its own.
# setuptools' editable install of a flat layout ends with a notice, not a warning, that a folder
# named like the package in the working directory could shadow it: hidden, as pip's --quiet does.
EDITABLE := PYTHONWARNINGS=ignore::UserWarning:setuptools.command.editable_wheel \
  $(BIN)/python -m pip install --quiet -e
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(EDITABLE) '.[train]'
	touch $(STAMP)

# Open MPI for the MPIJob example (mpirun; mpicc too, should mpi4py build from source) comes
# from Debian's packages, as root or through sudo; where there is no mpirun and no way to
# install it, a note says so and the MPI test skips, saying why.
EXTRAS_STAMP := $(VENV)/.installed-extras
$(EXTRAS_STAMP): $(STAMP)
	@command -v mpirun >/dev/null 2>&1 || { \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO="sudo -n"; \
	  if command -v apt-get >/dev/null 2>&1 && { [ -z "$$SUDO" ] || command -v sudo >/dev/null 2>&1; }; then \
	    { $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	        openmpi-bin libopenmpi-dev >/dev/null; } \
	      || echo "note: could not install Open MPI; the MPI example and its test need mpirun"; \
	  else echo "note: no mpirun, and no apt-get to install it: the MPI example needs Open MPI"; fi; }
	$(EDITABLE) '.[all]'
	touch $@

## extras: every framework's examples (TensorFlow, Paddle, JAX, XGBoost, MPI with Open MPI),
## the initializers' and the LLM fine-tuning libraries, on top of what `make run` installs
extras: $(EXTRAS_STAMP)

# The test tools, and the official Kubeflow SDK for the test that drives kubetrain with it: a
# directory of its own, since it pins an older kubernetes client than kubetrain's (so pip's
# check of the whole environment, which that directory never joins, is left out).
TEST_STAMP := $(VENV)/.installed-test
$(TEST_STAMP): $(EXTRAS_STAMP)
	$(EDITABLE) '.[all,test]'
	test -f $(VENV)/kubeflow-sdk/kubeflow/trainer/__init__.py || \
	  $(BIN)/python -m pip install --quiet --no-warn-conflicts --target $(VENV)/kubeflow-sdk \
	    'kubeflow==0.5.0'
	touch $@

## run: install, start the local control plane, run the main example job with live logs
run: $(STAMP)
	$(BIN)/kubetrain up >/dev/null
	$(BIN)/kubetrain delete pytorchjob/pytorch-ddp --cascade foreground >/dev/null 2>&1 || true
	$(BIN)/kubetrain run -f examples/pytorch/pytorchjob.yaml

## envtest: unpack the real control plane's binaries and install etcd (see above)
envtest: $(ENVTEST_STAMP)

$(ENVTEST_DIR)/.unpacked: $(K8S_ARCHIVE)
	@command -v etcd >/dev/null 2>&1 || { \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO="sudo -n"; \
	  { $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	      etcd-server >/dev/null; } \
	    || echo "note: could not install etcd-server; the tests on a real kube-apiserver skip"; }
	mkdir -p $(ENVTEST_DIR)
	tar -xJf $(K8S_ARCHIVE) -C $(ENVTEST_DIR)
	if command -v etcd >/dev/null 2>&1; then ln -sf "$$(command -v etcd)" $(ENVTEST_DIR)/etcd; fi
	touch $@

# The official kubeflow-training SDK (v1 jobs), for the test that it still imports and runs on
# a machine where jobs have run: a directory of its own too, for its own kubernetes client.
KUBEFLOW_TRAINING := $(VENV)/kubeflow-training/kubeflow/training/__init__.py
$(KUBEFLOW_TRAINING): | $(TEST_STAMP)
	$(BIN)/python -m pip install --quiet --no-warn-conflicts --target $(VENV)/kubeflow-training \
	  'kubeflow-training==1.9.4'

# moto's S3 server, for the s3:// initializer's tests: a virtual environment of its own, since
# its boto3 pins python-dateutil<3, which kubetrain's Kubernetes client cannot use.
MOTO := $(VENV)/moto/bin/moto_server
$(MOTO): | $(TEST_STAMP)
	test -x $(VENV)/moto/bin/python || $(PYTHON) -m venv $(VENV)/moto
	$(VENV)/moto/bin/python -m pip install --quiet 'moto[s3]==5.2.5' 'flask>=3' 'flask-cors>=5'

## test: install, lint, check layering, run the whole suite
test: $(TEST_STAMP) $(KUBEFLOW_TRAINING) $(MOTO) lint $(ENVTEST_STAMP) chromium docker
	$(BIN)/python -m pytest -q

# Docker's engine and a static busybox for the node's container runtime tests (Debian's
# docker.io and busybox-static; the tests start a dockerd of their own and import a busybox
# image offline): installed when missing, as root or through sudo; without them those tests
# skip and say why.
docker:
	@{ command -v dockerd >/dev/null 2>&1 && test -f /usr/share/doc/busybox-static/copyright; } || { \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO="sudo -n"; \
	  { $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	      docker.io busybox-static >/dev/null; } \
	    || echo "note: could not install docker.io and busybox-static; the container tests skip"; }

# Chromium for the dashboard's tests in a real browser (Debian's; Playwright, from the test
# extra, drives it): installed when missing, as root or through sudo; without it those tests
# skip and say why.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO="sudo -n"; \
	  { $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	      chromium >/dev/null; } \
	    || echo "note: could not install chromium; the dashboard's browser tests skip"; }

## dashboard-assets: rebuild kubetrain/dashboard/static from kubetrain/dashboard/frontend
## (its package.json and package-lock.json, with npm; Debian's nodejs and npm when missing)
DASHBOARD_FRONTEND := kubetrain/dashboard/frontend
dashboard-assets:
	@command -v npm >/dev/null 2>&1 || { \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO="sudo -n"; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq \
	    nodejs npm >/dev/null; }
	cd $(DASHBOARD_FRONTEND) && npm ci --no-audit --no-fund && npm run build

lint: $(TEST_STAMP)
	$(BIN)/ruff check kubetrain tests bench
	$(BIN)/ruff format --check kubetrain tests bench
	$(BIN)/lint-imports

## crds: regenerate deploy/crds from the API types
crds: $(STAMP)
	$(BIN)/kubetrain crds --output-dir deploy/crds

## k8s-openapi: fetch the pod template's (and friends') OpenAPI definitions from the real
## kube-apiserver once, keep them in kubetrain/api/_k8sopenapi.py, and regenerate deploy/crds
k8s-openapi: $(STAMP) $(ENVTEST_STAMP)
	$(BIN)/python tools/k8s_openapi.py kubetrain/api/_k8sopenapi.py
	$(MAKE) crds

## manifests: regenerate everything under deploy/ that comes from the package
manifests: crds
	cp kubetrain/operator/trainjob/runtimes/*.yaml deploy/runtimes/

clean:
	rm -rf $(VENV) .envtest .pytest_cache .ruff_cache .hypothesis
