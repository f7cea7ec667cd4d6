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

.PHONY: tools
tools: $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc $(BIN)/grpcurl ## Install pinned buf, protoc plugins and grpcurl into ./bin.

# --- code generation ---------------------------------------------------------

.PHONY: generate
generate: $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-go-grpc ## Regenerate gen/ from proto/ with buf.
	$(BIN)/buf build
	rm -rf gen
	$(BIN)/buf generate

.PHONY: check-generate
check-generate: generate ## Fail if gen/ differs from what `make generate` produces.
	@git diff --exit-code --stat -- gen || { echo "gen/ is stale: run 'make generate' and commit" >&2; exit 1; }
	@test -z "$$(git status --porcelain -- gen)" || { git status --porcelain -- gen; echo "gen/ has untracked files: run 'make generate' and commit" >&2; exit 1; }

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

.PHONY: lint
lint: fmt-check vet buf-lint ## gofmt check, go vet, buf lint.

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

.PHONY: net-deps
net-deps: ## Install git and curl from Debian when missing (the git, task and egress proxy tests drive them).
	@command -v git >/dev/null && command -v curl >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git curl >/dev/null; }
# PostgreSQL for the memory tests and bench rows: Debian's server binaries
# (pinned to one major version); the tests start their own throwaway server
# with initdb in a temp dir, on a unix socket only (pkg/memory/pgtest).
PG_VERSION := 15

.PHONY: postgres
postgres: ## Install PostgreSQL $(PG_VERSION) from Debian (only when missing) for the memory tests.
	@test -x /usr/lib/postgresql/$(PG_VERSION)/bin/initdb || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-$(PG_VERSION) >/dev/null; }

.PHONY: test-deps
test-deps: $(BIN)/grpcurl mcp-peers net-deps postgres ## Install what the tests drive (grpcurl, the MCP peers, git and curl, PostgreSQL).

.PHONY: test
test: lint check-generate test-deps ## Lint, check gen/ is clean, run every test with -race, and the harness in smoke mode.
	PATH=$(BIN):$$PATH TOOLD_REQUIRE_PEERS=1 $(GO) test -race -count=1 -timeout 20m ./...
	$(MAKE) bench-smoke

.PHONY: bench-deps
bench-deps: postgres ## Install the baselines the harness compares with (ripgrep, fd, grep) from Debian.
	@command -v rg >/dev/null && { command -v fdfind >/dev/null || command -v fd >/dev/null; } || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ripgrep fd-find grep >/dev/null; }

.PHONY: bench
bench: build bench-deps test-deps ## Run the benchmark harness (bench/results.md, bench/results.json) and the Go benchmarks.
	$(GO) build -o $(BIN)/toolbench ./cmd/toolbench
	$(BIN)/toolbench -toold $(BIN)/toold -json bench/results.json -md bench/results.md -profiles bench/profiles
	PATH=$(BIN):$$PATH $(GO) test -run '^$$' -bench . -benchmem -count 1 ./...

.PHONY: bench-smoke
bench-smoke: build bench-deps ## Run the harness briefly (no targets), so it cannot rot.
	$(GO) build -o $(BIN)/toolbench ./cmd/toolbench
	$(BIN)/toolbench -toold $(BIN)/toold -smoke

.PHONY: run
run: ## Start toold on ./toold.sock with the current directory as workspace.
	CGO_ENABLED=0 $(GO) run ./cmd/toold --socket $(SOCKET) --workspace $(WORKSPACE) $(RUN_ARGS)

.PHONY: clean
clean: ## Remove ./bin and ./.tools.
	rm -rf $(BIN) $(TOOLS)
