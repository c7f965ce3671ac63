/**
 * What the device shares, kind by kind, as its own controls list it (`control.grants.list`, with
 * `--control local`): the trial tests a function's contract only where something is shared for it.
 */
import type { TrialContext } from './context.js';

/** The grant kind each handler's functions need, by function id prefix. */
export const GRANT_KIND_OF: Record<string, string> = {
  'files.': 'files',
  'serial.': 'serial',
  'printer.': 'printers',
  'camera.': 'cameras',
  'microphone.': 'microphones',
  'screen.': 'screens',
  'bluetooth.': 'bluetooth',
};

/** The grant kind function `fn` needs, if any. */
export function grantKindOf(fn: string): string | undefined {
  return Object.entries(GRANT_KIND_OF).find(([p]) => fn.startsWith(p))?.[1];
}

/** The device's grants by kind (the primary device's, through control), read once per run; undefined without control. */
export async function grantsByKind(ctx: TrialContext): Promise<Record<string, Record<string, unknown>[]> | undefined> {
  if (!ctx.control) return undefined;
  if (ctx.grants === undefined) {
    const g = await ctx.control.api.listGrants({}).catch(() => null);
    ctx.grants = g ? g.grants : null;
  }
  return ctx.grants ?? undefined;
}

/**
 * Whether `fn`, on `device`, needs a kind of resource the device is known to share nothing of. Files are
 * not counted: the trial shares its own scratch folder for them (`--allow-effects`).
 */
export async function nothingSharedFor(ctx: TrialContext, device: string, fn: string): Promise<string | undefined> {
  const kind = grantKindOf(fn);
  if (!kind || kind === 'files' || device !== ctx.primary) return undefined;
  const g = await grantsByKind(ctx);
  return g && !(g[kind]?.length) ? kind : undefined;
}
