# toold — tool-execution sidecar for LLM agents.
#
# Two commands matter: `make run` and `make test`. Everything else they need
# (buf, protoc plugins, grpcurl) is installed into ./bin at pinned versions.

SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
TOOLS := $(CURDIR)/.tools

# Pinned tool versions.
BUF_VERSION := 1.75.0
PROTOC_GEN_GO_VERSION := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GRPCURL_VERSION := v1.9.3
# The OpenTelemetry Collector builder (ocb); the collector's modules are
# pinned in testdata/otelcol/builder.yaml (the same release).
OCB_VERSION := v0.145.0

# Arguments for `make run`.
SOCKET ?= ./toold.sock
WORKSPACE ?= .
RUN_ARGS ?=

.DEFAULT_GOAL := help

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# --- tools -------------------------------------------------------------------

$(BIN)/buf:
	@mkdir -p $(BIN) $(TOOLS)/buf
	npm install --silent --no-audit --no-fund --prefix $(TOOLS)/buf @bufbuild/buf@$(BUF_VERSION)
	ln -sf $(TOOLS)/buf/node_modules/@bufbuild/buf-linux-x64/bin/buf $@
	@$@ --version

$(BIN)/protoc-gen-go:
	GOBIN=$(BIN) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)

$(BIN)/protoc-gen-go-grpc:
	GOBIN=$(BIN) $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)

$(BIN)/grpcurl:
	GOBIN=$(BIN) $(GO) install github.com/fullstorydev/grpcurl/cmd/grpcurl@$(GRPCURL_VERSION)

# Debian packages for the Python stubs and client (bookworm's versions,
# pinned): protoc and grpc_python_plugin generate clients/python/toold/v1;
# python3-grpcio and python3-protobuf run the client and its tests with
# Debian's /usr/bin/python3 (not a pyenv python3 that may come first on PATH);
# python3-venv and python3-setuptools make the README's install line work
# (a venv with the system's packages; cmd/toolctl's README test runs it).
CLIENT_DEBS := protobuf-compiler=3.21.12-3+deb12u1 protobuf-compiler-grpc=1.51.1-3+b1 \
	python3-grpcio=1.51.1-3+b1 python3-protobuf=3.21.12-3+deb12u1 \
	python3-venv=3.11.2-1+b1 python3-setuptools=66.1.1-1+deb12u2
PYTHON := /usr/bin/python3

.PHONY: client-debs
client-debs: ## Install the pinned Debian packages for the Python stubs and client (only when missing).
	@missing=; for p in $(CLIENT_DEBS); do \
		[ "$$(dpkg-query -W -f='$${Version}' $${p%%=*} 2>/dev/null)" = "$${p#*=}" ] || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "apt-get install$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# The TypeScript client's npm dependencies (protoc-gen-es among them),
# pinned by clients/typescript/package-lock.json; the examples' likewise.
TS_CLIENT_DEPS := clients/typescript/node_modules/.package-lock.json
TS_AGENT_DEPS := examples/typescript-agent/node_modules/.package-lock.json

$(TS_CLIENT_DEPS): clients/typescript/package-lock.json
	cd clients/typescript && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

$(TS_AGENT_DEPS): examples/typescript-agent/package-lock.json $(TS_CLIENT_DEPS)
	cd examples/typescript-agent && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: client-deps
client-deps: client-debs $(TS_CLIENT_DEPS) $(TS_AGENT_DEPS) ## Install what the Python and TypeScript clients and examples need.

.PHONY: tools
tools: $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/grpcurl ## Install pinned buf, protoc plugins and grpcurl into ./bin.

# --- code generation ---------------------------------------------------------

# Everything buf generates: Go, and the Python and TypeScript client stubs.
GEN_DIRS := gen clients/python/toold/v1 clients/typescript/src/gen

.PHONY: generate
generate: $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc client-debs $(TS_CLIENT_DEPS) ## Regenerate gen/ and the client stubs from proto/ with buf.
	$(BIN)/buf build
	rm -rf $(GEN_DIRS)
	$(BIN)/buf generate

