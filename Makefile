# Two entry points for a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint unit crds manifests clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,train]'
	touch $(STAMP)

## run: install, start the local control plane, run the main example job with live logs
run: $(STAMP)
	$(BIN)/kubetrain up >/dev/null
	-$(BIN)/kubetrain delete pytorchjob/pytorch-ddp --cascade foreground >/dev/null 2>&1
	$(BIN)/kubetrain run -f examples/pytorch/pytorchjob.yaml

## test: install, lint, check layering, run the whole suite
test: $(STAMP) lint
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check kubetrain tests bench
	$(BIN)/ruff format --check kubetrain tests bench
	$(BIN)/lint-imports

## crds: regenerate deploy/crds from the API types
crds: $(STAMP)
	$(BIN)/kubetrain crds --output-dir deploy/crds

## manifests: regenerate everything under deploy/ that comes from the package
manifests: crds
	cp kubetrain/operator/trainjob/runtimes/*.yaml deploy/runtimes/

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
