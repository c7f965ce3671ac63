/**
 * The clustered bridge (issue 34: `aios-device bridge` with `store.kind: postgres` and `cluster.node_id`) against
 * the single process, in one run, on a private PostgreSQL started here (test/helpers/postgres.ts) with its
 * durable defaults (`--pg-fsync`, `--pg-sync-commit` to change them). Four parts, each can be left out:
 *
 * - **calls**: a runtime's `POST /v1/calls` (`wait: true`) → bridge → a real agent → back, through the single
 *   process (SQLite) and through a cluster of one node and of three (the call submitted on a node other than the
 *   device's owner); interleaved rounds (bench/stats.ts), medians; p50 and throughput as ratios to the single
 *   process. The notifications each clustered call costs are counted by a listener on every node's channel.
 * - **notify**: what NOTIFY does to a commit: the same transaction (an INSERT of a call-sized row) with and
 *   without `pg_notify`, one in flight and `--concurrency` in flight (PostgreSQL holds one lock from a notifying
 *   transaction's commit until it ends, so such commits go one at a time); with the notifications per call, what
 *   that costs a clustered call.
 * - **floor**: PostgreSQL's floor under a clustered call (bench/cluster-floor.ts): the store operations a node
 *   makes for one call, alone; its p50 against the single process's (when the calls part ran).
 * - **loss**: three nodes, `--loss-devices` simulated devices (bench/sim-fleet.ts) spread over them, each with
 *   every node's address (as the agent's `bridge.urls`); one node is SIGKILLed; the time until every device it
 *   held has a session on a survivor, and the survivors' CPU per hello.
 * - **restart**: three nodes, `--restart-devices` devices; every node SIGKILLed and started again on its port;
 *   the time until every device is back, and the nodes' CPU per hello (their start included).
 *
 * Loss and restart also give each node's RSS above its idle RSS per device it holds (the idle memory per device).
 *
 * Run: npm run bench:cluster [-- --parts calls,notify,loss,restart] [--warmup N] [--latency N] [--throughput N]
 *        [--concurrency N] [--rounds N] [--loss-devices N] [--restart-devices N] [--workers N]
 *        [--pg-fsync on|off] [--pg-sync-commit on|off] [--profile DIR] [--cpu] [--json]
 * `--cpu`: after the calls part's rounds, one more throughput run on the one-node cluster, with the CPU
 * (`/proc/<pid>/stat`, utime + stime) per call of PostgreSQL (every process of the instance), the node, the
 * agent and this process (the runtime's side).
 * Needs root (PostgreSQL runs as the `postgres` user) and Debian's PostgreSQL (scripts/install-test-deps.sh).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { startPostgres, type PrivatePostgres } from '../test/helpers/postgres.js';
import { measureFloor } from './cluster-floor.js';
import { ECHO_VALUE } from './agent-roundtrip.js';
import { benchFile, isMain, positiveInt, runMain, startChild, type BenchChild } from './child.js';
import { BENCH_IDS, runtimeCaller, startAgentChild, startDeviceStack, waitOnline, type AgentSettings } from './device-stack.js';
import { BRIDGE_REST_MS, cpuMs, raiseNofile, rssKb, sleep, startFleet, type Fleet } from './sim-fleet.js';
import { measureThroughput, measureTargets, type BenchCounts, type BenchResult, type BenchTarget } from './stats.js';
import { CLUSTER_FIGURES, formatVerdicts, verdicts, type Measured, type Verdict } from './targets.js';

/** The parts of the run. */
export const PARTS = ['calls', 'notify', 'floor', 'loss', 'restart'] as const;
export type Part = (typeof PARTS)[number];

/** Options of one run. */
export interface ClusterOptions {
  parts: Part[];
  counts: BenchCounts;
  lossDevices: number;
  restartDevices: number;
  /** Worker processes of simulated devices. */
  workers: number;
  /** First connects in flight over all workers. */
  connectConcurrency: number;
  /** PostgreSQL's `fsync` and `synchronous_commit` (both on: its defaults, what production runs). */
  pgFsync: boolean;
  pgSyncCommit: boolean;
  /** How long to wait for every device after a kill before giving up (the figure is then "not all back"). */
  backLimitMs?: number;
  /** The calls part's CPU profiles (`--cpu-prof`) of its bridges, nodes and agents go here. */
  profileDir?: string;
  /** The calls part also measures the one-node cluster's CPU per call (`--cpu`). */
  cpu?: boolean;
  progress?: (line: string) => void;
}

