/**
 * The bridge's login tables (all prefixed `oauth_`): users and their workspaces (mirrored from the
 * bridge config), pending device codes, approved devices with their pinned public keys, tokens
 * (SHA-256 hashes only, never the tokens themselves) and approval-page sessions.
 */
import type { Database } from 'better-sqlite3';
import { statement } from '../../storage/sqlite.js';
import { migrate, type Migration, type Schema } from '../../storage/migrations.js';

/**
 * Numbered schema migrations; append new ones, never edit an applied one (each has its test in
 * test/login/oauth-migrations.test.ts, on a database that holds rows).
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'users, memberships, device codes, devices, tokens and approval-page sessions',
    up: (db) => db.exec(`
      CREATE TABLE oauth_users (
        id TEXT PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        password_hash TEXT NOT NULL
      );
      CREATE TABLE oauth_memberships (
        user_id TEXT NOT NULL REFERENCES oauth_users(id) ON DELETE CASCADE,
        workspace_id TEXT NOT NULL,
        PRIMARY KEY (user_id, workspace_id)
      );
      CREATE TABLE oauth_device_codes (
        device_code_hash TEXT PRIMARY KEY,
        user_code TEXT NOT NULL UNIQUE,
        client_id TEXT NOT NULL,
        device_id TEXT NOT NULL,
        device_name TEXT NOT NULL,
        platform TEXT NOT NULL,
        client_version TEXT NOT NULL,
        public_jwk TEXT NOT NULL,
        jwk_thumbprint TEXT NOT NULL,
        scope TEXT,
        status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'consumed')),
        interval_s INTEGER NOT NULL,
        last_poll_at INTEGER,
        expires_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        user_id TEXT,
        workspace_id TEXT
      );
      CREATE TABLE oauth_devices (
        id TEXT PRIMARY KEY,
        user_id TEXT NOT NULL,
        workspace_id TEXT NOT NULL,
        name TEXT NOT NULL,
        platform TEXT NOT NULL,
        client_version TEXT NOT NULL,
        public_jwk TEXT NOT NULL,
        jwk_thumbprint TEXT NOT NULL,
        approved_at INTEGER NOT NULL,
        revoked_at INTEGER,
        last_seen_at INTEGER
      );
      CREATE INDEX oauth_devices_workspace ON oauth_devices(workspace_id);
      CREATE TABLE oauth_tokens (
        token_hash TEXT PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
        device_id TEXT NOT NULL REFERENCES oauth_devices(id),
        family_id TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        created_at INTEGER NOT NULL,
        used_at INTEGER,
        revoked_at INTEGER
      );
      CREATE INDEX oauth_tokens_device ON oauth_tokens(device_id);
      CREATE INDEX oauth_tokens_family ON oauth_tokens(family_id);
      CREATE TABLE oauth_web_sessions (
        id_hash TEXT PRIMARY KEY,
        csrf TEXT NOT NULL,
        user_id TEXT,
        expires_at INTEGER NOT NULL
      );
    `),
  },
  {
    version: 2,
    name: 'the schema version lives in user_version, like every other database: drop oauth_migrations',
    // Databases migrated before the shared runner kept their versions in this table (see legacyVersion).
    up: (db) => db.exec('DROP TABLE IF EXISTS oauth_migrations'),
  },
];

/**
 * The login store's schema. Its database is its own file (`oauth.sqlite`): the version is the file's
 * `user_version`, which a second schema in the same file would contend for.
 */
