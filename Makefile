# Atelier — see README.md. `make demo` and `make test` are the two commands.
SHELL := /bin/bash
GO ?= go
GO_VERSION := $(shell sed -n 's/^go //p' go.mod)
BIN := bin/atelier
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/atelier-dev/atelier/internal/cli.version=$(VERSION)

.PHONY: all build test demo vet fuzz check-go clean screenshots

all: build

check-go:
	@GO="$(GO)" scripts/check-go.sh "$(GO_VERSION)"

build: check-go
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/atelier

vet: check-go
	$(GO) vet ./...

# The whole suite: vet, unit, conformance (SQLite and PostgreSQL), e2e.
test: check-go
	GO="$(GO)" scripts/test.sh

# Builds, starts an embedded server on a temporary data dir, runs the flow.
demo: build
	scripts/demo.sh

# Runs the console's browser tests and keeps their screenshots for docs/console.md.
screenshots: check-go
	ATELIER_SCREENSHOTS="$(CURDIR)/docs/console" $(GO) test -count=1 -run '^TestConsole' ./test/e2e

# Runs every fuzz target for FUZZTIME each (default 30s).
fuzz: check-go
	GO="$(GO)" FUZZTIME="$(or $(FUZZTIME),30s)" scripts/fuzz.sh

clean:
	rm -rf bin