/** One cluster path's figures, and its ratios to the single process. */
export interface PathFigures {
  name: string;
  p50_us: number;
  p99_us: number;
  calls_per_s: number;
  p50_ratio?: number;
  throughput_ratio?: number;
  /** NOTIFYs per call, heard by a listener on every node's channel during `notify_calls` calls. */
  notifies_per_call?: number;
}

/** One floor's figures, and its ratios to the single process (when the calls part ran). */
export interface FloorFigures {
  p50_us: number;
  p99_us: number;
  calls_per_s: number;
  p50_ratio_to_single?: number;
  throughput_ratio_to_single?: number;
}

/** Memory of one node with its devices connected. */
export interface NodeMemory {
  node_id: string;
  devices: number;
  idle_rss_kb: number;
  loaded_rss_kb: number;
  bytes_per_device: number;
}

/** What one run measured. */
export interface ClusterReport {
  date: string;
  node: string;
  cpus: number;
  loadavg: string;
  pg: { fsync: boolean; synchronous_commit: boolean };
  counts?: BenchCounts;
  calls?: { paths: PathFigures[]; notify_calls: number; cpu?: CallCpu };
  notify?: {
    plain: { p50_us: number; tx_per_s: number };
    notify: { p50_us: number; tx_per_s: number };
    concurrency: number;
    /** Extra time one notifying commit holds the cluster's commits at `concurrency` in flight (1/tps difference), µs. */
    serial_extra_us: number;
    /** The three-node call's notifications × that extra, µs, and its share of the three-node call's time at its throughput. */
    per_call_us?: number;
    share_of_call?: number;
  };
  /** PostgreSQL's floor under a clustered call (bench/cluster-floor.ts): a node's store operations alone, and the least. */
  floor?: { concurrency: number; ops: FloorFigures; least: FloorFigures };
  loss?: {
    devices: number;
    memory: NodeMemory[];
    victim: string;
    victim_devices: number;
    /** From the SIGKILL until every device the node held had a session on a survivor (null: not within the limit). */
    back_ms: number | null;
    back: number;
    survivors_cpu_ms_per_hello: number;
  };
  restart?: {
    devices: number;
    memory: NodeMemory[];
    /** From the SIGKILL of every node until all three were ready again (a crashed node's id lapses before it rejoins). */
    nodes_ready_ms: number;
    /** From the nodes being ready / from the kill, until every device was back (null: not within the limit). */
    back_after_ready_ms: number | null;
    back_since_kill_ms: number | null;
    back: number;
    nodes_cpu_ms_per_hello: number;
  };
  targets: Verdict[];
}

const CLUSTER_IDS = { workspace_id: 'ws_cluster', user_id: 'usr_cluster' } as const;
const NODE_IDS = ['node_a', 'node_b', 'node_c'];

/** Three or one bridge node(s) in child processes, on one database, each with its config file (fixed port after the first start). */
class Nodes {
  readonly children: (BenchChild<{ url: string }> | undefined)[] = [];
  readonly urls: string[] = [];
  private readonly files: string[] = [];

  constructor(private readonly dir: string, private readonly dbUrl: string, readonly ids: string[], private readonly shared: Record<string, unknown>, private readonly nofile: number, private readonly nodeArgs: string[] = []) {}

  private write(i: number, port: number): void {
    const id = this.ids[i]!;
    const file = join(this.dir, `${id}.json`);
    this.files[i] = file;
    writeFileSync(file, JSON.stringify({ ...this.shared, listen: { host: '127.0.0.1', port }, data_dir: join(this.dir, id), store: { kind: 'postgres', url: this.dbUrl }, cluster: { node_id: id } }), { mode: 0o600 });
  }

  /** Starts node `i` (on its earlier port when it ran before); resolves when it is ready. */
  async start(i: number): Promise<BenchChild<{ url: string }>> {
    if (!this.files[i]) this.write(i, 0);
    const c = await startChild<{ url: string }>(benchFile('bridge-child'), ['@' + this.files[i]!], this.nodeArgs);
    raiseNofile(c.proc.pid!, this.nofile);
    this.children[i] = c;
    if (!this.urls[i]) {
      this.urls[i] = c.info.url;
      this.write(i, Number(new URL(c.info.url).port));
    }
    return c;
  }

  /** Starts every node one after another (each upserts every configured device at its start). */
  async startAll(): Promise<void> {
    for (let i = 0; i < this.ids.length; i++) await this.start(i);
  }

  /** SIGKILLs node `i` and waits for it to be gone. */
  async kill(i: number): Promise<void> {
    const c = this.children[i];
    if (!c || c.proc.exitCode !== null || c.proc.signalCode !== null) return;
    const gone = new Promise((r) => c.proc.once('exit', r));
    c.proc.kill('SIGKILL');
    await gone;
  }