export const OAUTH_SCHEMA: Schema = {
  name: 'bridge login',
  migrations: MIGRATIONS,
  // Before the shared runner this store recorded its applied migrations in `oauth_migrations`.
  legacyVersion(db) {
    const has = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'oauth_migrations'`).get();
    return has ? ((db.prepare('SELECT max(version) FROM oauth_migrations').pluck().get() as number | null) ?? 0) : 0;
  },
};

/** Brings a login database to this build's schema (see OAUTH_SCHEMA). */
export function migrateOAuth(db: Database, opts: { upTo?: number } = {}): number[] {
  return migrate(db, OAUTH_SCHEMA, opts);
}

/** A bridge user as the config declares it. */
export interface ConfigUser {
  id: string;
  /** Sign-in name; defaults to the id. */
  name?: string | undefined;
  password_hash: string;
  workspaces: string[];
}

/** A pending or decided device authorization request. */
export interface DeviceCodeRow {
  device_code_hash: string;
  user_code: string;
  client_id: string;
  device_id: string;
  device_name: string;
  platform: string;
  client_version: string;
  public_jwk: string;
  jwk_thumbprint: string;
  scope: string | null;
  status: 'pending' | 'approved' | 'denied' | 'consumed';
  interval_s: number;
  last_poll_at: number | null;
  expires_at: number;
  created_at: number;
  user_id: string | null;
  workspace_id: string | null;
}

/** An approved device and its pinned key. */
export interface DeviceRow {
  id: string;
  user_id: string;
  workspace_id: string;
  name: string;
  platform: string;
  client_version: string;
  public_jwk: string;
  jwk_thumbprint: string;
  approved_at: number;
  revoked_at: number | null;
  last_seen_at: number | null;
}

/** A stored token (by hash). */
export interface TokenRow {
  token_hash: string;
  kind: 'access' | 'refresh';
  device_id: string;
  family_id: string;
  expires_at: number;
  created_at: number;
  used_at: number | null;
  revoked_at: number | null;
}

/** An approval-page session (anonymous until sign-in). */
export interface WebSessionRow {
  id_hash: string;
  csrf: string;
  user_id: string | null;
  expires_at: number;
}

/** Typed access to the `oauth_` tables. */
export class OAuthStore {
  constructor(readonly db: Database) {
    migrateOAuth(db);
  }

  /** Replaces the users and memberships with the config's; devices of removed users stop authenticating. */
  syncUsers(users: readonly ConfigUser[]): void {
    this.db.transaction(() => {
      statement(this.db, 'DELETE FROM oauth_memberships').run();
      statement(this.db, 'DELETE FROM oauth_users').run();
      const u = statement(this.db, 'INSERT INTO oauth_users (id, name, password_hash) VALUES (?, ?, ?)');
      const m = statement(this.db, 'INSERT OR IGNORE INTO oauth_memberships (user_id, workspace_id) VALUES (?, ?)');
      for (const user of users) {
        u.run(user.id, user.name ?? user.id, user.password_hash);
        for (const ws of user.workspaces) m.run(user.id, ws);
      }
    })();
  }

  /** A user by sign-in name. */
  userByName(name: string): { id: string; name: string; password_hash: string } | undefined {
    return statement(this.db, 'SELECT id, name, password_hash FROM oauth_users WHERE name = ?').get(name) as
      | { id: string; name: string; password_hash: string }
      | undefined;
  }

  /** A user's display name by id. */
  userName(id: string): string | undefined {
    return statement(this.db, 'SELECT name FROM oauth_users WHERE id = ?').pluck().get(id) as string | undefined;
  }

  /** The workspaces a user belongs to, sorted. */
  workspacesOf(userId: string): string[] {
    return statement(this.db, 'SELECT workspace_id FROM oauth_memberships WHERE user_id = ? ORDER BY workspace_id').pluck().all(userId) as string[];
  }

  /** True when the user is (still) a member of the workspace. */
  isMember(userId: string, workspaceId: string): boolean {
    return statement(this.db, 'SELECT 1 FROM oauth_memberships WHERE user_id = ? AND workspace_id = ?').get(userId, workspaceId) !== undefined;
  }

  /** Stores a new device code; false (nothing stored) when its user code is taken. */
  insertDeviceCode(row: DeviceCodeRow): boolean {
    return this.db
      .prepare(
        `INSERT INTO oauth_device_codes (device_code_hash, user_code, client_id, device_id, device_name, platform,
           client_version, public_jwk, jwk_thumbprint, scope, status, interval_s, last_poll_at, expires_at, created_at,
           user_id, workspace_id)
         VALUES (@device_code_hash, @user_code, @client_id, @device_id, @device_name, @platform, @client_version,
           @public_jwk, @jwk_thumbprint, @scope, @status, @interval_s, @last_poll_at, @expires_at, @created_at,
           @user_id, @workspace_id)
         ON CONFLICT DO NOTHING`,
      )
      .run(row).changes === 1;
  }

  /** A device code by the hash of its `device_code`. */
  deviceCodeByHash(hash: string): DeviceCodeRow | undefined {
    return statement(this.db, 'SELECT * FROM oauth_device_codes WHERE device_code_hash = ?').get(hash) as DeviceCodeRow | undefined;
  }

  /** A device code by its (normalised) user code. */
  deviceCodeByUserCode(userCode: string): DeviceCodeRow | undefined {
    return statement(this.db, 'SELECT * FROM oauth_device_codes WHERE user_code = ?').get(userCode) as DeviceCodeRow | undefined;
  }

  /** Records a poll and the (possibly raised) interval. */
  notePoll(hash: string, at: number, intervalS: number): void {
    statement(this.db, 'UPDATE oauth_device_codes SET last_poll_at = ?, interval_s = ? WHERE device_code_hash = ?').run(at, intervalS, hash);
  }

  /** Moves a pending code to a decided state; false when it was no longer pending. */
  decideDeviceCode(hash: string, status: 'approved' | 'denied', userId: string, workspaceId: string | null): boolean {
    return (
      this.db
        .prepare(`UPDATE oauth_device_codes SET status = ?, user_id = ?, workspace_id = ? WHERE device_code_hash = ? AND status = 'pending'`)
        .run(status, userId, workspaceId, hash).changes === 1
    );
  }

  /** Marks an approved code as exchanged for tokens; false if someone else already did. */
  consumeDeviceCode(hash: string): boolean {
    return statement(this.db, `UPDATE oauth_device_codes SET status = 'consumed' WHERE device_code_hash = ? AND status = 'approved'`).run(hash).changes === 1;
  }

  /** Drops codes that expired more than a day ago, so the table does not grow without bound. */
  pruneDeviceCodes(now: number): void {
    statement(this.db, 'DELETE FROM oauth_device_codes WHERE expires_at < ?').run(now - 86_400_000);
  }

  /** A device by id. */
  device(id: string): DeviceRow | undefined {
    return statement(this.db, 'SELECT * FROM oauth_devices WHERE id = ?').get(id) as DeviceRow | undefined;
  }

  /** Devices of a workspace (or all), newest approval first. */
  devices(workspaceId?: string): DeviceRow[] {
    return (
      workspaceId === undefined
        ? statement(this.db, 'SELECT * FROM oauth_devices ORDER BY approved_at DESC, id').all()
        : statement(this.db, 'SELECT * FROM oauth_devices WHERE workspace_id = ? ORDER BY approved_at DESC, id').all(workspaceId)
    ) as DeviceRow[];
  }

  /** Devices a user approved, newest first. */
  devicesOfUser(userId: string): DeviceRow[] {
    return statement(this.db, 'SELECT * FROM oauth_devices WHERE user_id = ? ORDER BY approved_at DESC, id').all(userId) as DeviceRow[];
  }

  /** Inserts or re-registers a device (a re-registration clears an earlier revocation). */
  upsertDevice(row: DeviceRow): void {
    this.db
      .prepare(
        `INSERT INTO oauth_devices (id, user_id, workspace_id, name, platform, client_version, public_jwk, jwk_thumbprint,
           approved_at, revoked_at, last_seen_at)
         VALUES (@id, @user_id, @workspace_id, @name, @platform, @client_version, @public_jwk, @jwk_thumbprint,
           @approved_at, @revoked_at, @last_seen_at)
         ON CONFLICT(id) DO UPDATE SET user_id = excluded.user_id, workspace_id = excluded.workspace_id,
           name = excluded.name, platform = excluded.platform, client_version = excluded.client_version,
           public_jwk = excluded.public_jwk, jwk_thumbprint = excluded.jwk_thumbprint,
           approved_at = excluded.approved_at, revoked_at = NULL`,
      )
      .run(row);
  }

  /** Marks a device revoked; false when it was unknown or already revoked. */
  revokeDevice(id: string, at: number): boolean {
    return statement(this.db, 'UPDATE oauth_devices SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(at, id).changes === 1;
  }

  /** Records when a device last authenticated and which client version it reported. */
  touchDevice(id: string, at: number, clientVersion?: string): void {
    if (clientVersion === undefined) statement(this.db, 'UPDATE oauth_devices SET last_seen_at = ? WHERE id = ?').run(at, id);
    else statement(this.db, 'UPDATE oauth_devices SET last_seen_at = ?, client_version = ? WHERE id = ?').run(at, clientVersion, id);
  }

  /** Stores a token hash. */
  insertToken(row: TokenRow): void {
    this.db
      .prepare(
        `INSERT INTO oauth_tokens (token_hash, kind, device_id, family_id, expires_at, created_at, used_at, revoked_at)
         VALUES (@token_hash, @kind, @device_id, @family_id, @expires_at, @created_at, @used_at, @revoked_at)`,
      )
      .run(row);
  }

  /** A token by hash. */
  token(hash: string): TokenRow | undefined {
    return statement(this.db, 'SELECT * FROM oauth_tokens WHERE token_hash = ?').get(hash) as TokenRow | undefined;
  }

  /** Marks a refresh token as used (rotated); false when it already was. */
  markTokenUsed(hash: string, at: number): boolean {
    return statement(this.db, 'UPDATE oauth_tokens SET used_at = ? WHERE token_hash = ? AND used_at IS NULL').run(at, hash).changes === 1;
  }

  /** Revokes every live token of one family (one login's chain of rotations). */
  revokeFamily(familyId: string, at: number): number {
    return statement(this.db, 'UPDATE oauth_tokens SET revoked_at = ? WHERE family_id = ? AND revoked_at IS NULL').run(at, familyId).changes;
  }

  /** Revokes every live token of a device. */
  revokeDeviceTokens(deviceId: string, at: number): number {
    return statement(this.db, 'UPDATE oauth_tokens SET revoked_at = ? WHERE device_id = ? AND revoked_at IS NULL').run(at, deviceId).changes;
  }

  /** Deletes tokens that expired more than a day ago. */
  pruneTokens(now: number): void {
    statement(this.db, 'DELETE FROM oauth_tokens WHERE expires_at < ?').run(now - 86_400_000);
  }

  /** Creates an approval-page session. */
  insertWebSession(row: WebSessionRow): void {
    statement(this.db, 'INSERT INTO oauth_web_sessions (id_hash, csrf, user_id, expires_at) VALUES (@id_hash, @csrf, @user_id, @expires_at)').run(row);
  }

  /** An approval-page session by the hash of its cookie value. */
  webSession(idHash: string): WebSessionRow | undefined {
    return statement(this.db, 'SELECT * FROM oauth_web_sessions WHERE id_hash = ?').get(idHash) as WebSessionRow | undefined;
  }

  /** Deletes one approval-page session. */
  deleteWebSession(idHash: string): void {
    statement(this.db, 'DELETE FROM oauth_web_sessions WHERE id_hash = ?').run(idHash);
  }

  /** Pending device codes that have not expired (the rows a flood of authorization requests would add). */
  countLiveDeviceCodes(now: number): number {
    return statement(this.db, `SELECT COUNT(*) FROM oauth_device_codes WHERE status = 'pending' AND expires_at > ?`).pluck().get(now) as number;
  }

  /** Keeps at most `keep` anonymous (not signed-in) page sessions, dropping the oldest; signed-in ones stay. */
  capAnonymousSessions(keep: number): void {
    statement(this.db, `DELETE FROM oauth_web_sessions WHERE user_id IS NULL AND id_hash NOT IN (SELECT id_hash FROM oauth_web_sessions WHERE user_id IS NULL ORDER BY expires_at DESC LIMIT ?)`).run(keep);
  }

  /** Deletes expired approval-page sessions. */
  pruneWebSessions(now: number): void {
    statement(this.db, 'DELETE FROM oauth_web_sessions WHERE expires_at < ?').run(now);
  }
}
