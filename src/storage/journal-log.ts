/**
 * The journal's group-committed log (`<journal>.log`): one JSON line per write, appended with one
 * `write()` per group (plus `fdatasync` at `synchronous: full`); a write's promise resolves only once its
 * line is in the file. Writes made in the same event-loop turn (or, for a call alone, the same task)
 * form one group, batched by a `GroupCommit` (`src/storage/group-commit.ts`). It knows nothing of the table: the journal (`journal.ts`) applies each write to its
 * rows once logged, and empties the log once the table holds them.
 *
 * Why not a SQLite commit per group: one commit of one small row costs 25–55 µs here, a `write()` of the
 * same bytes about 2 µs; a call needs two durable writes (accept, outcome). See docs/performance.md.
 */
import { closeSync, fdatasyncSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import type { CallState, Outcome } from '../protocol/messages.js';
import { GroupCommit } from './group-commit.js';

/**
 * A log record, one JSON array per line. Each log starts with `["h", workspace_id, device_id]`, the
 * identity its rows belong to. Then: `["a", id, fn, digest, state, accepted_at, started_at, ms]` accept ·
 * `["t", id, outcome, ms]` tombstone · `["s", id, state, started_at, ms]` state ·
 * `["f", id, outcome, finished_at, delivered, ms]` outcome · `["d", [id…], delivered, ms]` delivery.
 */
export type LogRecord =
  | ['a', string, string, string, CallState, string | null, string | null, number]
  | ['t', string, Outcome, number]
  | ['s', string, CallState, string | null, number]
  | ['f', string, Outcome, string, 0 | 1, number]
  | ['d', string[], 0 | 1, number];

/** The header line's record: the identity the records after it belong to. */
export type HeaderRecord = ['h', string, string];

/**
 * One line of the log: a string, or its parts in order (a finished call's line is given as three, so that
 * the outcome's JSON, made once by the dispatcher, is written as it is and never copied into a longer string).
 */
export type LogLine = string | readonly string[];

interface Op {
  line: LogLine;
  /** Applies the write to the journal's rows once its line is in the log. */
  apply(): void;
}

/** The most lines one `write()` carries (a bound on the group's buffer); a larger group is written in several. */
const MAX_GROUP = 4096;

/** The append-only log of one journal. */
export class JournalLog {
  private readonly fd: number;
  private closed = false;
  /** The log is empty: its next write starts with the header line naming the identity. */
  private needHeader = true;
  private readonly out = new GroupBuffer();
  private readonly group: GroupCommit<Op>;
  /**
   * True while several calls are in flight: writes then wait for the end of the event-loop turn, so one
   * `write()` serves them all. Alone, a write is logged at the end of the current task (lowest latency).
   */
  batchHint: () => boolean = () => false;
  /** Told when a group is taken for writing (before its write), so queued-only state can be dropped. */
  onGroupTaken: () => void = () => undefined;
  /** Told after a group was written and applied. */
  onGroupWritten: () => void = () => undefined;

  /** Opens (creating, 0600) `path`; `header` is the identity its writes belong to. */
  constructor(
    readonly path: string,
    private readonly header: { workspaceId: string; deviceId: string },
    private readonly fsync: boolean,
  ) {
    this.fd = openSync(path, 'a+', 0o600);
    this.group = new GroupCommit<Op>({
      commit: (ops) => this.writeGroup(ops),
      timing: () => (this.batchHint() ? 'turn' : 'task'),
      maxBatch: MAX_GROUP,
      applied: (op) => op.apply(),
      onTaken: () => this.onGroupTaken(),
      onWritten: () => this.onGroupWritten(),
      closedError: () => new Error('the journal is closed'),
    });
  }

  /** Queues one line; resolves once it is in the log and `apply` has run. */
  append(line: LogLine, apply: () => void): Promise<void> {
    return this.group.write({ line, apply });
  }

  /** Writes the queued group now (a failed write was told to its writers). */
  flush(): void {
    try {
      this.group.flush();
    } catch {
      // Each write of the failed group has its promise rejected with the error.
    }
  }

  /** One group's lines in one `write()` (and `fdatasync`); throws when they are not all in the file. */
  private writeGroup(ops: readonly Op[]): void {
    // Each line is written into one reused buffer: no string of the whole group is made (joining them
    // copied every outcome's JSON once more per call).
    let n = this.needHeader ? this.out.put(JSON.stringify(['h', this.header.workspaceId, this.header.deviceId]) + '\n', 0) : 0;
    for (const op of ops) {
      if (typeof op.line === 'string') n = this.out.put(op.line, n);
      else for (const part of op.line) n = this.out.put(part, n);
      n = this.out.put('\n', n);
    }
    try {
      this.out.writeTo(this.fd, n);
      if (this.fsync) fdatasyncSync(this.fd);
    } finally {
      this.out.release();
    }
    this.needHeader = false;
  }

  /** Empties the log: only once the table holds every row it carries. */
  truncate(): void {
    ftruncateSync(this.fd, 0);
    this.needHeader = true;
  }

  /**
   * The records a previous run left (it stopped without emptying the log), in order. A last line
   * without its newline was cut short by a crash during its write: it was never acknowledged, so it is
   * dropped, as is everything from the first line that does not parse.
   */
  readAll(): (LogRecord | HeaderRecord)[] {
    const text = readFileSync(this.path, 'utf8');
    const out: (LogRecord | HeaderRecord)[] = [];
    let start = 0;
    for (;;) {
      const end = text.indexOf('\n', start);
      if (end < 0) break;
      const line = text.slice(start, end);
      start = end + 1;
      let rec: unknown;
      try {
        rec = JSON.parse(line);
      } catch {
        break;
      }
      if (Array.isArray(rec)) out.push(rec as LogRecord | HeaderRecord);
    }
    return out;
  }

  /** Writes what is queued, then closes the file; later writes are refused. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.group.close();
    } catch {
      // Told to the writers of the failed group.
    } finally {
      closeSync(this.fd);
    }
  }
}

/** The bytes of one group, in a buffer kept between groups (grown as needed; a large one is let go after its write). */
class GroupBuffer {
  private static readonly KEEP = 256 * 1024;
  private buf = Buffer.allocUnsafe(16 * 1024);

  /** Writes `text` at `at` as UTF-8; returns where it ends. */
  put(text: string, at: number): number {
    const size = Buffer.byteLength(text);
    if (at + size > this.buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(2 * this.buf.length, at + size));
      this.buf.copy(bigger, 0, 0, at);
      this.buf = bigger;
    }
    return at + this.buf.write(text, at);
  }

  /** Writes the first `size` bytes to `fd` (a short write is continued, never left half-done). */
  writeTo(fd: number, size: number): void {
    let off = 0;
    while (off < size) off += writeSync(fd, this.buf, off, size - off);
  }

  /** After a group: a buffer grown past KEEP is not kept. */
  release(): void {
    if (this.buf.length > GroupBuffer.KEEP) this.buf = Buffer.allocUnsafe(16 * 1024);
  }
}
