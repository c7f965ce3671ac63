#!/usr/bin/env node
/**
 * `aios-device`: one binary, subcommands. Errors print one clear line; exit codes are documented in
 * docs/cli.md.
 */
import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config/load.js';
import { APP_VERSION } from '../version.js';
import { registerCoreCommands } from './commands/core.js';
import { registerDemoCommand } from './commands/demo.js';
import { registerLoginCommands } from './commands/login.js';
import { registerConsentCommands } from './commands/consent.js';
import { registerAdapterCommands } from './commands/adapters.js';
import { registerTrialCommand } from './commands/trial.js';
import { UsageError } from './process.js';
import { BridgeUnreachableError, EXIT_BRIDGE_UNREACHABLE, EXIT_USAGE } from './runtime-client.js';

/** Builds the command tree (exported for tests). */
export function buildProgram(): Command {
  const program = new Command('aios-device')
    .description('AIOS Device: the trusted end-side client for AIOS device functions')
    .version(APP_VERSION)
    .showHelpAfterError()
    .exitOverride();
  registerCoreCommands(program);
  registerDemoCommand(program);
  registerLoginCommands(program);
  registerConsentCommands(program);
  registerAdapterCommands(program);
  registerTrialCommand(program);
  return program;
}

async function main(): Promise<void> {
  try {
    await buildProgram().parseAsync(process.argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      process.exitCode = e.exitCode === 0 ? 0 : EXIT_USAGE;
      return;
    }
    if (e instanceof ConfigError) {
      process.stderr.write(`config error in ${e.file}:\n${e.problems.map((p) => `  - ${p}`).join('\n')}\n`);
      process.exitCode = EXIT_USAGE;
      return;
    }
    if (e instanceof BridgeUnreachableError) {
      process.stderr.write(`aios-device: ${e.message}\n`);
      process.exitCode = EXIT_BRIDGE_UNREACHABLE;
      return;
    }
    if (e instanceof UsageError) {
      process.stderr.write(`aios-device: ${e.message}\n`);
      process.exitCode = EXIT_USAGE;
      return;
    }
    process.stderr.write(`aios-device: ${(e as Error).message}\n`);
    process.exitCode = 1;
  }
}

await main();
