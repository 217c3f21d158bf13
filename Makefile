# kamaji-hami-platform: `make up` runs the platform, `make test` runs the unit suite.
SHELL := /bin/bash
.DEFAULT_GOAL := help

STACK ?= dev
VENV ?= .venv
TEST_VENV ?= .venv-test
PYTHON ?= python3
# Seconds per Kubernetes API request in `make down` (a lost cluster's API does not answer).
K8S_CLIENT_TIMEOUT ?= 30
# Local file backend inside the project unless the user chose another one.
export PULUMI_BACKEND_URL ?= file://$(CURDIR)/.pulumi-state
export PULUMI_SKIP_UPDATE_CHECK := true
# The passphrase encrypts secrets (kubeconfigs) in the stack state. Export your
# own (or PULUMI_CONFIG_PASSPHRASE_FILE); the empty default only suits a
# throwaway local dev stack.
ifeq ($(origin PULUMI_CONFIG_PASSPHRASE)$(origin PULUMI_CONFIG_PASSPHRASE_FILE),undefinedundefined)
export PULUMI_CONFIG_PASSPHRASE :=
endif

.PHONY: help up preview down test engine sim ssh test-venv e2e e2e-lifecycle lint images check-pulumi check-tools check-kind-version \
	venv stack unprotect-tenant tenant-argument kamaji-chart mirror live-tools live-engine live-engine-stop live-engine-test live-node-image live-cluster-test live-images live-images-test live-stack live-up live-preview live-e2e live-down live live-hosts drift

help:
	@echo "make up       create the platform (stack $(STACK)): kind, Kamaji, tenants, HAMi"
	@echo "make preview  show what 'make up' would change"
	@echo "make down     destroy everything the stack created"
	@echo "make drift    fail naming every resource changed by hand (make up REFRESH=1 puts them back)"
	@echo "make test     unit suite and shell lint in .venv-test, made afresh when requirements.txt changes"
	@echo "make engine   the real Pulumi engine, built from source: every stack previewed, upgrades, up (needs Go)"
	@echo "make sim      tenant objects against a real kube-apiserver built from Go modules (needs Go)"
	@echo "make ssh      worker hosts joined and reset over real SSH, in a sandbox (needs root)"
	@echo "make live-engine-test  the live tier's own Docker engine, built from Go modules, in a network"
	@echo "              namespace with no route out (needs root and Go)"
	@echo "make live-engine / live-engine-stop  start / stop that engine in $(LIVE_ROOT)"
	@echo "make live-node-image  the kind node image (Kubernetes v1.35.4) built from source in that engine"
	@echo "make live-cluster-test  a kind cluster from that image comes up Ready in the engine (needs root, Go)"
	@echo "make live-images  every platform image built from source into the tier's mirror (localhost:5001)"
	@echo "make live-images-test  those images run from the mirror; the live stack finds all it needs there"
	@echo "make live-up / live-preview / live-e2e / live-down  the dev stack on the live engine (KAMAJI_SRC, KAMAJI_ETCD_SRC)"
	@echo "make live     the whole lifecycle on the live tier (make e2e-lifecycle there), its phases timed"
	@echo "make live-hosts  worker hosts joined and removed over real SSH by a real kubeadm (two existing-mode stacks)"
	@echo "              (engine, sim and ssh fail when a test skips; ALLOW_SKIP=1 lets them skip)"
	@echo "make images   list every pinned image and chart"
	@echo "make kamaji-chart [ARCHIVES=<folder>]  fetch (or take from <name>-<tag>.tar.gz there) and verify the pinned Kamaji chart"
	@echo "make mirror [MIRROR=<registry>] [FROM=<registry>]  copy every image and chart the stack pulls into a mirror"
	@echo "make e2e      acceptance cases TC-00..TC-08 and the declared workloads against the deployed stack $(STACK)"
	@echo "make e2e-lifecycle  up, cases, no changes, drift, day 2, destroy on a throwaway stack"
	@echo "make unprotect-tenant TENANT=<name>  before removing a tenant from the config (its data goes)"

# Preview runs no commands: only the Pulumi CLI is needed.
# An older engine would ignore options the program relies on (replace_with, deleted_with).
check-pulumi:
	@command -v pulumi >/dev/null || { echo "missing: pulumi  -> https://www.pulumi.com/docs/iac/download-install/"; exit 1; }
	@want=$$($(PYTHON) -m kamaji_hami_platform.versions PULUMI_CLI_MIN_VERSION); \
	have=$$(pulumi version 2>/dev/null | sed 's/^v//'); \
	if [ "$$(printf '%s\n%s\n' "$$want" "$$have" | sort -V | head -n 1)" != "$$want" ]; then \
	  echo "the Pulumi CLI is $${have:-unknown}, older than $$want, which this program needs: upgrade it -> https://www.pulumi.com/docs/iac/download-install/"; exit 1; fi

