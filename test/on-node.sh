#!/bin/sh
# `npm run test:node -- <line> [vitest arguments]`: the suite on another Node line (22, 24, 26),
# everything in it included: vitest, the services and CLIs it starts, and the npm scripts they run.
# Without vitest arguments it runs the files whose behaviour depends on the Node line
# (NODE_LINE_FILES in test/tiers.ts); with them, what they select (`--all` for every file). That line's Node comes from the npm registry's `node` package, installed once into a cache
# folder. npm puts node_modules/.bin (the pinned Node) first on every script's PATH, so npm is told
# to run its scripts through this file, which puts the chosen Node first again.
set -eu
if [ "${1:-}" = "-c" ]; then
  # Here as npm's script shell: the command follows.
  PATH="$ON_NODE_BIN:$PATH"
  exec sh "$@"
fi
line=${1:?usage: npm run test:node -- <Node line, such as 22> [vitest arguments]}
shift
prefix="${XDG_CACHE_HOME:-$HOME/.cache}/webhook-inbox/node-$line"
if [ ! -x "$prefix/node_modules/.bin/node" ]; then
  npm install --prefix "$prefix" --no-save --no-audit --no-fund --loglevel=error "node@$line" >&2
fi
ON_NODE_BIN="$prefix/node_modules/.bin"
EXPECTED_NODE_LINE="$line"
npm_config_script_shell="$(cd "$(dirname "$0")" && pwd)/on-node.sh"
export ON_NODE_BIN EXPECTED_NODE_LINE npm_config_script_shell
if [ $# -eq 0 ]; then
  TEST_NODE_LINE_ONLY=1
  export TEST_NODE_LINE_ONLY
elif [ "$1" = "--all" ]; then
  shift
fi
echo "on Node $("$ON_NODE_BIN/node" --version)${TEST_NODE_LINE_ONLY:+, the files that depend on the line}" >&2
PATH="$ON_NODE_BIN:$PATH" exec npm test -- "$@"
