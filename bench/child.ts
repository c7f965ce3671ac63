/**
 * Benchmark child processes: each peer under test (the agent, the MCP server, the echo server, the
 * bridge) runs in its own Node process, so that no side gets the driver's event loop for free.
 * A child prints one line `READY <json>` on stdout when it is up and exits cleanly on SIGTERM, or when
 * its stdin (a pipe only the driver holds) closes: a driver killed outright (Ctrl-C, SIGKILL) leaves no
 * bridge or agent behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fstatSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** A running child and its READY payload. */
export interface BenchChild<T> {
  proc: ChildProcess;
  info: T;
  /** SIGTERM, then waits for the exit (SIGKILL after 10 s). */
  stop(): Promise<void>;
}

/** Node flags that load TypeScript sources through tsx. */
export const TSX = ['--import', 'tsx'];

/**
 * The loader flags a bench module needs: none for compiled JavaScript (`npm run bench` runs from
 * `dist/`, as the product ships), tsx for a `.ts` source (the smoke test).
 */
export function loaderFor(file: string): string[] {
  return file.endsWith('.ts') ? TSX : [];
}

/** The path of a sibling bench module, with this build's extension (`.ts` from source, `.js` from dist). */
export function benchFile(name: string): string {
  const ext = import.meta.url.endsWith('.js') ? '.js' : '.ts';
  return fileURLToPath(new URL(`./${name}${ext}`, import.meta.url));
}

/**
 * Starts `node [nodeArgs] [--import tsx] file ...args` and resolves once it prints READY. `env` is added
 * to this process's environment for the child.
 */
export function startChild<T>(file: string, args: string[] = [], nodeArgs: string[] = [], env: Record<string, string> = {}): Promise<BenchChild<T>> {
  // stdin: a pipe nothing is written to; it closes when this process dies, however it dies.
  const proc = spawn(process.execPath, [...nodeArgs, ...loaderFor(file), file, ...args], { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: proc.stdout! });
    const fail = (code: number | null) => reject(new Error(`${file} exited (${code}) before it was ready`));
    proc.once('exit', fail);
    lines.on('line', (line) => {
      if (!line.startsWith('READY ')) return;
      proc.off('exit', fail);
      resolve({
        proc,
        info: JSON.parse(line.slice(6)) as T,
        async stop() {
          if (proc.exitCode !== null || proc.signalCode !== null) return;
          const kill = setTimeout(() => proc.kill('SIGKILL'), 10_000);
          proc.kill('SIGTERM');
          await exited;
          clearTimeout(kill);
        },
      });
    });
  });
}

/** In a child: announce readiness to the parent. */
export function announceReady(info: unknown): void {
  process.stdout.write(`READY ${JSON.stringify(info)}\n`);
}

/**
 * In a child: run `stop` on SIGTERM/SIGINT, or when stdin ends (the driver that started it is gone),
 * then exit 0 (so `--cpu-prof` writes its profile).
 */
export function exitOnSignal(stop: () => Promise<void> | void): void {
  let stopping = false;
  const handler = () => {
    if (stopping) return;
    stopping = true;
    void Promise.resolve()
      .then(stop)
      .catch((e: unknown) => process.stderr.write(`stop failed: ${String(e)}\n`))
      .finally(() => process.exit(0));
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  // Only a child whose stdin is startChild's pipe watches it (a terminal or /dev/null is not a driver).
  if (!process.stdin.isTTY && isPipe(0)) {
    process.stdin.once('end', handler);
    process.stdin.resume();
  }
}

/** True when file descriptor `fd` is a pipe (FIFO). */
function isPipe(fd: number): boolean {
  try {
    return fstatSync(fd).isFIFO();
  } catch {
    return false;
  }
}

/** True when the module at `url` (its `import.meta.url`) is the script node was started with. */
export function isMain(url: string): boolean {
  return process.argv[1] !== undefined && url === pathToFileURL(process.argv[1]).href;
}

/** Runs a bench command: its error goes to stderr as `<name>: message`, and the exit code is 1. */
export function runMain(name: string, main: () => Promise<void>): void {
  main().catch((e: unknown) => {
    process.stderr.write(`${name}: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}

/** A command-line count: a positive integer, or a clear error naming the flag. */
export function positiveInt(text: string, flag: string): number {
  const n = Number.parseInt(text, 10);
  if (!Number.isFinite(n) || n < 1) throw new Error(`--${flag} must be a positive integer`);
  return n;
}