check-tools:
	@missing=0; \
	command -v docker >/dev/null || { echo "missing: docker  -> https://docs.docker.com/engine/install/"; missing=1; }; \
	command -v kind   >/dev/null || { echo "missing: kind    -> https://kind.sigs.k8s.io/docs/user/quick-start/#installation"; missing=1; }; \
	command -v pulumi >/dev/null || { echo "missing: pulumi  -> https://www.pulumi.com/docs/iac/download-install/"; missing=1; }; \
	if [ $$missing -eq 0 ] && ! docker info >/dev/null 2>&1; then \
	  echo "docker is installed but the daemon is not reachable (is it running? may this user use it?)"; missing=1; fi; \
	exit $$missing

# The pinned node image is built by one kind release; another kind may not run it well.
check-kind-version: check-tools
	@want=$$($(PYTHON) -m kamaji_hami_platform.versions KIND_CLI_VERSION); \
	have=$$(kind version 2>/dev/null | awk '{print $$2}'); \
	[ "$$have" = "$$want" ] || echo "warning: kind $$have is installed, but the pinned node image is built by kind $$want; install it: go install sigs.k8s.io/kind@$$want"

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet -r requirements.txt
	touch $@

venv: $(VENV)/.installed

policy/venv/.installed: policy/requirements.txt
	$(PYTHON) -m venv policy/venv
	policy/venv/bin/pip install --quiet -r policy/requirements.txt
	touch $@

# The stack on the backend PULUMI_BACKEND_URL names. Never a login command: it would switch the
# user's global backend; the environment variable selects it for these commands only.
stack: check-pulumi venv
	@case "$$PULUMI_BACKEND_URL" in file://*) mkdir -p "$${PULUMI_BACKEND_URL#file://}";; esac
	@[ -n "$$PULUMI_CONFIG_PASSPHRASE$$PULUMI_CONFIG_PASSPHRASE_FILE" ] || \
	  echo "note: PULUMI_CONFIG_PASSPHRASE is empty (fine for a local dev stack only)"
	@pulumi stack select $(STACK) 2>/dev/null || pulumi stack init $(STACK)

# The policy pack guards `up` as it guards `preview`. A stack marked production has a policy config
# (policy/config/<stack>.json) that makes the advisory guardrails mandatory there.
POLICY_CONFIG = $(wildcard policy/config/$(STACK).json)
POLICY_ARGS = --policy-pack policy $(if $(POLICY_CONFIG),--policy-pack-config $(POLICY_CONFIG))

# The state check first (kamaji_hami_platform/tools/upgrade_check.py): a state written before
# protection, or a create-only setting changed, stops `up` with the platform's own message.
# pulumi-kubernetes leaves each provider's kubeconfig (credentials included) in $TMPDIR: every
# pulumi run gets a TMPDIR of its own, removed when it ends (the tool is stdlib only).
PULUMI_PRIVATE = $(PYTHON) kamaji_hami_platform/tools/private_tmp.py pulumi

up: check-tools check-kind-version stack policy/venv/.installed kamaji-chart
	$(VENV)/bin/python -m kamaji_hami_platform.tools.cgroup_check --stack $(STACK) --mode up
	$(VENV)/bin/python -m kamaji_hami_platform.tools.inotify_check --stack $(STACK) --mode up
	$(VENV)/bin/python -m kamaji_hami_platform.tools.mirror_check --stack $(STACK) --mode up
	$(VENV)/bin/python -m kamaji_hami_platform.tools.upgrade_check --stack $(STACK) --mode up
	$(PULUMI_PRIVATE) up --yes$(if $(filter 1 yes true,$(REFRESH)), --refresh) --stack $(STACK) $(POLICY_ARGS)

# Drift: whatever was changed outside `up` in a field the platform sets, named per resource, and
# an error when there is any (the state is left as it is). `make up REFRESH=1` puts it back.
drift: check-pulumi venv
	$(PULUMI_PRIVATE) refresh --preview-only --expect-no-changes --diff --stack $(STACK)

