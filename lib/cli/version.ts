import pkg from "../../package.json" with { type: "json" }

/** flow's version, from package.json at build time. */
export const VERSION: string = pkg.version

// Set by scripts/build.ts with `bun build --define` (a compiled binary); absent when flow runs from source.
declare const FLOW_BUILD_COMMIT: string
declare const FLOW_BUILD_TARGET: string

/** The git commit the binary was built from ("source" when run from the source tree). */
export const BUILD_COMMIT: string = typeof FLOW_BUILD_COMMIT === "string" ? FLOW_BUILD_COMMIT : "source"

/** The platform the binary was built for, as release files name it (linux-x64, darwin-arm64, ...). */
export const BUILD_TARGET: string = typeof FLOW_BUILD_TARGET === "string" ? FLOW_BUILD_TARGET : hostTarget()

export function hostTarget(): string {
  return `${process.platform === "win32" ? "windows" : process.platform}-${process.arch}`
}

/** What `flow --version` prints. */
export function versionLine(): string {
  return `flow ${VERSION} (commit ${BUILD_COMMIT}, ${BUILD_TARGET})`
}