.PHONY: check-generate
check-generate: generate ## Fail if gen/ or the client stubs differ from what `make generate` produces.
	@git diff --exit-code --stat -- $(GEN_DIRS) || { echo "generated code is stale: run 'make generate' and commit" >&2; exit 1; }
	@test -z "$$(git status --porcelain -- $(GEN_DIRS))" || { git status --porcelain -- $(GEN_DIRS); echo "generated code has untracked files: run 'make generate' and commit" >&2; exit 1; }

# --- checks --------------------------------------------------------------------

.PHONY: fmt-check
fmt-check: ## Fail if gofmt would change a file.
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '^gen/') 2>&1); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

.PHONY: vet
vet: ## go vet ./...
	$(GO) vet ./...

.PHONY: buf-lint
buf-lint: $(BIN)/buf ## buf lint the proto files.
	$(BIN)/buf lint

# The previous commit of the branch is the baseline: a change that breaks
# the wire or generated-code compatibility of proto/ fails (FILE rules).
BREAKING_AGAINST ?= HEAD~1
.PHONY: buf-breaking
buf-breaking: $(BIN)/buf ## buf breaking: proto/ against the previous commit (BREAKING_AGAINST).
	@if ! git rev-parse -q --verify '$(BREAKING_AGAINST)^{commit}' >/dev/null; then \
		echo "buf breaking: $(BREAKING_AGAINST) is not in this clone (a shallow clone?); fetch more history"; exit 1; fi
	$(BIN)/buf breaking --against '.git#ref=$(BREAKING_AGAINST)'

.PHONY: tidy-check
tidy-check: ## Fail if go.mod/go.sum of toold or of deploy/kubernetes (which requires toold) are not tidy.
	$(GO) mod tidy -diff
	cd deploy/kubernetes && $(GO) mod tidy -diff

.PHONY: lint
lint: fmt-check vet buf-lint buf-breaking tidy-check ## gofmt check, go vet, buf lint, buf breaking, go mod tidy.

# --- build, test, run --------------------------------------------------------

.PHONY: build
build: ## Build toold, toold-helper and toolctl (static, no cgo) into ./bin.
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ ./cmd/toold ./cmd/toold-helper ./cmd/toolctl

# The MCP peers the tests drive (server-everything, server-filesystem, the
# Inspector CLI), pinned by testdata/mcp/package-lock.json. The stamp makes
# the install run again only when the lock file changes.
MCP_PEERS := testdata/mcp/node_modules/.package-lock.json

$(MCP_PEERS): testdata/mcp/package-lock.json
	cd testdata/mcp && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: mcp-peers
mcp-peers: $(MCP_PEERS) ## Install the MCP peers the tests drive (npm ci in testdata/mcp).

# The official MCP conformance suite and the Node.js (>= 22; Debian's is
# older) it runs on, both from npm, pinned by
# testdata/conformance/package-lock.json and installed into
# .tools/conformance (pkg/mcpserver/mcpconformance runs it).
MCP_CONFORMANCE := $(TOOLS)/conformance/node_modules/.package-lock.json

$(MCP_CONFORMANCE): testdata/conformance/package-lock.json
	@mkdir -p $(TOOLS)/conformance
	cp testdata/conformance/package.json testdata/conformance/package-lock.json $(TOOLS)/conformance/
	cd $(TOOLS)/conformance && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: mcp-conformance-deps
mcp-conformance-deps: $(MCP_CONFORMANCE) ## Install the MCP conformance suite and its Node.js (npm ci into .tools/conformance).

# Real MCP hosts the tests drive unmodified (codex, Claude Code, gemini-cli), pinned by
# testdata/hosts/package-lock.json and installed into .tools/hosts; they run
# on the conformance suite's Node.js (gemini-cli; codex and Claude Code are
# native binaries from their platform packages, which npm ci installs as
# optional dependencies; --ignore-scripts only skips their link step).
MCP_HOSTS := $(TOOLS)/hosts/node_modules/.package-lock.json

$(MCP_HOSTS): testdata/hosts/package-lock.json
	@mkdir -p $(TOOLS)/hosts
	cp testdata/hosts/package.json testdata/hosts/package-lock.json $(TOOLS)/hosts/
	cd $(TOOLS)/hosts && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

