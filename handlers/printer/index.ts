/**
 * The printer handler: list printers, print documents and raw printer data, follow and cancel jobs, on
 * the printers the user shared (`grants.printers`). See docs/handlers/printer.md.
 */
import { defineHandler } from '../../src/sdk/index.js';
import { printerFunctions } from './functions.js';
import { normalizeGrant, type PrinterGrantEntry } from './grants.js';
import { parseSettings, Printers } from './printers.js';

export default defineHandler({
  name: 'printer',
  create(env) {
    const printers = new Printers(parseSettings(env.options));
    const grants = ((env.grants.printers ?? []) as PrinterGrantEntry[]).map(normalizeGrant);
    return printerFunctions({ printers, grants: () => grants, dataDir: env.dataDir, log: env.log.child({ handler: 'printer' }) });
  },
});
