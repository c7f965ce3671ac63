#!/usr/bin/env node
/**
 * The `aios-device` bin as shipped (the bundle's main.js, scripts/build-agent-bundle.mjs): the resident
 * agent's hold on V8's optimising compiler (resident-start.ts) is taken before a single other module is
 * loaded, because loading them is itself hot enough to be optimised; then the CLI (main.ts).
 */
import './resident-start.js';

await import('./main.js');
