/**
 * The trial report as one self-contained HTML file: no external assets, no script needed to read it
 * (evidence folds open with `<details>`), so it opens from disk, prints on A4 and can be attached to a
 * release. In the tester's language (`report.lang`: en or zh-CN); verdict names and check ids are stable.
 */
import { strings, type Locale, type MessageParams } from '../i18n/index.js';
import type { TrialKey } from '../i18n/trial.js';
import { GUIDE_LINES, VERDICTS, type CheckResult, type TrialReport, type Verdict } from './types.js';

const esc = (s: unknown): string =>
  String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** Renders the report in `r.lang` (en by default). */
export function renderHtml(r: TrialReport): string {
  const lang: Locale = r.lang ?? 'en';
  const t = (key: TrialKey, params?: MessageParams) => strings.render(params ? { key, params } : { key }, lang);
  const label = (v: Verdict) => t(`trial.verdict.${v}`);
  const badge = (v: Verdict) => `<span class="badge ${v}" data-verdict="${v}">${esc(label(v))}</span>`;
  const guideText = (line: string) => {
    const g = GUIDE_LINES[line]!;
    // The guide's own words under the English ones; in Chinese they are the text.
    return lang === 'zh-CN' ? esc(g.zh) : `${esc(g.en)}<div class="zh" lang="zh-CN">${esc(g.zh)}</div>`;
  };

  const evidenceOf = (c: CheckResult): string =>
    c.evidence.length
      ? `<details><summary>${esc(t('trial.evidence', { n: c.evidence.length }))}</summary>${c.evidence
          .map((e) => `<div class="ev"><b>${esc(e.label)}</b>${e.ms !== undefined ? ` <span class="ms">${e.ms} ms</span>` : ''}${e.request !== undefined ? `<pre>${esc(JSON.stringify(e.request, null, 2))}</pre>` : ''}${e.response !== undefined ? `<pre>${esc(JSON.stringify(e.response, null, 2))}</pre>` : ''}</div>`)
          .join('')}</details>`
      : '';
  const cell = (c: CheckResult | undefined, span = 1): string => {
    const colspan = span > 1 ? ` colspan="${span}"` : '';
    if (!c) return `<td${colspan} class="na">—</td>`;
    return `<td${colspan}>${badge(c.verdict)} <span>${esc(c.message)}</span>${evidenceOf(c)}</td>`;
  };

  // One row per check id: a cell per device for a check that runs on every device, one spanning cell otherwise.
  const ids = [...new Set(r.checks.map((c) => c.id))];
  const checkRows = ids
    .map((id) => {
      const cs = r.checks.filter((c) => c.id === id);
      const first = cs[0]!;
      const cells = first.device === undefined ? cell(first, r.devices.length) : r.devices.map((d) => cell(cs.find((c) => c.device === d))).join('');
      return `<tr><td><code>${esc(id)}</code>${first.required ? ` <span class="req">${esc(t('trial.required'))}</span>` : ''}${first.precondition ? ` <span class="pre">${esc(t('trial.precondition'))}</span>` : ''}<div class="title">${esc(first.title)}</div></td><td>${esc(first.guide)}</td>${cells}</tr>`;
    })
    .join('');

  // Each line shows the weakest verdict of its required checks (computed with the report: r.lines), its counts beside it.
  const lineRows = r.lines
    .map(({ line, verdict, checks }) => {
      const cs = r.checks.filter((c) => checks.includes(c.id));
      const n = (v: Verdict) => cs.filter((c) => c.verdict === v).length;
      const counts = [...VERDICTS].reverse().filter((v) => n(v)).map((v) => `${n(v)} ${label(v)}`).join(', ');
      return `<tr><td>${esc(line)}</td><td>${guideText(line)}</td><td>${badge(verdict)} ${esc(counts || t('trial.no_check'))}</td></tr>`;
    })
    .join('');

  // The summary a manager reads in ten seconds: the verdict, what passed, what failed, what was not tested and why, what was simulated.
  const none = esc(t('trial.summary.none'));
  const passedLines = r.lines.filter((l) => l.verdict === 'pass').map((l) => l.line);
  const notTested = r.checks.filter((c) => c.verdict === 'not_run' || c.verdict === 'inconclusive' || c.verdict === 'skipped');
  const simulated = r.checks.filter((c) => c.verdict === 'simulated');
  const item = (c: CheckResult) => `<li>${badge(c.verdict)} <code>${esc(c.id)}</code>${c.device && r.devices.length > 1 ? ` (<code>${esc(c.device)}</code>)` : ''}: <span>${esc(c.message)}</span></li>`;
  const protocols = [...new Set(r.environment.clients.map((c) => c['protocol_version']).filter((v) => typeof v === 'string'))] as string[];
  const scratch = r.scratch ? ('root' in r.scratch ? t('trial.summary.scratch', { root: r.scratch.root, dir: r.scratch.dir }) : t('trial.summary.scratch_none', { problem: r.scratch.problem })) : '';
  const answered = Number(r.options['prompts_answered_by_trial'] ?? 0);
  const verdictText = r.ok ? t('trial.run.passed') : t('trial.run.failed', { n: r.summary.required_failed.length });

  return `<!doctype html>
<html lang="${lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(t('trial.page_title', { verdict: t(r.ok ? 'trial.run.passed_short' : 'trial.run.failed_short'), devices: r.devices.join(', ') }))}</title>
<style>
body{font:14px/1.45 system-ui,"Noto Sans CJK SC","Noto Sans SC",sans-serif;margin:2rem;color:#1b1b1b;background:#fff}
h1{font-size:1.5rem;margin:0 0 .25rem}h2{font-size:1.1rem;margin-top:2rem}
.verdict{font-size:1.2rem;font-weight:700;padding:.5rem 1rem;display:inline-block;border-radius:6px}
.verdict.ok{background:#d7f5dd;color:#0b5d1e}.verdict.bad{background:#fde0e0;color:#8a1010}
.summary{border:1px solid #ccc;border-radius:6px;padding:.5rem 1rem;margin:1rem 0}.summary ul{margin:.25rem 0;padding-left:1.25rem}
table{border-collapse:collapse;width:100%}th,td{border-bottom:1px solid #ddd;padding:.4rem .5rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}.badge{font-weight:700;font-size:.8rem;padding:.1rem .4rem;border-radius:4px;white-space:nowrap}
.badge.pass{background:#d7f5dd;color:#0b5d1e}.badge.fail{background:#fde0e0;color:#8a1010}
.badge.skipped{background:#eee;color:#444}.badge.not_run,.badge.inconclusive{background:#fff2cc;color:#5c4300}.badge.simulated{background:#e3ecfb;color:#173e7a}
.req{font-size:.75rem;color:#8a1010}.pre{font-size:.75rem;color:#444}.na{color:#595959}.title{color:#444}.zh{color:#555}.ms{color:#595959}
pre{background:#f7f7f7;padding:.5rem;overflow:auto;max-height:20rem;font-size:12px;white-space:pre-wrap;word-break:break-all}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem}dt{font-weight:600}dd{margin:0}
@page{size:A4;margin:14mm}
@media print{body{margin:0;font-size:10pt}pre{max-height:none;font-size:8pt}details>*:not(summary){display:none}tr,li,.summary{break-inside:avoid}h2{break-after:avoid}.verdict,.badge{print-color-adjust:exact;-webkit-print-color-adjust:exact}}
</style></head><body>
<main>
<h1>${esc(t('trial.title'))}</h1>
<p><span class="verdict ${r.ok ? 'ok' : 'bad'}">${esc(verdictText)}</span></p>
<section class="summary" aria-labelledby="summary-h"><h2 id="summary-h">${esc(t('trial.summary'))}</h2>
<p>${esc(t('trial.summary.counts', { pass: r.summary.pass, fail: r.summary.fail, inconclusive: r.summary.inconclusive, not_run: r.summary.not_run, skipped: r.summary.skipped, simulated: r.summary.simulated }))}</p>
<p>${esc(t('trial.summary.tested', { lines: passedLines.join(', ') || t('trial.summary.none') }))}</p>
${r.summary.required_failed.length ? `<p>${esc(t('trial.summary.failed', { ids: r.summary.required_failed.join(', ') }))}</p>` : ''}
<p>${esc(t('trial.summary.outputs', { n: r.summary.outputs_validated.validated, m: r.summary.outputs_validated.functions }))}</p>
<p>${esc(t('trial.summary.protocol', { version: protocols.join(', ') || '?', ours: r.tool.protocol_version }))}</p>
${scratch ? `<p>${esc(scratch)}</p>` : ''}
${answered ? `<p>${esc(t('trial.summary.unattended', { n: answered }))}</p>` : ''}
<h3>${esc(t('trial.summary.not_tested'))}</h3>${notTested.length ? `<ul>${notTested.map(item).join('')}</ul>` : `<p>${none}</p>`}
<h3>${esc(t('trial.summary.simulated'))}</h3>${simulated.length ? `<ul>${simulated.map(item).join('')}</ul>` : `<p>${none}</p>`}
</section>
<h2>${esc(t('trial.checklist'))}</h2>
<table><thead><tr><th>${esc(t('trial.col.line'))}</th><th>${esc(t('trial.col.asks'))}</th><th>${esc(t('trial.col.result'))}</th></tr></thead><tbody>${lineRows}</tbody></table>
<h2>${esc(t('trial.checks'))}</h2>
<p>${esc(t('trial.checks.explain'))}</p>
<table class="checks"><thead><tr><th>${esc(t('trial.col.check'))}</th><th>${esc(t('trial.col.guide'))}</th>${r.devices.map((d) => `<th>${r.devices.length > 1 ? esc(t('trial.col.device', { id: d })) : esc(t('trial.col.verdict'))}</th>`).join('')}</tr></thead><tbody>${checkRows}</tbody></table>
<h2>${esc(t('trial.environment'))}</h2>
<dl><dt>${esc(t('trial.env.bridge'))}</dt><dd>${esc(r.bridge)}</dd><dt>${esc(t('trial.env.devices'))}</dt><dd>${esc(r.devices.join(', '))}</dd>
<dt>${esc(t('trial.env.trial'))}</dt><dd>${esc(t('trial.env.trial_value', { name: r.tool.name, version: r.tool.version, protocol: r.tool.protocol_version }))}</dd>
<dt>${esc(t('trial.env.runner'))}</dt><dd>${esc(r.environment.platform)}/${esc(r.environment.arch)}, Node ${esc(r.environment.node)}</dd>
<dt>${esc(t('trial.env.min_client'))}</dt><dd>${esc(r.environment.bridge_min_client_version ?? '—')}</dd>
<dt>${esc(t('trial.env.times'))}</dt><dd>${esc(r.started_at)} / ${esc(r.finished_at)}</dd>
<dt>${esc(t('trial.env.options'))}</dt><dd><pre>${esc(JSON.stringify(r.options, null, 2))}</pre></dd>
<dt>${esc(t('trial.env.clients'))}</dt><dd><pre>${esc(JSON.stringify(r.environment.clients, null, 2))}</pre></dd></dl>
</main>
</body></html>
`;
}
