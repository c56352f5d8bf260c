# agentdlq — `make help` lists every target.
SHELL := /bin/bash
GO ?= go
export CDK_DISABLE_CLI_TELEMETRY := true

.DEFAULT_GOAL := help

## help: list every target
.PHONY: help
help:
	@grep -hE '^## ' $(MAKEFILE_LIST) | sed -e 's/^## /  /' | column -t -s ':'

## test: unit, stack and end-to-end tests (starts private emulators on free ports, always stops them)
.PHONY: test
test:
	@scripts/test.sh

## local-up: start the local emulators on 127.0.0.1 and create the topology of pipelines.json
.PHONY: local-up
local-up:
	@scripts/local.sh up
	@eval "$$(scripts/local.sh env)" && $(GO) run ./cmd/agentdlq local init

## local-env: print the export lines for the running emulators (eval "$(make -s local-env)")
.PHONY: local-env
local-env:
	@scripts/local.sh env

## local-down: stop the local emulators
.PHONY: local-down
local-down:
	@scripts/local.sh down

## demo: the whole lifecycle on private local emulators (send, drain, triage, eval export, redrive plan, accounting)
.PHONY: demo
demo:
	@mkdir -p .local/bin
	@$(GO) build -o .local/bin/agentdlq ./cmd/agentdlq
	@.local/bin/agentdlq demo

## lint: gofmt and go vet
.PHONY: lint
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
