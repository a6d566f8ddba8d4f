# kgen developer and CI commands. Tests run on kfake (in-process) unless the
# target says otherwise; the real broker comes from scripts/kafka.sh.

KAFKA_PORT ?= 9092
export KAFKA_PORT

GO ?= go

.PHONY: test test-kafka test-race vet fmt-check generate-check oracle faults faults-ci bench bench-full bench-micro \
	kafka-fetch kafka-start kafka-stop kafka-status

## test: all tests on the in-process kfake cluster
# Four packages at a time on two cores: most of the slow packages' time is
# waiting on the in-process broker, not computing (222 s with the default of
# one package per core, 161 s with four, on the 2-core CI machine).
test:
	$(GO) test -count=1 -p 4 ./...

## test-kafka: all tests on a real Apache Kafka broker (started if not running)
test-kafka: kafka-start
	KGEN_TEST_BROKERS=127.0.0.1:$(KAFKA_PORT) $(GO) test -count=1 -p 1 ./...

## test-race: the runtime's tests with the race detector (skipped while runtime has none)
test-race:
	@pkgs=$$($(GO) list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./runtime/... 2>/dev/null); \
	if [ -z "$$pkgs" ]; then \
		echo "test-race: no test files under ./runtime yet; nothing to run"; \
	else \
		echo $(GO) test -race -count=1 ./runtime/...; \
		$(GO) test -race -count=1 ./runtime/...; \
	fi

## generate-check: regenerate the examples, the oracle's generated topologies and the golden cases; fail if anything committed was stale
generate-check:
	$(GO) generate ./examples/... ./oracle/...
	$(GO) test -count=1 -run 'TestGolden$$' ./gen/
	@git diff --exit-code --stat -- examples oracle testdata/golden || { echo "generated files are stale: run go generate ./examples/... ./oracle/... and commit"; exit 1; }

## oracle: Kafka Streams' TopologyTestDriver reruns every oracle case (oracle/cases) and must give the committed
## oracle/expected; then kgen's operators must give the same records (oracle/README.md)
oracle:
	bash oracle/check.sh
	$(GO) test -count=1 ./oracle

## vet: go vet on every package
vet:
	$(GO) vet ./...

## fmt-check: fail if gofmt would change a Go file (testdata and .cache aside), listing them
fmt-check:
	@files=$$(find . \( -name .git -o -name .cache -o -name testdata \) -prune -o -name '*.go' -type f -exec gofmt -l {} +); \
	if [ -n "$$files" ]; then \
		echo "gofmt would change these files (run gofmt -w):"; echo "$$files"; exit 1; \
	fi

## bench: benchmark suite, quick mode (1,000,000 records, 3 runs, at-least-once): kgen against a raw
## franz-go loop and Kafka Streams 4.4.0 on the real broker (started if needed); BENCH_RECORDS=n sets the size
bench:
	bench/run.sh quick

## bench-full: the long benchmark (10,000,000 records of 1 KiB, at-least-once then exactly-once)
bench-full:
	bench/run.sh full

## bench-micro: the runtime's Go benchmarks on the in-process broker (raw loop vs kgen, count, restore)
bench-micro:
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 3 ./runtime/stream

## kafka-fetch / kafka-start / kafka-stop / kafka-status: see scripts/kafka.sh
kafka-fetch:
	scripts/kafka.sh fetch

kafka-start:
	scripts/kafka.sh start

kafka-stop:
	scripts/kafka.sh stop

kafka-status:
	scripts/kafka.sh status

FAULTS_FLAGS ?=

## faults: the fault-injection suite in both guarantees (200,000 records, 10 SIGKILLs, a 10-20 s broker
## outage), then the reset sequence in both (two instances count 10,000 records, one resets the app, both
## count again: exact counts), on a private broker (port 19092, .cache/faults) that the driver starts and stops;
## FAULTS_FLAGS goes to the kill runs only
faults:
	$(GO) build -o bin/faults ./faults/cmd/faults
	$(GO) build -o bin/faultapp ./faults/cmd/faultapp
	bin/faults -own-broker -outage -app bin/faultapp -guarantee at-least-once $(FAULTS_FLAGS); alos=$$?; \
	bin/faults -own-broker -outage -app bin/faultapp -guarantee exactly-once $(FAULTS_FLAGS); eos=$$?; \
	bin/faults -own-broker -scenario reset -app bin/faultapp -guarantee at-least-once; ralos=$$?; \
	bin/faults -own-broker -scenario reset -app bin/faultapp -guarantee exactly-once; reos=$$?; \
	test $$alos -eq 0 && test $$eos -eq 0 && test $$ralos -eq 0 && test $$reos -eq 0

## faults-ci: the CI-sized form (20,000 records, 3 kills per guarantee) on the shared broker
faults-ci: kafka-start
	KGEN_TEST_BROKERS=127.0.0.1:$(KAFKA_PORT) $(GO) test -count=1 -v -run TestFaultsShort ./faults/
