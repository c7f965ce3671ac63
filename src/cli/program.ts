/**
 * The `aios-device` command tree, apart from the process entry (main.ts) so tests can inspect it.
 */
import { Command } from 'commander';
import { APP_VERSION } from '../version.js';
import { registerCoreCommands } from './commands/core.js';
import { registerDemoCommand } from './commands/demo.js';
import { registerLoginCommands } from './commands/login.js';
import { registerConsentCommands } from './commands/consent.js';
import { registerAdapterCommands } from './commands/adapters.js';
import { registerHandlerCommands } from './commands/handler.js';
import { registerTrialCommand } from './commands/trial.js';

/** Builds the command tree. */
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
  registerHandlerCommands(program);
  registerTrialCommand(program);
  return program;
}

