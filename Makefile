# qms: the two commands a newcomer needs are `make run` and `make test`.
GO ?= go
STATICCHECK_VERSION ?= v0.8.2
# Postgres for the integration tests: QMS_TEST_DATABASE_URL when set, else the
# local server on 127.0.0.1:5432 when one answers, else a dockertest container.
# A plain `go test ./...` finds it the same way (test/pgtest), and fails when
# the database tests could not run (-short or QMS_TEST_DATABASE_URL=none skip
# them on purpose).
QMS_TEST_DATABASE_URL ?= $(shell pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null && echo 'postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable')
export QMS_TEST_DATABASE_URL
# What `qms version` tells: stamped into bin/qms and the container image.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
DATE ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

.PHONY: run build image test test-domain test-integration lint openapi-check bench load load-screens load-webhooks fuzz history clean

## run: start qms on its embedded in-memory storage (prints a key and a curl line)
run:
	$(GO) run ./cmd/qms serve

## build: build bin/qms, stamped with version, commit and build date
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/qms ./cmd/qms

## image: build the container image qms:$(VERSION) (and qms:latest) FROM scratch, with podman (CONTAINER=docker works too)
CONTAINER ?= podman
# podman writes OCI images by default, which drop HEALTHCHECK.
IMAGE_FLAGS ?= $(if $(filter podman,$(notdir $(CONTAINER))),--format docker)
image:
	mkdir -p bin/image
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o bin/image/qms ./cmd/qms
	$(CONTAINER) build $(IMAGE_FLAGS) -f Containerfile --build-arg VERSION=$(VERSION) -t qms:$(VERSION) -t qms:latest bin/image

## test: the whole suite: domain, contract (memory and Postgres), HTTP end to end, then the failover test alone
# The failover test (test/failover) holds a pg_auto_failover formation's
# outages to seconds and its monitor to its health checks' timing: it runs
# after the other packages, not beside them, so their load is not what it
# measures. The end-to-end package took 983 s of its 25 min on a machine
# half as fast as the usual (docs/scaling.md, seventh session): 40 min keeps
# the timeout a guard against a hang, not a race with a slow machine.
FAILOVER_PKG := ./test/failover
test:
	$(GO) test -count=1 -timeout 40m $$($(GO) list ./... | grep -v '/test/failover$$')
	$(GO) test -count=1 -timeout 10m $(FAILOVER_PKG)

## test-domain: the fast domain tests of the cores (no I/O)
test-domain:
	$(GO) test -count=1 ./core/...

## fuzz: explore the text fuzz tests past their seed corpus (which every `make test` runs)
# Budgets are execution counts, not durations: with a duration, Go 1.26's
# fuzz coordinator can report a spurious "context deadline exceeded" when a
# loaded machine's worker is mid-execution at the deadline (go.dev/issue/75804,
# fixed in Go 1.27). FUZZTIME=30s (or 100000x) overrides all three.
FUZZ_TEXT ?= 50000x
FUZZ_DECODE ?= 40000x
FUZZ_POSTGRES ?= 400x
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzCheckText$$' -fuzztime $(or $(FUZZTIME),$(FUZZ_TEXT)) ./adapters/http/httpx
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(or $(FUZZTIME),$(FUZZ_DECODE)) ./adapters/http/httpx
	$(GO) test -run '^$$' -fuzz '^FuzzTextThroughPostgres$$' -fuzztime $(or $(FUZZTIME),$(FUZZ_POSTGRES)) ./test/textfuzz

## lint: gofmt, go vet, staticcheck
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

## openapi-check: Redocly CLI lints the served OpenAPI document; oapi-codegen's code from it builds
openapi-check:
	$(GO) test -count=1 -run 'TestRedoclyLintsTheServedDocument|TestOapiCodegenGeneratesCompilingCode' -v ./test/e2e

## bench: the Go benchmarks (Postgres ones use QMS_TEST_DATABASE_URL)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=5 -timeout 30m ./...

## load: qms side by side with its ceilings (P1-P3 of issue 16: fiber hello-world, pgbench), with latency percentiles
load:
	test/load/ratios.sh . $(or $(LOAD_MODES),all)

## load-screens: N live ticket pages and a board per queue on one process, 20 calls/s, then a reconnect storm (issue 32); prints the docs/scaling.md table (SCREENS_MODES, SCREENS_SIZES)
load-screens:
	test/load/screens/table.sh . "$(or $(SCREENS_MODES),memory postgres)" "$(or $(SCREENS_SIZES),1000 5000 10000)"

## load-webhooks: webhooks at a paced load (10 endpoints, 100 events/s = 1,000 deliveries/s, 30 s per step), stepping up to the highest rate sustained with p99 under 100 ms (issue 30; QMS_WEBHOOK_P99, QMS_WEBHOOK_RATE)
load-webhooks:
	QMS_WEBHOOK_STEPS=1 $(GO) test -count=1 -run '^$$' -bench '^BenchmarkWebhookRate$$' -benchtime 1x -timeout 60m -v ./test/e2e

## history: the mixed-workload history checker, long run (HISTORY_DURATION per backend)
HISTORY_DURATION ?= 5m
history:
	$(GO) test -count=1 -timeout 60m -v -run TestHistory ./test/history -history.duration=$(HISTORY_DURATION)

clean:
	rm -rf bin
