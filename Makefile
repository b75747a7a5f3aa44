# knit's build. Two commands set up everything on a fresh machine:
#   make demo   installs OpenTofu and its provider into ./.tools, builds knit, runs the example
#   make test   installs the same and what the tests need, and runs every test
SHELL := bash
.SHELLFLAGS := -euo pipefail -c

TOOLS   := $(CURDIR)/.tools
BIN     := $(CURDIR)/bin
export PATH := $(TOOLS)/bin:$(BIN):$(PATH)
# Tests that need a tool fail, rather than skip, when run through make.
export KNIT_REQUIRE_TOOLS := 1

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X knit.dev/knit/internal/cli.version=$(VERSION) -X knit.dev/knit/internal/cli.commit=$(COMMIT)
EXAMPLE := examples/webshop/environment.yaml
FUZZTIME ?= 2m

.PHONY: all tools tools-demo terragrunt build build-knit demo test test-e2e-postgres test-short fuzz bench bench-go bench-web loadtest loadtest-fleet fmt vet clean

all: build

tools: ## install every tool the tests need into ./.tools (OpenTofu, the provider mirror, etcd, kube-apiserver, kubectl, Chromium, PostgreSQL, docker-registry, nginx, haproxy, prometheus, socat)
	@bash scripts/tools.sh

tools-demo: ## install only what the demo runs into ./.tools: OpenTofu, the hashicorp/local provider mirror and the CLI config
	@bash scripts/tools.sh demo

terragrunt: ## build Terragrunt, the peer make bench compares knit with, into ./.tools
	@bash scripts/tools.sh terragrunt

# Static binaries (no cgo): they run on any Linux whatever its libc, and
# start without the dynamic loader.
build: build-knit ## build bin/knit, bin/knit-kube (the runner of helm and manifests components and of knit controller) and bin/knit-terragrunt (knit import terragrunt's reader)
	@# A Go module of its own (tools/knit-terragrunt/go.mod): Terragrunt's parser and its cloud SDKs stay out of knit's.
	@cd tools/knit-terragrunt && CGO_ENABLED=0 go build -trimpath -o $(BIN)/knit-terragrunt .

build-knit: ## build bin/knit and bin/knit-kube only (what the demo runs; Terragrunt's parser takes minutes to build cold)
	@CGO_ENABLED=0 go build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/knit ./cmd/knit
	@CGO_ENABLED=0 go build -trimpath -o $(BIN)/knit-kube ./cmd/knit-kube

demo: tools-demo build-knit ## validate, graph and run the example environment
	@bash scripts/demo.sh $(EXAMPLE)

test: tools ## every test, end-to-end ones included
	go vet ./...
	GOOS=darwin go build ./... && GOOS=darwin go vet ./...   # knit runs on macOS too
	@# -parallel 4: the e2e tests run in parallel (see test/e2e's package doc), mostly waiting on tofu; 4 keeps a 2-core machine busy, not swamped.
	go test -race -count=1 -timeout 45m -parallel 4 ./...   # the e2e package runs past go test's default 10m on a loaded machine; the race detector found real bugs; keep it on
	cd tools/knit-terragrunt && go vet ./... && go test -count=1 ./...   # a module of its own: ./... above does not reach it

test-e2e-postgres: tools ## the end-to-end tests again, each knit on a PostgreSQL store of its own
	KNIT_E2E_STORE=postgres go test -count=1 -timeout 30m -parallel 4 ./test/e2e

test-short: ## unit tests only, no tools needed
	go test -short ./...

fuzz: ## fuzz the environment loader
	go test -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME) ./internal/spec

bench: tools terragrunt build ## measure knit against the least tool work, its bound and Terragrunt; rewrites docs/benchmarks.md
	@go build -trimpath -o $(BIN)/knit-bench ./cmd/knit-bench
	@$(BIN)/knit-bench -knit $(BIN)/knit -tofu $(TOOLS)/bin/tofu -terragrunt $(TOOLS)/bin/terragrunt -out docs/benchmarks.md $(BENCHFLAGS)
	@$(BIN)/knit-bench rollback -knit $(BIN)/knit -tofu $(TOOLS)/bin/tofu -out docs/benchmarks.md
	@$(BIN)/knit-bench canary -knit $(BIN)/knit -tofu $(TOOLS)/bin/tofu -out docs/benchmarks.md

bench-go: ## only the in-process figures of make bench (policy evaluation, environment sets, engine), printed as rows of its table; needs no tools
	@go build -trimpath -o $(BIN)/knit-bench ./cmd/knit-bench
	@$(BIN)/knit-bench gobench

bench-web: ## the dashboard's graph drawing times in Chromium (200 and 1,000 components; figures for docs/benchmarks.md)
	@KNIT_WEB_BENCH=1 go test -count=1 -run TestGraphDrawTime -v ./internal/web

loadtest: build ## knit serve under a bounded loopback load over 10,000 environments; rewrites its section of docs/benchmarks.md
	@go build -trimpath -o $(BIN)/knit-loadtest ./cmd/knit-loadtest
	@$(BIN)/knit-loadtest -knit $(BIN)/knit -out docs/benchmarks.md $(LOADFLAGS)
	@$(BIN)/knit-loadtest fleet -knit $(BIN)/knit -out docs/benchmarks.md $(FLEETFLAGS)

loadtest-fleet: build ## only the GitOps fleet figures of make loadtest (idle polls, one-file commits, 1,000 environments from one commit); rewrites their section of docs/benchmarks.md
	@go build -trimpath -o $(BIN)/knit-loadtest ./cmd/knit-loadtest
	@$(BIN)/knit-loadtest fleet -knit $(BIN)/knit -out docs/benchmarks.md $(FLEETFLAGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	go vet ./...

clean:
	rm -rf $(BIN)
