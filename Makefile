# probe: the two set-up commands are `make demo` and `make test`.
PYTHON ?= python3
PIP := $(PYTHON) -m pip install --quiet --disable-pip-version-check
PLUGINS := $(wildcard plugins/*/pyproject.toml)
EDITABLES := -e . $(foreach p,$(PLUGINS),-e $(dir $(p)))

.PHONY: install demo test bench clean

install:  ## install probe, its plugins and PyTorch (CPU) for .pt tensor files
	$(PIP) $(EDITABLES) "torch==2.13.0"

demo: install  ## compare the bundled example dumps and write reports to output/demo
	probe compare -tp examples/pytorch_cnn/target/step0/rank0/dump.json \
	              -gp examples/pytorch_cnn/golden/step0/rank0/dump.json \
	              -o output/demo --format csv,xlsx,json
	probe compare -tp examples/pytorch_multirank/target/step0 \
	              -gp examples/pytorch_multirank/golden/step0 -o output/demo/multirank
	probe compare -tp examples/mindspore_to_pytorch/target/step0 \
	              -gp examples/mindspore_to_pytorch/golden/step0 -am -o output/demo/mindspore_to_pytorch

test: install  ## install what the tests need and run them
	$(PIP) -r tests/requirements.txt
	@if [ -x .ci/install-browser.sh ]; then .ci/install-browser.sh $(PYTHON); fi
	$(PYTHON) -m pytest -q; code=$$?; if [ $$code -eq 5 ]; then echo "pytest collected no tests: the suite is broken"; exit 1; fi; exit $$code

bench: install  ## run the benchmarks (on demand; prints figures)
	$(PYTHON) bench/run.py

clean:
	rm -rf output build *.egg-info core/*.egg-info plugins/*/*.egg-info .pytest_cache
