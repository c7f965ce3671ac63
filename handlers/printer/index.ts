/**
 * The printer handler: list printers, print documents and raw printer data, follow and cancel jobs, on
 * the printers the user shared (`grants.printers`). See docs/handlers/printer.md.
 */
import { Type } from '@sinclair/typebox';
import { defineGrantKind, defineHandler, listingCandidates } from '../../src/sdk/index.js';
import { printerFunctions } from './functions.js';
import { covers, normalizeGrant } from './grants.js';
import { parseSettings, Printers } from './printers.js';

/**
 * `grants.printers`: "*" (any local queue), a queue name, a printer URI, or
 * `{ alias, printer, ask? }` (e.g. `{ alias: front-desk, printer: "ipp://…" }`). "*" never covers a URI.
 */
export const printerGrants = defineGrantKind({
  kind: 'printers',
  listing: { function: 'printer.list', candidates: (o) => listingCandidates(o, 'printers', 'id', ['make_and_model', 'name']), idKey: 'printer' },
  entry: Type.Union([
    Type.String({ minLength: 1, maxLength: 2048 }),
    Type.Object(
      {
        alias: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
        printer: Type.String({ minLength: 1, maxLength: 2048 }),
        ask: Type.Optional(Type.Literal('always')),
      },
      { additionalProperties: false },
    ),
  ]),
  normalize: (e) => {
    const g = normalizeGrant(e);
    return { id: g.id, ...(g.alias ? { alias: g.alias } : {}), ...(g.ask ? { ask: g.ask } : {}) };
  },
  covers,
});

export default defineHandler({
  name: 'printer',
  title: 'Printers',
  description: 'List printers, print PDF, images and text, send raw label/receipt printer data, and follow or cancel jobs, on printers the user shared.',
  grantKinds: [printerGrants],
  create(env) {
    const printers = new Printers(parseSettings(env.options));
    return { functions: printerFunctions({ printers, grants: env.grants, log: env.log.child({ handler: 'printer' }) }) };
  },
});
