/**
 * The trial report as one self-contained HTML file: no external assets, no script needed to read it
 * (evidence folds open with `<details>`), so it opens from disk and can be attached to a release.
 */
import { GUIDE_LINES, VERDICTS, type CheckResult, type TrialReport, type Verdict } from './types.js';

const esc = (s: unknown): string =>
  String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const VERDICT_LABEL: Record<Verdict, string> = { pass: 'PASS', fail: 'FAIL', inconclusive: 'INCONCLUSIVE', not_run: 'NOT RUN', skipped: 'SKIPPED', simulated: 'SIMULATED' };

function evidenceOf(c: CheckResult): string {
  return c.evidence.length
    ? `<details><summary>Evidence (${c.evidence.length})</summary>${c.evidence
        .map((e) => `<div class="ev"><b>${esc(e.label)}</b>${e.ms !== undefined ? ` <span class="ms">${e.ms} ms</span>` : ''}${e.request !== undefined ? `<pre>${esc(JSON.stringify(e.request, null, 2))}</pre>` : ''}${e.response !== undefined ? `<pre>${esc(JSON.stringify(e.response, null, 2))}</pre>` : ''}</div>`)
        .join('')}</details>`
    : '';
}

function cell(c: CheckResult | undefined, span = 1): string {
  if (!c) return `<td${span > 1 ? ` colspan="${span}"` : ''} class="na">—</td>`;
  return `<td${span > 1 ? ` colspan="${span}"` : ''}><span class="badge ${c.verdict}">${VERDICT_LABEL[c.verdict]}</span> ${esc(c.message)}${evidenceOf(c)}</td>`;
}

/** One row per check id: a cell per device for a check that runs on every device, one spanning cell otherwise. */
function checkRows(r: TrialReport): string {
  const ids = [...new Set(r.checks.map((c) => c.id))];
  return ids
    .map((id) => {
      const cs = r.checks.filter((c) => c.id === id);
      const first = cs[0]!;
      const cells = first.device === undefined ? cell(first, r.devices.length) : r.devices.map((d) => cell(cs.find((c) => c.device === d))).join('');
      return `<tr><td><code>${esc(id)}</code>${first.required ? ' <span class="req">required</span>' : ''}${first.precondition ? ' <span class="pre">precondition</span>' : ''}<div class="title">${esc(first.title)}</div></td><td>${esc(first.guide)}</td>${cells}</tr>`;
    })
    .join('');
}

/** Renders the report. */
export function renderHtml(r: TrialReport): string {
  // Each line shows the weakest verdict of its required checks (computed with the report: r.lines), its counts beside it.
  const byLine = r.lines.map(({ line, verdict, checks }) => {
    const text = GUIDE_LINES[line]!;
    const cs = r.checks.filter((c) => checks.includes(c.id));
    const n = (v: Verdict) => cs.filter((c) => c.verdict === v).length;
    const counts = [...VERDICTS].reverse().filter((v) => n(v)).map((v) => `${n(v)} ${VERDICT_LABEL[v].toLowerCase()}`).join(', ');
    return `<tr><td>${esc(line)}</td><td>${esc(text.en)}<div class="zh" lang="zh-CN">${esc(text.zh)}</div></td><td><span class="badge ${verdict}">${VERDICT_LABEL[verdict]}</span> ${esc(counts || 'no check')}</td></tr>`;
  });
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>AIOS Device trial: ${r.ok ? 'passed' : 'failed'} (${esc(r.devices.join(', '))})</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1b1b1b;background:#fff}
h1{font-size:1.5rem;margin:0 0 .25rem}h2{font-size:1.1rem;margin-top:2rem}
.verdict{font-size:1.2rem;font-weight:700;padding:.5rem 1rem;display:inline-block;border-radius:6px}
.verdict.ok{background:#d7f5dd;color:#0b5d1e}.verdict.bad{background:#fde0e0;color:#8a1010}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ddd;padding:.4rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}.badge{font-weight:700;font-size:.8rem;padding:.1rem .4rem;border-radius:4px;white-space:nowrap}
.badge.pass{background:#d7f5dd;color:#0b5d1e}.badge.fail{background:#fde0e0;color:#8a1010}
.badge.skipped{background:#eee;color:#444}.badge.not_run,.badge.inconclusive{background:#fff2cc;color:#6b4e00}.badge.simulated{background:#e3ecfb;color:#173e7a}
.req{font-size:.75rem;color:#8a1010}.pre{font-size:.75rem;color:#444}.na{color:#666}.title{color:#444}.zh{color:#555}.ms{color:#666}
pre{background:#f7f7f7;padding:.5rem;overflow:auto;max-height:20rem;font-size:12px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{font-weight:600}
</style></head><body>
<h1>AIOS Device trial report</h1>
<p><span class="verdict ${r.ok ? 'ok' : 'bad'}">${r.ok ? 'PASSED: every required check passed' : `FAILED: ${r.summary.required_failed.length} required check(s) did not pass`}</span></p>
<p>${r.summary.pass} passed · ${r.summary.fail} failed · ${r.summary.inconclusive} inconclusive · ${r.summary.not_run} not run · ${r.summary.skipped} skipped · ${r.summary.simulated} simulated${r.summary.required_failed.length ? ` · required and not passed: ${r.summary.required_failed.map((x) => `<code>${esc(x)}</code>`).join(', ')}` : ''}</p>
<p>Functions whose output was validated: ${r.summary.outputs_validated.validated} of ${r.summary.outputs_validated.functions}${r.scratch ? ` · scratch share: ${'root' in r.scratch ? `<code>${esc(r.scratch.root)}</code> at <code>${esc(r.scratch.dir)}</code> (added for this run, removed afterwards)` : esc(r.scratch.problem)}` : ''}</p>
<h2>The guide's checklist (试运行与联调)</h2>
<table><thead><tr><th>line</th><th>what it asks</th><th>result</th></tr></thead><tbody>${byLine.join('')}</tbody></table>
<h2>Checks</h2>
<p>Required checks must pass for the run to pass; a required check that was inconclusive or not run fails the run unless <code>--allow-not-run</code> names it. A simulated check (the trial stood in for a person or a fault) does not fail the run and is not a pass. Open "Evidence" to see each request and answer.</p>
<table class="checks"><thead><tr><th>check</th><th>guide line</th>${r.devices.map((d) => `<th>${r.devices.length > 1 ? `device <code>${esc(d)}</code>` : 'verdict and evidence'}</th>`).join('')}</tr></thead><tbody>${checkRows(r)}</tbody></table>
<h2>Environment</h2>
<dl><dt>bridge</dt><dd>${esc(r.bridge)}</dd><dt>devices</dt><dd>${esc(r.devices.join(', '))}</dd>
<dt>trial</dt><dd>${esc(r.tool.name)} ${esc(r.tool.version)}, protocol ${esc(r.tool.protocol_version)}</dd>
<dt>runner</dt><dd>${esc(r.environment.platform)}/${esc(r.environment.arch)}, Node ${esc(r.environment.node)}</dd>
<dt>bridge minimum client</dt><dd>${esc(r.environment.bridge_min_client_version ?? 'none')}</dd>
<dt>started / finished</dt><dd>${esc(r.started_at)} / ${esc(r.finished_at)}</dd>
<dt>options</dt><dd><pre>${esc(JSON.stringify(r.options, null, 2))}</pre></dd>
<dt>devices as the bridge knows them</dt><dd><pre>${esc(JSON.stringify(r.environment.clients, null, 2))}</pre></dd></dl>
</body></html>
`;
}
