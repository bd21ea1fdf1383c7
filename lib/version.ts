import pkg from "../package.json" with { type: "json" }

/** flow's version, from package.json at build time. */
export const VERSION: string = pkg.version