# What `up` would change, with the policy pack enforced; needs neither Docker nor kind. The
# Kamaji release loads its chart in every preview of a deployed stack: fetch it first.
preview: stack policy/venv/.installed kamaji-chart
	$(VENV)/bin/python -m kamaji_hami_platform.tools.cgroup_check --stack $(STACK) --mode preview
	$(VENV)/bin/python -m kamaji_hami_platform.tools.inotify_check --stack $(STACK) --mode preview
	$(VENV)/bin/python -m kamaji_hami_platform.tools.mirror_check --stack $(STACK) --mode preview
	$(VENV)/bin/python -m kamaji_hami_platform.tools.upgrade_check --stack $(STACK) --mode preview
	$(PULUMI_PRIVATE) preview --diff --stack $(STACK) $(POLICY_ARGS)

# The Kamaji chart of the pinned tag, verified by digest, into .charts/ (reused once there).
kamaji-chart: venv
	$(VENV)/bin/python -m kamaji_hami_platform.management.kamaji_chart $(if $(ARCHIVES),--archives $(ARCHIVES))

# The kind cluster, the control planes and the create-only guards are protected (a change that
# would replace them is refused): destroy on purpose ignores that (pulumi >= 3.256), and skips
# draining the workers, since the whole platform goes. The engine still configures each
# Kubernetes provider, whose discovery would wait on a cluster that is gone for the client's
# dial timeouts: bound each request (pulumi-kubernetes provider.go PULUMI_K8S_CLIENT_TIMEOUT).
down: check-tools stack
	KHP_SKIP_DRAIN=1 PULUMI_K8S_CLIENT_TIMEOUT=$(K8S_CLIENT_TIMEOUT) $(PULUMI_PRIVATE) destroy --yes --ignore-protect --stack $(STACK)

tenant-argument:
	@[ -n "$(TENANT)" ] || { echo "usage: make unprotect-tenant TENANT=<name> [STACK=$(STACK)]"; exit 2; }

# Removing a tenant deletes its control plane and datastore: release its protection first.
unprotect-tenant: tenant-argument stack
	$(VENV)/bin/python -m kamaji_hami_platform.tools.protection --stack $(STACK) --tenant $(TENANT)

# The unit suite and the shell lint (shellcheck from requirements.txt, on every rendered script).
test: test-venv
	KHP_REQUIRE_TIER= $(TEST_VENV)/bin/python -m pytest -m "not e2e and not engine and not sim and not ssh and not live"

# A tier that skips proves nothing: `make sim` and `make ssh` fail when a test of theirs skips or
# none runs, with the reason (KHP_REQUIRE_TIER, tests/tiers.py). ALLOW_SKIP=1 lets them skip, each
# skip's reason listed (-rs).
require_tier = KHP_REQUIRE_TIER=$(if $(ALLOW_SKIP),,$(1))

# The engine tier: the real Pulumi CLI, language hosts and providers, built from served Go modules
# and upstream source archives into the toolchain cache (toolchain/pulumi/build.sh), run against a
# copy of the project with a home, backend and passphrase of their own; the sim tier's API server
# stands in for clusters (toolchain/build.sh). The program's and the policy pack's virtualenvs are
# the ones `make preview` uses.
engine: test-venv venv policy/venv/.installed
	bash toolchain/pulumi/build.sh >/dev/null
	bash toolchain/build.sh >/dev/null
	$(call require_tier,engine) $(TEST_VENV)/bin/python -m pytest -m engine -rs -v tests/engine

# The partial simulation tier: a real kube-apiserver 1.35 and etcd, built from their Go
# modules into a cache outside the repository (toolchain/build.sh), fed the platform's objects;
# and HAMi's real scheduler behind kube-scheduler, built from its upstream source archive
# (toolchain/hami.sh: the module proxy does not serve HAMi).
sim: test-venv
	bash toolchain/build.sh >/dev/null
	bash toolchain/hami.sh >/dev/null
	$(call require_tier,sim) $(TEST_VENV)/bin/python -m pytest -m sim -rs -v tests/sim

# Worker hosts over SSH, for real: Debian's sshd unpacked into the toolchain cache
# (toolchain/openssh.sh, never installed) runs in a mount namespace with stand-in host tools.
ssh: test-venv
	bash toolchain/openssh.sh >/dev/null
	$(call require_tier,ssh) $(TEST_VENV)/bin/python -m pytest -m ssh -rs -v tests/ssh

