/**
 * The `aios-device` command tree, apart from the process entry (main.ts) so tests can inspect it.
 */
import type { Command } from 'commander';
import { APP_VERSION } from '../version.js';
import { LocalisedCommand, localisedHelp } from './localised-command.js';
import { say } from './say.js';
import { registerCoreCommands } from './commands/core.js';
import { registerDemoCommand } from './commands/demo.js';
import { registerLoginCommands } from './commands/login.js';
import { registerConsentCommands } from './commands/consent.js';
import { registerAdapterCommands } from './commands/adapters.js';
import { registerHandlerCommands } from './commands/handler.js';
import { registerTrialCommand } from './commands/trial.js';

/**
 * Builds the command tree, its help and error words in the user's locale (read now, from LC_ALL /
 * LC_MESSAGES / LANG). The help option, help command, help settings and error handling are set here,
 * before the subcommands exist, because commander copies them into each subcommand when it is created.
 */
export function buildProgram(): Command {
  const program = new LocalisedCommand('aios-device')
    .description(say('cli.help.program'))
    .version(APP_VERSION, '-V, --version', say('cli.help.version'))
    .helpOption('-h, --help', say('cli.help.help_option'))
    .helpCommand('help [command]', say('cli.help.help_command'))
    .configureHelp(localisedHelp())
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

