#!/usr/bin/env bash
# Installs and starts what the tests and the benchmark grader need on a Debian 12 machine with Go and Node:
# the Docker engine with locally built base images and Docker Compose (setup-docker.sh), and the language
# toolchains the Polyglot exercises are graded with (setup-toolchains.sh), and the MCP client libraries of the client
# matrix with the MCP registry's schema (setup-clients.sh). Idempotent: seconds when done already.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ "$(id -u)" != 0 ]; then
  echo "setup: not root, installing nothing. Tests that need Docker or a missing toolchain will skip and say so;"
  echo "setup: run 'sudo scripts/setup.sh' once to install them (Debian 12)."
  exit 0
fi
t0=$(date +%s)
"$here/setup-docker.sh"
"$here/setup-toolchains.sh"
"$here/setup-clients.sh"
"$here/setup-agents.sh"
echo "setup: done in $(( $(date +%s) - t0 ))s"
