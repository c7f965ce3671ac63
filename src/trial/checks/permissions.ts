/**
 * Guide line 4: what the device's functions need is granted (every grant kind, as the device's own
 * controls list it), and what is not granted is refused: a real path outside every share, and a link
 * inside the share that escapes it.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { isAbsolute, join, relative } from 'node:path';
import type { CallRecord } from '../../bridge/store.js';
import type { CheckDef } from '../check.js';
import { ONLINE } from '../check.js';
import type { Observed, TrialContext } from '../context.js';
import { filesGrants } from '../scratch.js';
import { ensureScratch } from './contract.js';
import { grantKindOf, grantsByKind } from '../grants.js';

export const permissionsChecks = (): CheckDef[] => [
  {
    id: 'permissions.granted',
    title: 'Each kind of resource the device\'s functions need (files, serial, printers, cameras, microphones, screens, bluetooth) is listed as granted or not; something is granted',
    guide: '4',
    required: (ctx) => !!ctx.control,
    needs: ONLINE,
    async run(ctx, e, device) {
      const needed = new Map<string, string[]>();
      for (const f of await ctx.functions(device)) {
        const kind = grantKindOf(f.id);
        if (kind) needed.set(kind, [...(needed.get(kind) ?? []), f.id]);
      }
      if (!needed.size) return { verdict: 'pass', message: 'the device publishes no function that needs a grant' };
      // What the user shared is not visible through the runtime API (by design); the device's own controls say.
      const control = ctx.control;
      if (!control) return { verdict: 'not_run', message: `what is granted is visible only on the device: ${ctx.controlProblem}` };
      const byKind = await ctx.ev(e, 'control.grants.list', {}, async () => (await grantsByKind(ctx)) ?? null);
      if (!byKind) return { verdict: 'not_run', message: 'the agent offers no control.grants.list' };
      const rows = [...needed].map(([kind, fns]) => {
        const entries = (byKind[kind] ?? []).filter((x) => !(kind === 'files' && (x['alias'] === ctx.scratch?.root || x['id'] === ctx.scratch?.dir)));
        return { kind, functions: fns.length, state: entries.length ? 'granted' : 'not granted', entries: entries.length, os: 'not observable from here' };
      });
      e.push({ label: 'grant kinds the published functions need', response: rows });
      const missing = rows.filter((r) => r.state !== 'granted');
      const list = rows.map((r) => `${r.kind}: ${r.state}${r.entries ? ` (${r.entries})` : ''}`).join(', ');
      // Nothing shared at all: every function that needs a resource can only be refused.
      if (missing.length === rows.length) return { verdict: 'fail', message: `${list}. The device's functions can do nothing until something is shared: in the tray's settings or under grants.<kind> (or turn those functions off)` };
      // A kind with nothing shared is the user's choice: its functions are not tested (their contract checks say so).
      if (missing.length) return { verdict: 'pass', message: `${list}. Nothing is shared for ${missing.map((r) => r.kind).join(', ')}: those functions were not tested (share something in the tray's settings or under grants.<kind> to test them)` };
      return { verdict: 'pass', message: list };
    },
  },
  {
    id: 'permissions.denied',
    title: 'A real path outside every share, and a link escaping a share, end permission_denied before any prompt',
    guide: '4',
    required: true,
    perDevice: true,
    needs: ONLINE,
    async run(ctx, e, device) {
      if (!(await ctx.functions(device)).some((f) => f.id === 'files.read_text')) return { verdict: 'not_run', message: 'no function with a resource the trial knows how to probe (files.read_text)' };
      // A real file outside every share (on this machine: the device's, with --control local), in a folder no files grant covers.
      const shared = await sharedFolders(ctx);
      const parent = [ctx.o.agentDataDir && join(ctx.o.agentDataDir, 'tmp'), tmpdir(), homedir()].find((p): p is string => !!p && !shared.some((s) => inside(p, s)));
      if (!parent) return { verdict: 'inconclusive', message: `every folder the trial could use is shared (${shared.join(', ')}): no real path outside every share to try` };
      mkdirSync(parent, { recursive: true });
      const outside = mkdtempSync(join(parent, 'aios-trial-outside-'));
      try {
        const secret = join(outside, 'outside.txt');
        writeFileSync(secret, 'not shared\n');
        const refusedBefore = (r: CallRecord, what: string): Observed | undefined => {
          const err = r.outcome?.error;
          if (r.outcome?.state === 'completed') return { verdict: 'fail', message: `${what} was read: the call completed` };
          if (err?.type !== 'permission_denied') return { verdict: 'fail', message: `${what}: expected permission_denied, got ${r.outcome?.state}/${err?.type ?? 'no error'}` };
          if (r.timeline.some((t) => t.state === 'awaiting_confirmation')) return { verdict: 'fail', message: `${what}: permission_denied, but only after asking the user` };
          return undefined;
        };
        const a = await ctx.call(e, 'files.read_text on a real file outside every share', device, 'files.read_text', { path: secret });
        const bad = refusedBefore(a, `a file outside every share (${secret})`);
        if (bad) return bad;
        const scratch = device === ctx.primary && ctx.o.allowEffects ? await ensureScratch(ctx) : undefined;
        if (!scratch) return { verdict: 'pass', message: `permission_denied for a real file outside every share: ${a.outcome!.error!.message} (a link escaping a share was not tried: it needs a scratch share, --allow-effects --control local)` };
        const linkDir = mkdtempSync(join(scratch.dir, 'escape-'));
        symlinkSync(secret, join(linkDir, 'link.txt'));
        const b = await ctx.call(e, 'files.read_text through a link in the share that points outside it', device, 'files.read_text', { root: scratch.root, path: `${relative(scratch.dir, linkDir).split('\\').join('/')}/link.txt` });
        const bad2 = refusedBefore(b, 'a link escaping the share');
        if (bad2) return bad2;
        return { verdict: 'pass', message: `permission_denied for a real file outside every share and for a link escaping the share: ${b.outcome!.error!.message}` };
      } finally {
        rmSync(outside, { recursive: true, force: true });
      }
    },
  },
];

/** The folders shared as files grants (from the device's controls; none known without control). */
async function sharedFolders(ctx: TrialContext): Promise<string[]> {
  const g = await ctx.control?.call('control.grants.list', { kind: 'files' }).catch(() => undefined);
  return g ? filesGrants(g).map((x) => x['id']).filter((x): x is string => typeof x === 'string') : [];
}

/** `p` is `folder` or inside it. */
function inside(p: string, folder: string): boolean {
  const r = relative(folder, p);
  return r === '' || (!r.startsWith('..') && !isAbsolute(r));
}
