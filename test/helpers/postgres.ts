/**
 * A private PostgreSQL 15 instance per test run (../shared/TESTING.md, "PostgreSQL: a private instance per
 * test run"): initdb as the `postgres` user into a mktemp folder, on a free loopback port, `fsync=off` (tests
 * only), stopped with `-m immediate` and removed afterwards. Never the system's cluster. A watchdog process
 * does the same if the test process dies without stopping it (SIGKILL, a runner's timeout).
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './net.js';

/**
 * Debian's PostgreSQL (scripts/install-test-deps.sh installs it): 15 on Debian 12, else the newest installed
 * (a newer Debian ships a newer major version under the same package name).
 */
export const PG_BIN = ((): string => {
  const root = '/usr/lib/postgresql';
  if (existsSync(join(root, '15', 'bin', 'initdb'))) return join(root, '15', 'bin');
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v) && existsSync(join(root, v, 'bin', 'initdb'))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  return join(root, newest ?? '15', 'bin');
})();

/** A running private instance. */
export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` */
  url: string;
  port: number;
  /**
   * A fresh empty database on this instance, and its URL (one per test keeps tests apart). It sorts text by
   * ICU's en-US collation, as production databases usually do (initdb here gets the C locale), so code that
   * relies on the C order is caught.
   */
  createDatabase(name: string): string;
  /** Stops the server as a crash would (`-m immediate`), keeping its data: every connection drops. */
  down(): void;
  /** Starts it again after `down()`, on the same port with the same data. */
  up(): void;
  /** Stops the instance (immediate) and removes its folder. */
  stop(): void;
}

/** The uid and gid of the `postgres` user (initdb refuses to run as root). */
function postgresUser(): { uid: number; gid: number } {
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

/** Runs a PostgreSQL tool as the `postgres` user, stdin and stdout not pipes (pg_ctl hangs on an open pipe). */
function asPostgres(tool: string, args: string[]): void {
  execFileSync('runuser', ['-u', 'postgres', '--', join(PG_BIN, tool), ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Options of {@link startPostgres}. */
export interface PostgresOptions {
  /**
   * Server settings (`-c name=value`), instead of the tests' `{ fsync: 'off' }` (e.g. the cluster benchmark
   * keeps PostgreSQL's durable defaults and raises `max_connections`).
   */
  settings?: Record<string, string>;
}

/** Starts a private instance; call `stop()` in `after`. */
export async function startPostgres(o: PostgresOptions = {}): Promise<PrivatePostgres> {
  const settings = Object.entries(o.settings ?? { fsync: 'off' }).map(([k, v]) => {
    // pg_ctl passes `-o` to the server split at spaces: plain names and values only.
    if (!/^[a-z_]+$/.test(k) || !/^[\w.]+$/.test(v)) throw new Error(`not a plain PostgreSQL setting: ${k}=${v}`);
    return `-c ${k}=${v}`;
  });
  const dir = mkdtempSync(join(tmpdir(), 'aios-pg-'));
  const { uid, gid } = postgresUser();
  chownSync(dir, uid, gid);
  chmodSync(dir, 0o700);
  const data = join(dir, 'data');
  const port = await freePort();
  const up = () => asPostgres('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-o', `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} ${settings.join(' ')}`, 'start']);
  try {
    asPostgres('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync']);
    up();
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  // The watchdog: once this process is gone (however it ended), stop the instance and remove its folder.
  // `tail --pid` waits for a process to end; the script's arguments are passed, never spliced into it.
  const watchdog = spawn('sh', ['-c', 'tail --pid="$1" -f /dev/null; runuser -u postgres -- "$2" -D "$3" -m immediate stop; rm -rf "$4"', 'watchdog', String(process.pid), join(PG_BIN, 'pg_ctl'), data, dir], {
    detached: true,
    stdio: 'ignore',
  });
  watchdog.unref();
  const base = `postgres://postgres@127.0.0.1:${port}`;
  let stopped = false;
  return {
    url: `${base}/postgres`,
    port,
    createDatabase(name) {
      if (!/^[a-z0-9_]{1,63}$/.test(name)) throw new Error(`not a plain database name: ${name}`);
      execFileSync(join(PG_BIN, 'createdb'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '--template=template0', '--locale-provider=icu', '--icu-locale=en-US', '--locale=C', name], { stdio: ['ignore', 'ignore', 'pipe'] });
      return `${base}/${name}`;
    },
    down() {
      asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']);
    },
    up,
    stop() {
      if (stopped) return;
      stopped = true;
      try {
        // Down already when a test failed between its `down()` and `up()`: nothing to stop.
        if (existsSync(join(data, 'postmaster.pid'))) asPostgres('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']);
      } finally {
        rmSync(dir, { recursive: true, force: true });
        watchdog.kill();
      }
    },
  };
}

/** A PgBouncer in front of a private instance: one database `name` reachable in transaction and in session mode. */
export interface PrivatePgBouncer {
  /** The database through a transaction-mode pool (a server connection per transaction, then given to others). */
  transactionUrl: string;
  /** The database through a session-mode pool (a server connection per client for its whole session). */
  sessionUrl: string;
  stop(): void;
}

/** Debian's PgBouncer (scripts/install-test-deps.sh installs it). */
export const PGBOUNCER_BIN = '/usr/sbin/pgbouncer';

/**
 * Starts PgBouncer (as the `postgres` user: it refuses to run as root) on a free loopback port in front of
 * database `name` of `server`, with aliases `<name>_tx` (pool_mode=transaction) and `<name>_session`. A
 * watchdog stops it if this process dies first. Call `stop()` in `after`.
 */
export async function startPgBouncer(server: PrivatePostgres, name: string): Promise<PrivatePgBouncer> {
  const dir = mkdtempSync(join(tmpdir(), 'aios-pgbouncer-'));
  const { uid, gid } = postgresUser();
  chownSync(dir, uid, gid);
  const port = await freePort();
  const target = `host=127.0.0.1 port=${server.port} dbname=${name} user=postgres`;
  const ini = join(dir, 'pgbouncer.ini');
  writeFileSync(ini, [
    '[databases]',
    `${name}_tx = ${target} pool_mode=transaction`,
    `${name}_session = ${target} pool_mode=session`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = any',
    `logfile = ${join(dir, 'log')}`,
    'default_pool_size = 4',
    '',
  ].join('\n'));
  chownSync(ini, uid, gid);
  const child = spawn(PGBOUNCER_BIN, [ini], { uid, gid, stdio: 'ignore' });
  const watchdog = spawn('sh', ['-c', 'tail --pid="$1" -f /dev/null; kill "$2"; rm -rf "$3"', 'watchdog', String(process.pid), String(child.pid), dir], { detached: true, stdio: 'ignore' });
  watchdog.unref();
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  // Ready once it accepts connections (or failed: it exited).
  for (;;) {
    const ready = await Promise.race([connects(port), exited.then(() => 'exited' as const)]);
    if (ready === 'exited') throw new Error(`pgbouncer exited at start (log: ${join(dir, 'log')})`);
    if (ready) break;
    await new Promise((r) => setTimeout(r, 20)); // a poll interval, not a wait for time to pass
  }
  const base = `postgres://postgres@127.0.0.1:${port}`;
  return {
    transactionUrl: `${base}/${name}_tx`,
    sessionUrl: `${base}/${name}_session`,
    stop() {
      child.kill();
      watchdog.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Whether something accepts a TCP connection on loopback `port` now. */
function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
