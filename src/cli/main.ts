#!/usr/bin/env node
/**
 * `aios-device`: one binary, subcommands. Errors print one clear line; exit codes are documented in
 * docs/cli.md.
 */
// First: a resident agent holds V8's optimising compiler off before any other module runs.
import { isResidentRun } from './resident-start.js';
import { CommanderError } from 'commander';
import { errorLine, say, sayError } from './say.js';
import { localeFromEnv } from '../i18n/index.js';
import { errorText } from '../i18n/said.js';
import { renderViolation } from '../discovery/adapter-problem.js';
import { ConfigError } from '../config/load.js';
import { UsageError } from './process.js';
import { buildProgram } from './program.js';
import { BridgeHttpError, BridgeUnreachableError, NoDeviceError } from '../runtime-client/client.js';
import { EXIT_BRIDGE_UNREACHABLE, EXIT_USAGE } from './exit-codes.js';
import { loadDisplayWidth } from './display-width.js';

// A reader that stops early (`aios-device functions | head -1`) closes the pipe: that ends the command
// quietly, as any Unix tool does, instead of with an EPIPE stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
}

async function main(): Promise<void> {
  // Help and tables measure text with string-width; a resident agent (`run`) shows neither, and loading it
  // costs ≈ 2.7 MB of RSS for the life of the process (display-width.ts).
  const args = process.argv.slice(2);
  if (!isResidentRun(args)) await loadDisplayWidth();
  try {
    await buildProgram().parseAsync(process.argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      process.exitCode = e.exitCode === 0 ? 0 : EXIT_USAGE;
      return;
    }
    if (e instanceof ConfigError) {
      process.stderr.write(`${say('cli.main.config_error', { file: e.file })}\n${e.say(localeFromEnv(), renderViolation).map((p) => `  - ${p}`).join('\n')}\n`);
      process.exitCode = EXIT_USAGE;
      return;
    }
    if (e instanceof BridgeUnreachableError) {
      process.stderr.write(say('cli.main.error', { error: errorText(e, localeFromEnv()) }) + '\n');
      process.exitCode = EXIT_BRIDGE_UNREACHABLE;
      return;
    }
    if (e instanceof BridgeHttpError) {
      // The bridge's error type and English message as they came, its name in the user's language.
      process.stderr.write(say('cli.main.error', { error: errorLine(e.error) }) + '\n');
      process.exitCode = 1;
      return;
    }
    if (e instanceof UsageError || e instanceof NoDeviceError) {
      process.stderr.write(say('cli.main.error', { error: errorText(e, localeFromEnv()) }) + '\n');
      process.exitCode = EXIT_USAGE;
      return;
    }
    // Errors from deep code that reach a person carry a catalogue message (`said`): said in their language.
    process.stderr.write(say('cli.main.error', { error: sayError(e) }) + '\n');
    process.exitCode = 1;
  }
}

await main();
