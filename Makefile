# probe: the two set-up commands are `make demo` and `make test`.
# Both create a virtualenv in .venv/ (with PYTHON, default python3 >= 3.10) and install into it;
# nothing needs to be activated and nothing is installed into the system interpreter.
PYTHON ?= python3
VENV ?= .venv
VPY := $(VENV)/bin/python
PROBE := $(VENV)/bin/probe
PIP := $(VPY) -m pip install --quiet --disable-pip-version-check
PLUGINS := $(wildcard plugins/*/pyproject.toml)
EDITABLES := -e . $(foreach p,$(PLUGINS),-e $(dir $(p)))
TORCH := torch==2.13.0
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
# one retry for it: where that index cannot be reached (a mirror or local wheels in pip's own
# configuration serve instead), pip's default five retries per package add over a minute

.PHONY: install demo test bench clean

$(VPY):
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null || \
	  { echo "make: $(PYTHON) is missing or older than 3.10; run: make PYTHON=/path/to/python3.10+"; exit 1; }
	@$(PYTHON) -c 'import venv, ensurepip' 2>/dev/null || \
	  { echo "make: $(PYTHON) cannot create a virtualenv: its venv module is missing."; \
	    echo "      Debian/Ubuntu: sudo apt-get install python3-venv   (or python3.X-venv for your version)"; \
	    echo "      then run make again; or: make PYTHON=/path/to/another/python3"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip

install: $(VPY)  ## create .venv/, install probe, its plugins and PyTorch (CPU build) for .pt tensor files
	$(PIP) $(EDITABLES)
	@$(VPY) -c 'import torch, sys; sys.exit(torch.__version__.split("+")[0] != "2.13.0")' 2>/dev/null || \
	  { echo "installing $(TORCH), CPU build (reads .pt tensor files) from $(TORCH_INDEX)"; \
	    $(PIP) --retries 1 --index-url $(TORCH_INDEX) "$(TORCH)"; }

demo: install  ## compare the bundled example dumps and write reports to output/demo
	$(PROBE) compare -tp examples/pytorch_cnn/target/step0/rank0/dump.json \
	                 -gp examples/pytorch_cnn/golden/step0/rank0/dump.json \
	                 -o output/demo --format csv,xlsx,json
	$(PROBE) compare -tp examples/pytorch_multirank/target/step0 \
	                 -gp examples/pytorch_multirank/golden/step0 -o output/demo/multirank
	$(PROBE) compare -tp examples/mindspore_to_pytorch/target/step0 \
	                 -gp examples/mindspore_to_pytorch/golden/step0 \
	                 -am examples/mindspore_to_pytorch/api_mapping.yaml -o output/demo/mindspore_to_pytorch

test: install  ## install what the tests need into .venv/ and run them (this is what CI runs)
	$(PIP) -r tests/requirements.txt
	@.ci/install-browser.sh $(VPY)
	$(VPY) -m pytest -q; code=$$?; if [ $$code -eq 5 ]; then echo "pytest collected no tests: the suite is broken"; exit 1; fi; exit $$code

bench: install  ## run the benchmarks (on demand; prints figures)
	$(VPY) bench/run.py

clean:  ## remove outputs and build files (keeps .venv/; rm -rf .venv to start over)
	rm -rf output build *.egg-info core/*.egg-info plugins/*/*.egg-info .pytest_cache