  pid(i: number): number {
    return this.children[i]!.proc.pid!;
  }

  wsUrl(i: number): string {
    return this.urls[i]!.replace(/^http/, 'ws') + '/v1/device';
  }

  async stop(): Promise<void> {
    await Promise.all(this.children.map((c) => c?.stop()));
  }
}

let dbSeq = 0;

/** Shared config of a cluster: the tokens (the same on every node), no rate limit (the bench looks for the ceiling). */
function sharedConfig(runtime: string, devices: { token: string; device_id: string }[], ids: { workspace_id: string; user_id: string }): Record<string, unknown> {
  return {
    runtime_tokens: { [runtime]: { workspace_id: ids.workspace_id } },
    device_tokens: Object.fromEntries(devices.map((d) => [d.token, { ...ids, device_id: d.device_id }])),
    runtime_rate_limit: { per_second: 1e9, burst: 1e9 },
  };
}

/** CPU per call of the one-node cluster at its throughput (`--cpu`), µs, by process. */
export interface CallCpu {
  calls: number;
  calls_per_s: number;
  postgres_us: number;
  node_us: number;
  agent_us: number;
  runtime_us: number;
}

/**
 * The CPU ms PostgreSQL's instance on `port` used so far: its postmaster (found by its command line) with the
 * backends it reaped (cutime + cstime: a pool's connection that closed takes its time there), and its children
 * alive now.
 */
function postgresCpuMs(port: number): number {
  const pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number);
  const read = (pid: number, f: string) => {
    try {
      return readFileSync(`/proc/${pid}/${f}`, 'utf8');
    } catch {
      return '';
    }
  };
  // The fields after the command's closing parenthesis: state is [0], ppid [1], utime [11], stime [12], cutime [13], cstime [14].
  const fields = (pid: number) => read(pid, 'stat').split(') ')[1]?.split(' ') ?? [];
  const master = pids.find((pid) => {
    const args = read(pid, 'cmdline').split('\0');
    return args[0]?.endsWith('/postgres') && args[args.indexOf('-p') + 1] === String(port);
  });
  if (master === undefined) throw new Error(`no PostgreSQL postmaster on port ${port}`);
  const ticks = (f: string[], from: number, to: number) => f.slice(from, to + 1).reduce((s, v) => s + Number(v), 0);
  let total = ticks(fields(master), 11, 14);
  for (const pid of pids) {
    const f = fields(pid);
    if (f[1] === String(master)) total += ticks(f, 11, 12);
  }
  return (total * 1000) / 100; // clock ticks of 10 ms
}

/** One throughput run of `t` with the CPU per call of PostgreSQL, the node, the agent and this process. */
async function measureCpu(server: PrivatePostgres, t: { call: () => Promise<unknown>; nodes: Nodes; agentPid: number }, c: BenchCounts): Promise<CallCpu> {
  const before = { pg: postgresCpuMs(server.port), node: cpuMs(t.nodes.pid(0)), agent: cpuMs(t.agentPid), self: process.cpuUsage() };
  const r = await measureThroughput(() => t.call(), c.throughputN, c.concurrency);
  const self = process.cpuUsage(before.self);
  const per = (ms: number) => (ms * 1000) / c.throughputN;
  return {
    calls: c.throughputN,
    calls_per_s: r.callsPerS,
    postgres_us: per(postgresCpuMs(server.port) - before.pg),
    node_us: per(cpuMs(t.nodes.pid(0)) - before.node),
    agent_us: per(cpuMs(t.agentPid) - before.agent),
    runtime_us: (self.user + self.system) / c.throughputN,
  };
}

/** A cluster path with a real agent: `nodes` nodes, the agent on the first, calls submitted on the last. */
async function openClusterPath(server: PrivatePostgres, settings: AgentSettings, concurrency: number, nodeCount: number, name: string): Promise<BenchTarget & { nodes: Nodes; dbUrl: string; agentPid: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'aios-cluster-'));
  const dbUrl = server.createDatabase(`bench_path${process.pid}_${++dbSeq}`);
  const runtime = 'rt_' + randomBytes(12).toString('hex');
  const device = 'dt_' + randomBytes(12).toString('hex');
  const nodes = new Nodes(dir, dbUrl, NODE_IDS.slice(0, nodeCount), sharedConfig(runtime, [{ token: device, device_id: BENCH_IDS.device_id }], BENCH_IDS), 4096, settings.nodeArgs);
  let agent: BenchChild<{ pid: number }> | undefined;
  const close = async () => {
    await agent?.stop();
    await nodes.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await nodes.startAll();
    agent = await startAgentChild(settings, dir, nodes.urls[0]!, device);
    const submitOn = nodes.urls[nodeCount - 1]!;
    await waitOnline(submitOn, runtime);
    const caller = runtimeCaller({ url: submitOn, runtimeToken: runtime }, concurrency, 'diagnostics.echo', { value: ECHO_VALUE }, (o) => (o as { value?: unknown } | undefined)?.value === ECHO_VALUE);
    return {
      name,
      nodes,
      dbUrl,
      agentPid: agent.proc.pid!,
      call: caller.call,
      async close() {
        caller.close();
        await close();
      },
    };
  } catch (e) {
    await close();
    throw e;
  }
}

