// The floor of `flow --version` in bench/run.ts: the least a compiled Bun program does to print one line.
// Compiled with the flags of dist/flow (scripts/build.ts), so it pays the same process start-up.
console.log("flow 0.0.0 (commit 000000000000, linux-x64)")
