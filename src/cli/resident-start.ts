/**
 * The CLI's first import, so that it runs before any other module is evaluated: a resident agent (`run`,
 * not its help) starts with V8's optimising compiler held off until it is first used (base/optimiser.ts).
 */
import { holdOffOptimiser } from '../base/optimiser.js';

/** Whether these arguments start a resident agent (`aios-device run …`), not a command that ends. */
export function isResidentRun(args: readonly string[]): boolean {
  return args[0] === 'run' && !args.includes('-h') && !args.includes('--help');
}

if (isResidentRun(process.argv.slice(2))) holdOffOptimiser();