.PHONY: mcp-hosts
mcp-hosts: $(MCP_HOSTS) mcp-conformance-deps ## Install the MCP hosts the tests drive (npm ci into .tools/hosts).

.PHONY: net-deps
net-deps: ## Install git and curl from Debian when missing (the git, task and egress proxy tests drive them).
	@command -v git >/dev/null && command -v curl >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git curl >/dev/null; }
# The programs the battery by effect drives as a hostile model would
# (pkg/daemon/battery_*_test.go: ed, ex/vim, less, gcc, sqlite3, make, rg,
# pytest, nc, dig, socat, ssh...), as PROGRAM:DEBIAN_PACKAGE; only the
# packages of missing programs are installed (a node from elsewhere stays).
BATTERY_PROGS := ed:ed vim:vim less:less gcc:build-essential sqlite3:sqlite3 make:make rg:ripgrep nc:netcat-openbsd \
	dig:dnsutils socat:socat ssh:openssh-client xxd:xxd perl:perl curl:curl git:git python3:python3 \
	busybox:busybox-static node:nodejs npm:npm script:bsdutils

.PHONY: battery-deps
battery-deps: ## Install what the battery by effect and the development test drive (Debian packages, only when missing).
	@missing=; for pp in $(BATTERY_PROGS); do command -v $${pp%%:*} >/dev/null || missing="$$missing $${pp#*:}"; done; \
	/usr/bin/python3 -c 'import pytest' 2>/dev/null || missing="$$missing python3-pytest"; \
	if [ -n "$$missing" ]; then \
		echo "apt-get install$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

# PostgreSQL for the memory tests and bench rows: Debian's server binaries
# (pinned to one major version); the tests start their own throwaway server
# with initdb in a temp dir, on a unix socket only (pkg/memory/pgtest).
PG_VERSION := 15

.PHONY: postgres
postgres: ## Install PostgreSQL $(PG_VERSION) from Debian (only when missing) for the memory tests.
	@test -x /usr/lib/postgresql/$(PG_VERSION)/bin/initdb || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-$(PG_VERSION) >/dev/null; }

# The OpenTelemetry Collector the telemetry end-to-end test sends traces
# and metrics to (pkg/daemon/otel_e2e_test.go): built once by the pinned
# collector builder from testdata/otelcol/builder.yaml (OTLP receiver, file
# and debug exporters) into .tools/otelcol, linked as bin/otelcol-toold, and
# rebuilt only when builder.yaml changes.
OTELCOL := $(TOOLS)/otelcol/build/otelcol-toold

$(BIN)/builder-$(OCB_VERSION):
	@mkdir -p $(BIN)
	GOBIN=$(TOOLS)/ocb-$(OCB_VERSION) $(GO) install go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION)
	ln -sf $(TOOLS)/ocb-$(OCB_VERSION)/builder $@

$(OTELCOL): testdata/otelcol/builder.yaml $(BIN)/builder-$(OCB_VERSION)
	@mkdir -p $(TOOLS)/otelcol
	cp testdata/otelcol/builder.yaml $(TOOLS)/otelcol/builder.yaml
	cd $(TOOLS)/otelcol && $(BIN)/builder-$(OCB_VERSION) --config builder.yaml
	@touch $@

$(BIN)/otelcol-toold: $(OTELCOL)
	ln -sf $(OTELCOL) $@

.PHONY: otelcol
otelcol: $(BIN)/otelcol-toold ## Build the OpenTelemetry Collector the telemetry test uses (cached in .tools/otelcol).

.PHONY: test-deps
test-deps: $(BIN)/grpcurl mcp-peers mcp-conformance-deps mcp-hosts net-deps postgres otelcol battery-deps ## Install what the tests drive (grpcurl, the MCP peers, conformance suite and hosts, git and curl, PostgreSQL, the OpenTelemetry Collector, the battery's programs).

