#!/usr/bin/env node
// The `flow` command of the npm package: runs the flow executable of this platform, which npm installed as
// one of the package's optional dependencies (the one whose os, cpu and libc match). No download, no
// postinstall: `npm install -g` and `npx` work offline from a registry mirror. See docs/INSTALL.md.
"use strict"
const { spawn } = require("node:child_process")
const { name } = require("../package.json")

const os = process.platform === "win32" ? "windows" : process.platform
const musl = os === "linux" && !safeReport()?.header?.glibcVersionRuntime
const target = `${os}-${process.arch}${musl ? "-musl" : ""}`
const platformPackage = `${name}-${target}`

let bin
try {
  bin = require.resolve(`${platformPackage}/bin/flow${os === "windows" ? ".exe" : ""}`)
} catch {
  process.stderr.write(`error: ${name} has no flow executable for ${target}: the package ${platformPackage} is not installed\n`
    + "hint: reinstall without --omit=optional (or --no-optional), or use install.sh or a release download (docs/INSTALL.md)\n")
  process.exit(1)
}

const child = spawn(bin, process.argv.slice(2), { stdio: "inherit" })
// Ctrl-C reaches flow itself through the terminal; a second one from here would mean "quit at once" to flow run.
process.on("SIGINT", () => {})
for (const signal of ["SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal))
child.on("error", (e) => {
  process.stderr.write(`error: cannot start ${bin}: ${e.message}\n`)
  process.exit(1)
})
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal)
    process.kill(process.pid, signal)
  }
  process.exit(code ?? 1)
})

function safeReport() {
  try {
    return process.report.getReport()
  } catch {
    return undefined
  }
}