/** Counts the NOTIFYs on every node's channel and the broadcast channel while `fn` runs. */
async function countNotifies(dbUrl: string, nodeIds: string[], fn: () => Promise<void>): Promise<number> {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  let n = 0;
  client.on('notification', () => n++);
  try {
    for (const ch of ['aios_nodes', ...nodeIds.map((id) => `aios_node_${id}`)]) await client.query(`LISTEN ${ch}`);
    await fn();
    // The last calls' notifications arrive after their answers: a round trip on this connection comes after them.
    await sleep(200);
    await client.query('SELECT 1');
    return n;
  } finally {
    await client.end();
  }
}

/** The calls part: the single process against a cluster of one node and of three, same agent settings. */
async function measureCalls(server: PrivatePostgres, c: BenchCounts, say: (l: string) => void, profileDir?: string, cpu = false): Promise<NonNullable<ClusterReport['calls']>> {
  const settings: AgentSettings = { synchronous: 'normal', log: 'silent', ...(profileDir ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] } : {}) };
  const open: BenchTarget[] = [];
  try {
    say('starting the single process (SQLite) and its agent');
    const stack = await startDeviceStack(settings, 'child');
    const single = runtimeCaller(stack, c.concurrency, 'diagnostics.echo', { value: ECHO_VALUE }, (o) => (o as { value?: unknown } | undefined)?.value === ECHO_VALUE);
    open.push({ name: 'single process (SQLite)', call: single.call, close: async () => { single.close(); await stack.stop(); } });
    say('starting a cluster of one node and its agent');
    const one = await openClusterPath(server, settings, c.concurrency, 1, 'cluster, 1 node');
    open.push(one);
    say('starting a cluster of three nodes, the agent on node_a, calls submitted on node_c');
    const three = await openClusterPath(server, settings, c.concurrency, 3, 'cluster, 3 nodes (submitted on another node)');
    open.push(three);
    const m = await measureTargets(open, c, say);
    const base = m[0]!;
    const fig = (r: BenchResult): PathFigures => ({ name: r.name, p50_us: r.latency.p50Us, p99_us: r.latency.p99Us, calls_per_s: r.throughput.callsPerS });
    const paths = [fig(base)];
    const notifyCalls = Math.min(c.throughputN, 1000);
    for (const [i, t] of [one, three].entries()) {
      const r = m[i + 1]!;
      say(`counting the NOTIFYs of ${notifyCalls} calls: ${t.name}`);
      const heard = await countNotifies(t.dbUrl, t.nodes.ids, async () => {
        for (let k = 0; k < notifyCalls; k++) await t.call();
      });
      paths.push({ ...fig(r), p50_ratio: r.latency.p50Us / base.latency.p50Us, throughput_ratio: r.throughput.callsPerS / base.throughput.callsPerS, notifies_per_call: heard / notifyCalls });
    }
    if (!cpu) return { paths, notify_calls: notifyCalls };
    say(`CPU per call: ${c.throughputN} calls, ${c.concurrency} in flight: ${one.name}`);
    return { paths, notify_calls: notifyCalls, cpu: await measureCpu(server, one, c) };
  } finally {
    for (const t of open.reverse()) await t.close().catch(() => undefined);
  }
}

/** The notify part: one transaction (an INSERT of a call-sized row) with and without pg_notify, with a listener. */
async function measureNotify(server: PrivatePostgres, c: BenchCounts, say: (l: string) => void): Promise<{ plain: BenchResult; notify: BenchResult }> {
  const url = server.createDatabase(`bench_notify${process.pid}`);
  const pool = new pg.Pool({ connectionString: url, max: c.concurrency });
  const listener = new pg.Client({ connectionString: url });
  try {
    await pool.query('CREATE TABLE bench_calls (id bigserial PRIMARY KEY, body text NOT NULL)');
    await listener.connect();
    await listener.query('LISTEN bench_node');
    // About a stored call's size (its params, arguments and timestamps as JSON).
    const body = JSON.stringify({ call_id: 'c'.repeat(26), function: 'diagnostics.echo', arguments: { value: 'x'.repeat(400) }, at: new Date().toISOString() });
    const tx = (notify: boolean) => async () => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query('INSERT INTO bench_calls (body) VALUES ($1)', [body]);
        if (notify) await client.query('SELECT pg_notify($1, $2)', ['bench_node', '{"type":"call","workspace_id":"ws_cluster","call_id":"c"}']);
        await client.query('COMMIT');
      } finally {
        client.release();
      }
    };
    say('commits with and without NOTIFY');
    const [plain, notify] = await measureTargets(
      [
        { name: 'commit: INSERT', call: tx(false), close: () => Promise.resolve() },
        { name: 'commit: INSERT + pg_notify', call: tx(true), close: () => Promise.resolve() },
      ],
      c,
      say,
    );
    return { plain: plain!, notify: notify! };
  } finally {
    await listener.end().catch(() => undefined);
    await pool.end().catch(() => undefined);
  }
}