# Fuzz targets, PACKAGE:FUNCTION. Their seed corpora (and every crasher
# found, committed with its fix) are in the package's testdata/fuzz/FUNCTION
# and run by every `go test` as regression cases: that is all `make test`
# runs of them, so it is deterministic. The search for new inputs is `make
# fuzz`: it runs in a throwaway copy of the tree (scripts/fuzz.sh), never
# writes into the checkout, and prints a crasher's path outside the tree
# with the commands that reproduce it here.
FUZZ_TARGETS := ./pkg/tools:FuzzResolvePrepare ./pkg/workspace:FuzzResolve ./pkg/authz:FuzzRules \
	./pkg/authz/internal/shellread:FuzzParseCommandLine ./pkg/service:FuzzDecodeClientMessage ./pkg/mcp:FuzzResult ./pkg/tools:FuzzDecodeFlat ./pkg/tools:FuzzFlatSchema \
	./pkg/audit:FuzzResultDigest
FUZZTIME ?= 2m

.PHONY: fuzz
fuzz: ## Search for new fuzz inputs, each target for FUZZTIME (default 2m), in a copy of the tree; a crasher is printed with how to reproduce it.
	scripts/fuzz.sh $(FUZZTIME) $(FUZZ_TARGETS)

.PHONY: test
test: lint check-generate test-deps container-deps ## Lint, check gen/ is clean, run every test with -race (the container test and the Kubernetes manifests' module too), check the image is reproducible, the harness in smoke mode, and the clients.
	PATH=$(BIN):$$PATH TOOLD_REQUIRE_PEERS=1 $(GO) test -race -count=1 -timeout 20m ./...
	$(MAKE) test-deploy image-check
	$(MAKE) bench-smoke
	$(MAKE) test-clients

.PHONY: test-python
test-python: build client-debs ## Python client and example agent: unittest against a real toold (Debian's python3).
	cd clients/python && TOOLD_BIN=$(BIN)/toold timeout 600 $(PYTHON) -m unittest discover -s tests -v
	cd examples/python-agent && TOOLD_BIN=$(BIN)/toold timeout 600 $(PYTHON) -m unittest discover -s . -p 'test_*.py' -v

.PHONY: test-typescript
test-typescript: build mcp-peers $(TS_CLIENT_DEPS) $(TS_AGENT_DEPS) ## TypeScript client, provider checks and example agent: node --test against a real toold.
	cd clients/typescript && npm run --silent build && TOOLD_BIN=$(BIN)/toold timeout 600 npm test --silent
	cd examples/typescript-agent && TOOLD_BIN=$(BIN)/toold timeout 600 npm test --silent

.PHONY: test-clients
test-clients: test-python test-typescript ## Python and TypeScript clients, examples and README snippets against a real toold.

.PHONY: bench-clients
bench-clients: build client-debs $(TS_CLIENT_DEPS) ## Round trip of a no-op call from the Go, Python and TypeScript clients against one toold.
	cd clients/typescript && npm run --silent build
	$(PYTHON) clients/bench/run.py

# --- container image -------------------------------------------------------
#
# `make image` builds dist/image.tar, an OCI archive (`podman load -i
# dist/image.tar`) of toold:$(VERSION) with no daemon and no registry
# (cmd/imagebuild, go-containerregistry): static binaries on an empty base,
# or on your own image with BASE=ARCHIVE_OR_LAYOUT. Every timestamp is
# SOURCE_DATE_EPOCH (default: the commit's time), so two builds of a commit
# are byte-identical. See docs/deploy.md.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE ?= dist/image.tar
IMAGE_NAME ?= toold:$(VERSION)
BASE ?=
IMAGE_BIN = $(basename $(IMAGE))-bin
IMAGE_LDFLAGS = -s -w -X github.com/toold/toold/pkg/daemon.Version=$(VERSION)

.PHONY: image
image: ## Build the container image dist/image.tar (OCI archive, toold:VERSION); BASE=ARCHIVE_OR_LAYOUT puts toold on your image.
	rm -rf $(IMAGE_BIN) && mkdir -p $(IMAGE_BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags '$(IMAGE_LDFLAGS)' -o $(IMAGE_BIN)/ ./cmd/toold ./cmd/toolctl ./cmd/toold-helper
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./cmd/imagebuild -bin $(IMAGE_BIN) -name $(IMAGE_NAME) -version $(VERSION) -o $(IMAGE) $(if $(BASE),-base $(BASE))

.PHONY: image-busybox
image-busybox: container-deps ## Build dist/image-busybox.tar: toold on a busybox base made from Debian's busybox-static, so commands work.
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) $(GO) run ./cmd/imagebuild -busybox /bin/busybox -name toold-base:busybox -o dist/base-busybox.tar
	$(MAKE) image BASE=dist/base-busybox.tar IMAGE=dist/image-busybox.tar IMAGE_NAME=toold-busybox:$(VERSION)

