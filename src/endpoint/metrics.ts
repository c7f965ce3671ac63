/**
 * A small Prometheus text-format registry (exposition format 0.0.4) for the agent's own numbers: calls by
 * function and state, a call latency histogram, confirmations, reconnects and local HTTP requests.
 */

/** Upper bounds (seconds) of the call latency histogram. */
export const LATENCY_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120] as const;

type Labels = Record<string, string>;

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function labelText(labels: Labels): string {
  const keys = Object.keys(labels).sort();
  if (keys.length === 0) return '';
  return '{' + keys.map((k) => `${k}="${escapeLabel(labels[k] ?? '')}"`).join(',') + '}';
}

class Counter {
  private readonly values = new Map<string, { labels: Labels; value: number }>();
  constructor(readonly name: string, readonly help: string) {}

  inc(labels: Labels = {}, by = 1): void {
    this.cell(labels).value += by;
  }

  /** The series for these labels (callers on hot paths keep it and add to it directly). */
  cell(labels: Labels): { labels: Labels; value: number } {
    const key = labelText(labels);
    let cur = this.values.get(key);
    if (!cur) {
      cur = { labels, value: 0 };
      this.values.set(key, cur);
    }
    return cur;
  }

  render(): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    for (const { labels, value } of this.values.values()) lines.push(`${this.name}${labelText(labels)} ${value}`);
    return lines;
  }
}

interface HistogramSeries {
  labels: Labels;
  buckets: number[];
  sum: number;
  count: number;
}

class Histogram {
  private readonly series = new Map<string, HistogramSeries>();
  constructor(readonly name: string, readonly help: string, readonly bounds: readonly number[]) {}

  /** The series for these labels (callers on hot paths keep it and pass it to `observeIn`). */
  cell(labels: Labels): HistogramSeries {
    const key = labelText(labels);
    let s = this.series.get(key);
    if (!s) {
      s = { labels, buckets: this.bounds.map(() => 0), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    return s;
  }

  observeIn(s: HistogramSeries, value: number): void {
    for (let i = 0; i < this.bounds.length; i++) if (value <= this.bounds[i]!) s.buckets[i] = (s.buckets[i] ?? 0) + 1;
    s.sum += value;
    s.count += 1;
  }

  render(): string[] {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const s of this.series.values()) {
      this.bounds.forEach((b, i) => lines.push(`${this.name}_bucket${labelText({ ...s.labels, le: String(b) })} ${s.buckets[i] ?? 0}`));
      lines.push(`${this.name}_bucket${labelText({ ...s.labels, le: '+Inf' })} ${s.count}`);
      lines.push(`${this.name}_sum${labelText(s.labels)} ${s.sum}`);
      lines.push(`${this.name}_count${labelText(s.labels)} ${s.count}`);
    }
    return lines;
  }
}

/** The agent's metrics; the dispatcher and session call the `inc*`/`observe*` methods. */
export class Metrics {
  private readonly flushers: (() => void)[] = [];
  private readonly calls = new Counter('aios_calls_total', 'Finished calls by function and terminal state.');
  private readonly latency = new Histogram('aios_call_duration_seconds', 'Call duration from acceptance to terminal state.', LATENCY_BUCKETS_S);
  private readonly confirmations = new Counter('aios_confirmations_total', 'Confirmation decisions by decision.');
  private readonly reconnects = new Counter('aios_bridge_reconnects_total', 'Bridge session reconnect attempts.');
  private readonly http = new Counter('aios_local_http_requests_total', 'Requests to the local endpoint by route and status.');

  /** The series of each function (and state): found once, then added to without building label text per call. */
  private readonly callCells = new Map<string, { byState: Map<string, { value: number }>; latency: HistogramSeries }>();

  /** Records one finished call. */
  observeCall(functionId: string, state: string, durationMs: number): void {
    let f = this.callCells.get(functionId);
    if (!f) {
      f = { byState: new Map(), latency: this.latency.cell({ function: functionId }) };
      this.callCells.set(functionId, f);
    }
    let c = f.byState.get(state);
    if (!c) {
      c = this.calls.cell({ function: functionId, state });
      f.byState.set(state, c);
    }
    c.value += 1;
    this.latency.observeIn(f.latency, Math.max(0, durationMs) / 1000);
  }

  /** Records one confirmation decision (allowed, denied, timeout, unavailable, withdrawn, not_required). */
  incConfirmation(decision: string): void {
    this.confirmations.inc({ decision });
  }

  /** Records one reconnect attempt to the bridge. */
  incReconnect(): void {
    this.reconnects.inc();
  }

  /** Records one local HTTP request (route is a fixed route name, never a raw path). */
  incHttp(route: string, status: number): void {
    this.http.inc({ route, status: String(status) });
  }

  /** Runs `fn` before each render (the dispatcher's deferred book-keeping: a scrape then counts every call answered). */
  beforeRender(fn: () => void): void {
    this.flushers.push(fn);
  }

  /** The exposition text, served at `GET /metrics`. */
  render(): string {
    for (const f of this.flushers) f();
    return [this.calls, this.latency, this.confirmations, this.reconnects, this.http].flatMap((m) => m.render()).join('\n') + '\n';
  }
}

/** Content-Type of the Prometheus text format. */
export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
