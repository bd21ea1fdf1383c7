// Deterministic output for every test: no colour, UTC times.
process.env.NO_COLOR = "1"
process.env.TZ = "Etc/UTC"
