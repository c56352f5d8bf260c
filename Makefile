# agentdlq — `make help` lists every target.
SHELL := /bin/bash
GO ?= go
export CDK_DISABLE_CLI_TELEMETRY := true

.DEFAULT_GOAL := help

## help: list every target
.PHONY: help
help:
	@grep -hE '^## ' $(MAKEFILE_LIST) | sed -e 's/^## /  /' | column -t -s ':'

## test: unit, stack and end-to-end tests (starts and stops the local emulators)
.PHONY: test
test:
	$(GO) test ./...

## lint: gofmt and go vet
.PHONY: lint
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