# The live tier's engine: dockerd, containerd, runc, the docker CLI and kind built from served Go
# modules into the toolchain cache (toolchain/live/build.sh), run in a folder and a network
# namespace of their own with no route out (docs/development/live-tier.md). Needs root.
LIVE_ROOT ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/kamaji-hami-platform/live/engine
LIVE_TOOLS = $$(bash toolchain/live/build.sh | tail -n 1)

live-tools:
	@bash toolchain/live/build.sh >/dev/null

live-engine: live-tools
	@bin=$(LIVE_TOOLS); bash toolchain/live/scripts/engine-start.sh "$$bin" $(LIVE_ROOT) >/dev/null && \
	bash toolchain/live/scripts/engine-check.sh $(LIVE_ROOT) && \
	echo "run commands beside it: toolchain/live/scripts/engine-run.sh $$bin $(LIVE_ROOT) docker ps"

live-engine-stop:
	@bash toolchain/live/scripts/engine-stop.sh $(LIVE_ROOT)

live-engine-test: test-venv live-tools
	$(call require_tier,live) $(TEST_VENV)/bin/python -m pytest -m live -rs -v tests/live \
		--ignore=tests/live/test_kind_cluster.py --ignore=tests/live/test_images.py

# The kind node image for Kubernetes v1.35.4, built from source into the live engine with no registry
# (toolchain/live/node-image/build.sh; docs/development/live-node-image.md), cached by its inputs
# outside the clone. KINDNET_SRC=<kindnet checkout> builds the real kindnetd instead of the stand-in.
live-node-image: live-engine
	@bin=$(LIVE_TOOLS); bash toolchain/live/node-image/build.sh "$$bin" $(LIVE_ROOT)

# A kind cluster from that image in a fresh engine: node Ready, system pods Running, nothing pulled,
# a local-path claim bound, deleted without a trace (tests/live/test_kind_cluster.py).
live-cluster-test: test-venv live-tools
	$(call require_tier,live) $(TEST_VENV)/bin/python -m pytest -m live -rs -v tests/live/test_kind_cluster.py

# Every platform image built from source (toolchain/live/images/build.sh; docs/development/
# live-images.md) and pushed into the tier's mirror (localhost:5001 in the engine's namespace), with
# the charts and the node image; cached by their inputs outside the clone. Sources the module proxy
# does not serve come from CERT_MANAGER_SRC, HAMI_SRC, KAMAJI_SRC, APISERVER_NETWORK_PROXY_SRC,
# CERTGEN_SRC and KINDNET_SRC: a family whose variable is unset is named and left out.
live-images: live-engine
	@bin=$(LIVE_TOOLS); bash toolchain/live/images/build.sh "$$bin" $(LIVE_ROOT)

# Those images in a fresh engine: each runs its program from the mirror, a kind node pulls from it,
# and the dev stack on v1.35.4 with images.mirror finds everything there (tests/live/test_images.py).
live-images-test: test-venv live-tools
	$(call require_tier,live) $(TEST_VENV)/bin/python -m pytest -m live -rs -v tests/live/test_images.py tests/live/test_door.py

# The dev stack on the live tier (docs/development/live-stack.md): `make up` as users run it, in the
# engine's namespace, with the real Pulumi engine (toolchain/pulumi/build.sh), the images of
# `make live-images` from the tier's mirror, the node image built here, the Kamaji chart from
# KAMAJI_SRC and KAMAJI_ETCD_SRC (verified by its digests), a home, backend and passphrase of its
# own in LIVE_STACK_ROOT. live-down destroys it (and is what to run after a failed live-up).
LIVE_STACK_ROOT ?= $(dir $(LIVE_ROOT))stack
LIVE_STACK ?= live
LIVE_STACK_ENV = bash toolchain/live/stack/env.sh "$$bin" "$$(bash toolchain/pulumi/build.sh | tail -n 1)" \
	$(LIVE_ROOT) $(LIVE_STACK_ROOT)

live-stack: venv live-engine
	@bin=$(LIVE_TOOLS); node=$$(env -u KINDNET_SRC bash toolchain/live/node-image/build.sh "$$bin" $(LIVE_ROOT) | tail -n 1) && \
	cgroup=$$(bash toolchain/live/scripts/engine-run.sh "$$bin" $(LIVE_ROOT) docker info -f '{{.CgroupVersion}}') && \
	$(VENV)/bin/python toolchain/live/stack/config.py "$$node" "$$cgroup" >/dev/null && \
	bash toolchain/live/stack/kamaji-chart.sh

live-up: live-stack policy/venv/.installed
	@bin=$(LIVE_TOOLS); $(LIVE_STACK_ENV) $(MAKE) --no-print-directory up STACK=live

