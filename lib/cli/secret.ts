// A value that must never be printed or logged (a database password, a URL holding one): whatever turns it
// into text (a template string, JSON.stringify, console.log, Bun.inspect) gets `[redacted]`; only `reveal()`
// gives the value, at the one place that hands it to a client library.
const SHOWN = "[redacted]"

export class Secret {
  readonly #value: string

  constructor(value: string) {
    this.#value = value
  }

  /** The value itself, for the library call that needs it; never for a message. */
  reveal(): string {
    return this.#value
  }

  toString(): string {
    return SHOWN
  }

  toJSON(): string {
    return SHOWN
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return SHOWN
  }
}
