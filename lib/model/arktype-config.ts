// Must be imported before arktype. arktype JIT-compiles every built-in keyword when it loads, which is
// most of its ~0.25 s import; `jitless` skips that, and lib/model/schema.ts turns JIT back on for our own scope,
// the only types flow checks data with. Measured on 10,000 tasks: import 105-180 ms instead of 200-290 ms,
// with the check itself as fast as before (about 30 ms).
import { configure } from "arktype/config"

configure({ jitless: true })
