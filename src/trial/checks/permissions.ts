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
import { sharedFolders as sharedGrants } from '../scratch.js';
import { ensureScratch } from './contract.js';
import { grantKindOf, grantsByKind } from '../grants.js';
import { m } from '../say.js';
import { CONTROL_API } from '../../control/api.js';
import type { Message } from '../../i18n/index.js';

export const permissionsChecks = (): CheckDef[] => [
  {
    id: 'permissions.granted',
    title: m('trial.t.permissions_granted'),
    guide: '4',
    required: (ctx) => !!ctx.control,
    needs: ONLINE,
    async run(ctx, e, device) {
      const needed = new Map<string, string[]>();
      for (const f of await ctx.functions(device)) {
        const kind = grantKindOf(f.id);
        if (kind) needed.set(kind, [...(needed.get(kind) ?? []), f.id]);
      }
      if (!needed.size) return { verdict: 'pass', message: m('trial.m.perm.none_needed') };
      // What the user shared is not visible through the runtime API (by design); the device's own controls say.
      const control = ctx.control;
      if (!control) return { verdict: 'not_run', message: m('trial.m.perm.needs_control', { problem: ctx.controlProblem }) };
      const byKind = await ctx.ev(e, m('trial.e.fn', { fn: CONTROL_API.listGrants.method }), {}, async () => (await grantsByKind(ctx)) ?? null);
      if (!byKind) return { verdict: 'not_run', message: m('trial.m.perm.no_list') };
      const rows = [...needed].map(([kind, fns]) => {
        const entries = (byKind[kind] ?? []).filter((x) => !(kind === 'files' && (x['alias'] === ctx.scratch?.root || x['id'] === ctx.scratch?.dir)));
        return { kind, functions: fns.length, state: entries.length ? 'granted' : 'not granted', entries: entries.length, os: 'not observable from here' };
      });
      e.push({ label: m('trial.e.grant_kinds'), response: rows });
      const missing = rows.filter((r) => r.state !== 'granted');
      const list = rows.map((r) => (r.entries ? m('trial.m.perm.granted', { kind: r.kind, n: r.entries }) : m('trial.m.perm.not_granted', { kind: r.kind }))).reduce((a, b) => m('trial.m.and', { a, b }));
      // Nothing shared at all: every function that needs a resource can only be refused.
      if (missing.length === rows.length) return { verdict: 'fail', message: m('trial.m.perm.nothing', { list }) };
      // A kind with nothing shared is the user's choice: its functions are not tested (their contract checks say so).
      if (missing.length) return { verdict: 'pass', message: m('trial.m.perm.some', { list, kinds: missing.map((r) => r.kind).join(', ') }) };
      return { verdict: 'pass', message: list };
    },
  },
  {
    id: 'permissions.denied',
    title: m('trial.t.permissions_denied'),
    guide: '4',
    required: true,
    perDevice: true,
    needs: ONLINE,
    async run(ctx, e, device) {
      if (!(await ctx.functions(device)).some((f) => f.id === 'files.read_text')) return { verdict: 'not_run', message: m('trial.m.denied.no_probe') };
      // A real file outside every share (on this machine: the device's, with --control local), in a folder no files grant covers.
      const shared = await sharedFolders(ctx);
      const parent = [ctx.o.agentDataDir && join(ctx.o.agentDataDir, 'tmp'), tmpdir(), homedir()].find((p): p is string => !!p && !shared.some((s) => inside(p, s)));
      if (!parent) return { verdict: 'inconclusive', message: m('trial.m.denied.all_shared', { folders: shared.join(', ') }) };
      mkdirSync(parent, { recursive: true });
      const outside = mkdtempSync(join(parent, 'aios-trial-outside-'));
      try {
        const secret = join(outside, 'outside.txt');
        writeFileSync(secret, 'not shared\n');
        const refusedBefore = (r: CallRecord, what: Message): Observed | undefined => {
          const err = r.outcome?.error;
          if (r.outcome?.state === 'completed') return { verdict: 'fail', message: m('trial.m.denied.read', { what }) };
          if (err?.type !== 'permission_denied') return { verdict: 'fail', message: m('trial.m.denied.not_denied', { what, got: `${r.outcome?.state}/${err?.type ?? '-'}` }) };
          if (r.timeline.some((t) => t.state === 'awaiting_confirmation')) return { verdict: 'fail', message: m('trial.m.denied.after_prompt', { what }) };
          return undefined;
        };
        const a = await ctx.call(e, m('trial.e.outside'), device, 'files.read_text', { path: secret });
        const bad = refusedBefore(a, m('trial.m.denied.outside_file', { path: secret }));
        if (bad) return bad;
        const scratch = device === ctx.primary && ctx.o.allowEffects ? await ensureScratch(ctx) : undefined;
        if (!scratch) return { verdict: 'pass', message: m('trial.m.denied.pass_outside', { message: a.outcome!.error!.message }) };
        const linkDir = mkdtempSync(join(scratch.dir, 'escape-'));
        symlinkSync(secret, join(linkDir, 'link.txt'));
        const b = await ctx.call(e, m('trial.e.link'), device, 'files.read_text', { root: scratch.root, path: `${relative(scratch.dir, linkDir).split('\\').join('/')}/link.txt` });
        const bad2 = refusedBefore(b, m('trial.m.denied.link'));
        if (bad2) return bad2;
        return { verdict: 'pass', message: m('trial.m.denied.pass_both', { message: b.outcome!.error!.message }) };
      } finally {
        rmSync(outside, { recursive: true, force: true });
      }
    },
  },
];

/** The folders shared as files grants (from the device's controls; none known without control). */
async function sharedFolders(ctx: TrialContext): Promise<string[]> {
  if (!ctx.control) return [];
  return (await sharedGrants(ctx.control).catch(() => [])).map((g) => g.id);
}

/** `p` is `folder` or inside it. */
function inside(p: string, folder: string): boolean {
  const r = relative(folder, p);
  return r === '' || (!r.startsWith('..') && !isAbsolute(r));
}