live-preview: live-stack policy/venv/.installed
	@bin=$(LIVE_TOOLS); $(LIVE_STACK_ENV) $(MAKE) --no-print-directory preview STACK=live

live-e2e: venv live-tools
	@bin=$(LIVE_TOOLS); $(LIVE_STACK_ENV) $(MAKE) --no-print-directory e2e STACK=live

# The whole lifecycle on the live tier, each phase timed (tests/e2e/test_lifecycle.py on a throwaway
# stack made from the live stack's config): up, the acceptance cases, no changes, no drift, drift
# made by hand reported and repaired, day 2 with the other tenants watched, destroy, nothing left.
live: live-images live-stack policy/venv/.installed
	@bin=$(LIVE_TOOLS); $(LIVE_STACK_ENV) env E2E_BASE_STACK=live $(MAKE) --no-print-directory e2e-lifecycle

# Worker hosts over real SSH on the live tier (tests/e2e/test_live_hosts.py; docs/development/
# live-hosts.md): two stacks in mode existing, each on a kind cluster of its own, joining hosts that are
# containers of the host image (toolchain/live/hosts/: the node image with Debian's sshd) with a real
# kubeadm; the cases on one, a host of the other named by mistake, a host removed, both destroyed.
live-hosts: live-images live-stack policy/venv/.installed
	@bin=$(LIVE_TOOLS); node=$$(env -u KINDNET_SRC bash toolchain/live/node-image/build.sh "$$bin" $(LIVE_ROOT) | tail -n 1) && \
	bash toolchain/openssh.sh >/dev/null && \
	host=$$(bash toolchain/live/hosts/host-image.sh "$$bin" $(LIVE_ROOT) "$$node" | tail -n 1) && \
	$(LIVE_STACK_ENV) env E2E_LIVE_HOSTS=1 KHP_LIVE_BIN="$$bin" KHP_LIVE_ENGINE=$(LIVE_ROOT) KHP_LIVE_NODE_IMAGE="$$node" \
		KHP_LIVE_HOST_IMAGE="$$host" \
		$(VENV)/bin/python -m pytest -m e2e -rs -v -s tests/e2e/test_live_hosts.py

# LIVE_STACK=<e2e...>: the lifecycle's stack, when its own destroy failed (the run names it).
live-down: live-tools
	@bin=$(LIVE_TOOLS); $(LIVE_STACK_ENV) $(MAKE) --no-print-directory down STACK=$(LIVE_STACK)

# The test virtualenv is kept while requirements.txt and the Python are the same (a stamp named
# after both), and made afresh from requirements.txt alone when either changes.
TEST_VENV_KEY := $(shell { cat requirements.txt; $(PYTHON) --version; } 2>/dev/null | sha256sum | cut -c1-16)
TEST_VENV_STAMP := $(TEST_VENV)/.installed-$(TEST_VENV_KEY)

$(TEST_VENV_STAMP):
	rm -rf $(TEST_VENV)
	$(PYTHON) -m venv $(TEST_VENV)
	$(TEST_VENV)/bin/pip install --quiet -r requirements.txt
	touch $@

test-venv: $(TEST_VENV_STAMP)

# The live suite skips with its reason when no stack is reachable.
e2e: venv
	E2E_STACK=$(STACK) $(VENV)/bin/python -m pytest -m e2e -rs -v tests/e2e/test_acceptance.py \
		tests/e2e/test_declared_workloads.py tests/e2e/test_isolation.py

e2e-lifecycle: check-tools venv
	E2E_LIFECYCLE=1 $(VENV)/bin/python -m pytest -m e2e -rs -v -s tests/e2e/test_lifecycle.py

lint: venv
	$(VENV)/bin/ruff check .

# Fill a mirror registry with every image and chart the stack pulls (crane and helm from PATH:
# make live-tools builds both): MIRROR defaults to the stack's images.mirror; FROM copies from
# another mirror instead of the upstream registries (docs/operations/air-gapped.md).
mirror: venv
	$(VENV)/bin/python -m kamaji_hami_platform.tools.mirror_copy --stack $(STACK) \
		$(if $(MIRROR),--to $(MIRROR)) $(if $(FROM),--from $(FROM))

# Every pin, then every image the stack pulls (charts' and Kamaji's included): a mirror list.
images: venv kamaji-chart
	@$(VENV)/bin/python -m kamaji_hami_platform.versions
	@echo
	@$(VENV)/bin/python -m kamaji_hami_platform.tools.images $(STACK)