.PHONY: image-check
image-check: ## Build the image twice and fail unless the two archives are byte-identical.
	$(MAKE) image IMAGE=dist/check-1.tar
	$(MAKE) image IMAGE=dist/check-2.tar
	cmp dist/check-1.tar dist/check-2.tar
	rm -rf dist/check-1.tar dist/check-2.tar dist/check-1-bin dist/check-2-bin

# The container test (cmd/imagebuild/container_test.go) runs the image
# under podman with runc, on a private store; busybox-static makes the base
# that has a shell. From Debian's stable release.
.PHONY: container-deps
container-deps: ## Install podman, runc and busybox-static from Debian (the container test drives them).
	@command -v podman >/dev/null && command -v runc >/dev/null && dpkg -s busybox-static >/dev/null 2>&1 || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman runc busybox-static >/dev/null; }

.PHONY: test-deploy
test-deploy: ## Decode the Kubernetes manifests strictly and check them against toold (own Go module in deploy/kubernetes).
	cd deploy/kubernetes && $(GO) test -race -count=1 ./...

.PHONY: bench-deps
bench-deps: postgres ## Install the baselines the harness compares with (ripgrep, fd, grep) from Debian.
	@command -v rg >/dev/null && { command -v fdfind >/dev/null || command -v fd >/dev/null; } || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ripgrep fd-find grep >/dev/null; }

.PHONY: bench
bench: build bench-deps test-deps ## Run the benchmark harness (bench/results.md, bench/results.json) and the Go benchmarks.
	$(GO) build -o $(BIN)/ ./cmd/toolbench ./cmd/toolbench/ladderd
	$(BIN)/toolbench -toold $(BIN)/toold -json bench/results.json -md bench/results.md -profiles bench/profiles
	PATH=$(BIN):$$PATH $(GO) test -run '^$$' -bench . -benchmem -count 1 ./...

.PHONY: bench-smoke
bench-smoke: build bench-deps ## Run the harness briefly (no targets), so it cannot rot.
	$(GO) build -o $(BIN)/ ./cmd/toolbench ./cmd/toolbench/ladderd
	$(BIN)/toolbench -toold $(BIN)/toold -smoke

# `make run` builds bin/toold (saying so: the first build downloads the
# modules and compiles for minutes) and runs it in the foreground. Ctrl-C
# stops toold gracefully and it exits 0 (`go run` exited 1 on an interrupt:
# "make: *** Error 1"); make itself still notes the interrupt.
.PHONY: run
run: ## Build bin/toold and start it on ./toold.sock with the current directory as workspace (Ctrl-C stops it).
	@echo "building bin/toold (the first build downloads modules and compiles: a few minutes)..."
	@CGO_ENABLED=0 $(GO) build -o $(BIN)/toold ./cmd/toold
	@# toold runs in a process group of its own that holds the terminal
	@# (bash's job control), so Ctrl-C reaches toold alone: it shuts down
	@# cleanly and make ends without "Interrupt" or an error.
	@bash -c 'set -m; "$$0" "$$@" & fg %1 >/dev/null' $(BIN)/toold --socket $(SOCKET) --workspace $(WORKSPACE) $(RUN_ARGS)

# `make install` puts the three binaries in $(PREFIX)/bin (default
# /usr/local/bin; DESTDIR stages a package). toold re-executes itself (or
# toold-helper beside it) to supervise commands, so they stay together.
PREFIX ?= /usr/local
.PHONY: install
install: build ## Install toold, toolctl and toold-helper into $(PREFIX)/bin (PREFIX=/usr/local; DESTDIR=... stages).
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN)/toold $(BIN)/toolctl $(BIN)/toold-helper $(DESTDIR)$(PREFIX)/bin/

.PHONY: clean
clean: ## Remove ./bin and ./.tools.
	rm -rf $(BIN) $(TOOLS)
