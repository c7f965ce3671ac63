// Runs only the adapter commands (the full CLI entry is the integrator's), for tests and for re-signing examples:
//   node --import tsx test/discovery/cli-runner.ts adapter sign examples/hello-adapter/org.example.hello --key …
import { Command } from 'commander';
import { registerAdapterCommands } from '../../src/cli/commands/adapters.js';
import { loadDisplayWidth } from '../../src/cli/display-width.js';

const program = new Command('aios-device');
registerAdapterCommands(program);
await loadDisplayWidth();
await program.parseAsync(process.argv);