/** Per node: its devices (by the address their sessions are on) and RSS above its idle RSS per device. */
function memory(nodes: Nodes, idle: number[], byUrl: Record<string, number>): NodeMemory[] {
  return nodes.ids.map((id, i) => {
    const devices = byUrl[nodes.wsUrl(i)] ?? 0;
    const loaded = rssKb(nodes.pid(i));
    return { node_id: id, devices, idle_rss_kb: idle[i]!, loaded_rss_kb: loaded, bytes_per_device: devices ? Math.round(((loaded - idle[i]!) * 1024) / devices) : Number.NaN };
  });
}

/** Three nodes on a fresh database with `n` simulated devices spread over them, all connected; memory read. */
async function connectedCluster(server: PrivatePostgres, n: number, o: ClusterOptions, say: (l: string) => void) {
  const dir = mkdtempSync(join(tmpdir(), 'aios-cluster-'));
  const dbUrl = server.createDatabase(`bench_fleet${process.pid}_${++dbSeq}`);
  const runtime = 'rt_' + randomBytes(12).toString('hex');
  const devices = Array.from({ length: n }, (_, i) => ({ token: `dt_${i}_${randomBytes(12).toString('hex')}`, device_id: `dev_${String(i).padStart(6, '0')}` }));
  const nodes = new Nodes(dir, dbUrl, NODE_IDS, sharedConfig(runtime, devices, CLUSTER_IDS), n + 1024);
  let fleet: Fleet | undefined;
  const stop = async () => {
    await fleet?.stop();
    await nodes.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    say(`starting three nodes with ${n} device tokens`);
    await nodes.startAll();
    await sleep(BRIDGE_REST_MS);
    const idle = nodes.ids.map((_, i) => rssKb(nodes.pid(i)));
    fleet = startFleet({ url: nodes.wsUrl(0), urls: nodes.ids.map((_, i) => nodes.wsUrl(i)), devices, ...CLUSTER_IDS, workers: o.workers, concurrency: o.connectConcurrency, say });
    say(`signing ${n} Adapter Cards in ${fleet.workers.length} worker processes`);
    await fleet.signed();
    const first = await fleet.waitAll('connect', 0, Math.max(120_000, n * 60));
    if (first.at === null) throw new Error(`only ${first.n} of ${n} devices connected`);
    // Each hello is followed by the node reading the device's functions: let that finish before measuring.
    await sleep(Math.max(BRIDGE_REST_MS, Math.min(10_000, 2000 + n / 2)));
    const mem = memory(nodes, idle, (await fleet.count(0)).byUrl);
    say(`connected; per node: ${mem.map((m) => `${m.node_id} ${m.devices} devices, ${(m.bytes_per_device / 1000).toFixed(1)} kB each`).join('; ')}`);
    return { nodes, fleet, mem, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** The loss part: SIGKILL node_a; until every device it held is on a survivor. */
async function measureLoss(server: PrivatePostgres, o: ClusterOptions, say: (l: string) => void): Promise<NonNullable<ClusterReport['loss']>> {
  const { nodes, fleet, mem, stop } = await connectedCluster(server, o.lossDevices, o, say);
  try {
    const victim = 0;
    const held = mem[victim]!.devices;
    const survivors = [1, 2];
    const cpu0 = survivors.reduce((s, i) => s + cpuMs(nodes.pid(i)), 0);
    say(`SIGKILL ${nodes.ids[victim]} (${held} devices)`);
    await nodes.kill(victim);
    const killedAt = Date.now();
    const back = await fleet.waitAll('node loss', killedAt, o.backLimitMs ?? 120_000, nodes.wsUrl(victim));
    const cpu = survivors.reduce((s, i) => s + cpuMs(nodes.pid(i)), 0) - cpu0;
    return {
      devices: o.lossDevices,
      memory: mem,
      victim: nodes.ids[victim]!,
      victim_devices: held,
      back_ms: back.at === null ? null : back.at - killedAt,
      back: back.n,
      survivors_cpu_ms_per_hello: cpu / Math.max(1, held),
    };
  } finally {
    await stop();
  }
}

/** The restart part: SIGKILL every node, start them again on their ports; until every device is back. */
async function measureRestart(server: PrivatePostgres, o: ClusterOptions, say: (l: string) => void): Promise<NonNullable<ClusterReport['restart']>> {
  const n = o.restartDevices;
  const { nodes, fleet, mem, stop } = await connectedCluster(server, n, o, say);
  try {
    say('SIGKILL every node, then start them again on their ports');
    await Promise.all(nodes.ids.map((_, i) => nodes.kill(i)));
    const killedAt = Date.now();
    // Started together, as after a power cut; each waits for its previous process's row to lapse.
    await Promise.all(nodes.ids.map((_, i) => nodes.start(i)));
    const readyAt = Date.now();
    say(`nodes ready ${readyAt - killedAt} ms after the kill`);
    const back = await fleet.waitAll('restart', killedAt, o.backLimitMs ?? 120_000);
    const cpu = nodes.ids.reduce((s, _, i) => s + cpuMs(nodes.pid(i)), 0);
    return {
      devices: n,
      memory: mem,
      nodes_ready_ms: readyAt - killedAt,
      back_after_ready_ms: back.at === null ? null : back.at - readyAt,
      back_since_kill_ms: back.at === null ? null : back.at - killedAt,
      back: back.n,
      nodes_cpu_ms_per_hello: cpu / Math.max(1, back.n),
    };
  } finally {
    await stop();
  }
}

/** What the targets table reads from a run (bench/targets.ts, `CLUSTER_FIGURES`). */
export function clusterMeasured(r: Omit<ClusterReport, 'targets'>): Partial<Measured> {
  const m: Partial<Measured> = {};
  const [single, one, three] = r.calls?.paths ?? [];
  if (single && one && three) {
    Object.assign(m, {
      singleP50Us: single.p50_us,
      singleCallsPerS: single.calls_per_s,
      cluster1P50Us: one.p50_us,
      cluster1CallsPerS: one.calls_per_s,
      cluster3P50Us: three.p50_us,
      cluster3CallsPerS: three.calls_per_s,
    });
  }
  if (r.loss && r.loss.back_ms !== null) m.clusterNodeLossS = r.loss.back_ms / 1000;
  // The idle memory from the run with the most devices per node (the fixed costs weigh least there).
  const runs = [r.loss, r.restart].filter((x) => x !== undefined).sort((a, b) => b.devices - a.devices);
  const mem = runs[0]?.memory.filter((x) => Number.isFinite(x.bytes_per_device));
  if (mem?.length) m.clusterBytesPerDevicePerNode = Math.max(...mem.map((x) => x.bytes_per_device));
  return m;
}

/** Runs the parts asked for; starts and stops its own PostgreSQL. */
export async function runCluster(o: ClusterOptions): Promise<ClusterReport> {
  const say = o.progress ?? (() => undefined);
  const load0 = readLoad();
  say(`starting a private PostgreSQL (fsync ${o.pgFsync ? 'on' : 'off'}, synchronous_commit ${o.pgSyncCommit ? 'on' : 'off'})`);
  const server = await startPostgres({ settings: { fsync: o.pgFsync ? 'on' : 'off', synchronous_commit: o.pgSyncCommit ? 'on' : 'off', max_connections: '300' } });
  try {
    const r: Omit<ClusterReport, 'targets'> = {
      date: new Date().toISOString(),
      node: process.version,
      cpus: availableParallelism(),
      loadavg: load0,
      pg: { fsync: o.pgFsync, synchronous_commit: o.pgSyncCommit },
    };
    if (o.parts.includes('calls') || o.parts.includes('notify') || o.parts.includes('floor')) r.counts = o.counts;
    if (o.parts.includes('calls')) r.calls = await measureCalls(server, o.counts, say, o.profileDir, o.cpu);
    if (o.parts.includes('notify')) {
      const { plain, notify } = await measureNotify(server, o.counts, say);
      const extra = 1e6 / notify.throughput.callsPerS - 1e6 / plain.throughput.callsPerS;
      r.notify = {
        plain: { p50_us: plain.latency.p50Us, tx_per_s: plain.throughput.callsPerS },
        notify: { p50_us: notify.latency.p50Us, tx_per_s: notify.throughput.callsPerS },
        concurrency: o.counts.concurrency,
        serial_extra_us: extra,
      };
      const three = r.calls?.paths[2];
      if (three?.notifies_per_call !== undefined) {
        r.notify.per_call_us = three.notifies_per_call * extra;
        r.notify.share_of_call = r.notify.per_call_us / (1e6 / three.calls_per_s);
      }
    }
    if (o.parts.includes('floor')) {
      const f = await measureFloor(server, o.counts, say);
      const single = r.calls?.paths[0];
      const fig = (b: BenchResult): FloorFigures => ({
        p50_us: b.latency.p50Us,
        p99_us: b.latency.p99Us,
        calls_per_s: b.throughput.callsPerS,
        ...(single ? { p50_ratio_to_single: b.latency.p50Us / single.p50_us, throughput_ratio_to_single: b.throughput.callsPerS / single.calls_per_s } : {}),
      });
      r.floor = { concurrency: o.counts.concurrency, ops: fig(f.ops), least: fig(f.least) };
    }
    if (o.parts.includes('loss')) r.loss = await measureLoss(server, o, say);
    if (o.parts.includes('restart')) r.restart = await measureRestart(server, o, say);
    r.loadavg = `${load0} at the start, ${readLoad()} at the end`;
    return { ...r, targets: verdicts(clusterMeasured(r), CLUSTER_FIGURES) };
  } finally {
    server.stop();
  }
}

/** The machine's load averages (1, 5, 15 minutes), as `cat /proc/loadavg` shows them. */
function readLoad(): string {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return 'unknown';
  }
}

/** The report as text. */
export function formatCluster(r: ClusterReport): string {
  const us = (v: number) => (Number.isFinite(v) ? v.toFixed(0) : '–');
  const x = (v: number | undefined) => (v === undefined || !Number.isFinite(v) ? '–' : `${v.toFixed(2)}×`);
  const out = [`${r.date}  Node ${r.node}  ${r.cpus} CPUs  load ${r.loadavg}  PostgreSQL fsync ${r.pg.fsync ? 'on' : 'off'}, synchronous_commit ${r.pg.synchronous_commit ? 'on' : 'off'}`];
  if (r.calls && r.counts) {
    const c = r.counts;
    out.push('', `calls: ${c.rounds} interleaved rounds of ${c.latencyN} sequential calls and ${c.throughputN} calls ${c.concurrency} in flight (runtime HTTP → bridge → a real agent); medians`);
    for (const p of r.calls.paths) {
      out.push(`  ${p.name.padEnd(46)} p50 ${us(p.p50_us).padStart(6)} µs  p99 ${us(p.p99_us).padStart(6)} µs  ${p.calls_per_s.toFixed(0).padStart(6)} calls/s` +
        (p.p50_ratio !== undefined ? `   p50 ${x(p.p50_ratio)}  throughput ${x(p.throughput_ratio)}  NOTIFYs per call ${p.notifies_per_call?.toFixed(2) ?? '–'}` : ''));
    }
    const k = r.calls.cpu;
    if (k) out.push(`  CPU per call, cluster of 1 node (${k.calls} calls, ${k.calls_per_s.toFixed(0)} calls/s): PostgreSQL ${us(k.postgres_us)} µs, node ${us(k.node_us)} µs, agent ${us(k.agent_us)} µs, runtime (this process) ${us(k.runtime_us)} µs`);
  }
  if (r.notify) {
    const n = r.notify;
    out.push('', `NOTIFY and the commit (same transaction, a listener present; p50 one in flight, throughput ${n.concurrency} in flight):`);
    out.push(`  INSERT, COMMIT               p50 ${us(n.plain.p50_us).padStart(6)} µs  ${n.plain.tx_per_s.toFixed(0).padStart(6)} commits/s`);
    out.push(`  INSERT, pg_notify, COMMIT    p50 ${us(n.notify.p50_us).padStart(6)} µs  ${n.notify.tx_per_s.toFixed(0).padStart(6)} commits/s`);
    out.push(`  a notifying commit holds the others ${us(n.serial_extra_us)} µs longer` +
      (n.per_call_us !== undefined ? `; × the three-node call's NOTIFYs = ${us(n.per_call_us)} µs per call, ${((n.share_of_call ?? 0) * 100).toFixed(0)} % of its time at its throughput` : ''));
  }
  if (r.floor) {
    const f = r.floor;
    const line = (name: string, y: FloorFigures) => `  ${name.padEnd(46)} p50 ${us(y.p50_us).padStart(6)} µs  p99 ${us(y.p99_us).padStart(6)} µs  ${y.calls_per_s.toFixed(0).padStart(6)} calls/s` +
      (y.p50_ratio_to_single !== undefined ? `   against the single process: p50 ${x(y.p50_ratio_to_single)}  throughput ${x(y.throughput_ratio_to_single)}` : '');
    out.push('', `PostgreSQL's floor under a clustered call (nothing but its store operations; throughput ${f.concurrency} in flight):`);
    out.push(line('a node\'s: target, submit, owner read, outcome, waiter read', f.ops));
    out.push(line('the least: two commits, two NOTIFYs, no reads', f.least));
  }
  const memLine = (m: NodeMemory[]) => m.map((y) => `${y.node_id} ${y.devices} devices ${(y.bytes_per_device / 1000).toFixed(1)} kB each (RSS ${y.idle_rss_kb} → ${y.loaded_rss_kb} kB)`).join('; ');
  if (r.loss) {
    const l = r.loss;
    out.push('', `node loss: ${l.devices} simulated devices on three nodes; ${memLine(l.memory)}`);
    out.push(l.back_ms === null
      ? `  SIGKILL ${l.victim} (${l.victim_devices} devices): only ${l.back}/${l.devices} online with a live session within the limit`
      : `  SIGKILL ${l.victim} (${l.victim_devices} devices): all back on the survivors ${l.back_ms} ms after the kill; the survivors used ${l.survivors_cpu_ms_per_hello.toFixed(2)} ms of CPU per device moved`);
  }
  if (r.restart) {
    const s = r.restart;
    out.push('', `whole-cluster restart: ${s.devices} simulated devices on three nodes; ${memLine(s.memory)}`);
    out.push(`  every node SIGKILLed and started again: ready ${s.nodes_ready_ms} ms after the kill (a crashed node's id lapses first)`);
    out.push(s.back_after_ready_ms === null
      ? `  only ${s.back}/${s.devices} back within the limit`
      : `  all ${s.devices} back ${s.back_after_ready_ms} ms after the nodes were ready (${s.back_since_kill_ms} ms after the kill); the nodes used ${s.nodes_cpu_ms_per_hello.toFixed(2)} ms of CPU per hello (their start included)`);
  }
  out.push('', formatVerdicts(r.targets));
  return out.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      parts: { type: 'string', default: PARTS.join(',') },
      warmup: { type: 'string', default: '500' },
      latency: { type: 'string', default: '1000' },
      throughput: { type: 'string', default: '3000' },
      concurrency: { type: 'string', default: '32' },
      rounds: { type: 'string', default: '3' },
      'loss-devices': { type: 'string', default: '2000' },
      'restart-devices': { type: 'string', default: '10000' },
      workers: { type: 'string', default: '2' },
      'connect-concurrency': { type: 'string', default: '256' },
      'back-limit-ms': { type: 'string', default: '120000' },
      'pg-fsync': { type: 'string', default: 'on' },
      'pg-sync-commit': { type: 'string', default: 'on' },
      profile: { type: 'string' },
      cpu: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  const profileDir = values.profile ? resolve(values.profile) : undefined;
  if (profileDir) mkdirSync(profileDir, { recursive: true });
  const parts = values.parts.split(',').map((p) => p.trim()).filter(Boolean);
  for (const p of parts) if (!(PARTS as readonly string[]).includes(p)) throw new Error(`--parts: "${p}" is not one of ${PARTS.join(', ')}`);
  const onOff = (v: string, flag: string) => {
    if (v !== 'on' && v !== 'off') throw new Error(`--${flag} must be on or off`);
    return v === 'on';
  };
  const r = await runCluster({
    parts: parts as Part[],
    counts: { warmup: positiveInt(values.warmup, 'warmup'), latencyN: positiveInt(values.latency, 'latency'), throughputN: positiveInt(values.throughput, 'throughput'), concurrency: positiveInt(values.concurrency, 'concurrency'), rounds: positiveInt(values.rounds, 'rounds') },
    lossDevices: positiveInt(values['loss-devices'], 'loss-devices'),
    restartDevices: positiveInt(values['restart-devices'], 'restart-devices'),
    workers: positiveInt(values.workers, 'workers'),
    connectConcurrency: positiveInt(values['connect-concurrency'], 'connect-concurrency'),
    backLimitMs: positiveInt(values['back-limit-ms'], 'back-limit-ms'),
    pgFsync: onOff(values['pg-fsync'], 'pg-fsync'),
    pgSyncCommit: onOff(values['pg-sync-commit'], 'pg-sync-commit'),
    ...(profileDir ? { profileDir } : {}),
    cpu: values.cpu,
    progress: (l) => process.stderr.write(l + '\n'),
  });
  process.stdout.write((values.json ? JSON.stringify(r, null, 2) : formatCluster(r)) + '\n');
}

if (isMain(import.meta.url)) runMain('bench:cluster', main);
