# The two commands the README promises, and a few helpers.

.PHONY: run test build bench-json fuzz clean

# sluice's main job: the server on :3100 with the data directory DATA.
DATA ?= sluice-data
LISTEN ?= :3100
run:
	go run ./cmd/sluice serve --data $(DATA) --listen $(LISTEN)

# The whole test suite: gofmt, vet, build, tests with -race and fuzz seeds.
test:
	./scripts/test.sh

build:
	go build -buildvcs=$(if $(wildcard .git),true,false) -o bin/sluice ./cmd/sluice

# JSON parser against simdjson on the canonical corpus (see bench/README.md).
bench-json:
	bench/json-vs-simdjson.sh

# Longer fuzzing of every parser: FUZZTIME per target (default 1m).
FUZZTIME ?= 1m
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

clean:
	rm -rf bin
