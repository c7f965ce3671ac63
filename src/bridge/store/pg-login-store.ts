/**
 * The sign-in state of a clustered bridge on PostgreSQL (issue 34, migration 0009): the `LoginStore` the single
 * process keeps in `oauth.sqlite`, shared by every node, so a sign-in started on node A is approved on node B,
 * its token is polled on node C, and a device's access token is checked on whichever node it connects to. Rows
 * read back in SQLite's shapes (bigint times as numbers). A failure to reach the database rejects with
 * `StoreUnavailableError` (503 `store_unavailable`).
 */
import type pg from 'pg';
import type { LoginStore, UserRow } from '../oauth/login-store.js';
import type { ConfigUser, DeviceCodeRow, DeviceRow, TokenRow, WebSessionRow } from '../oauth/oauth-store.js';
import { pgTransaction, reaching } from './pg-store.js';

/** The bigint columns (milliseconds): the driver gives them as text. */
const TIMES = ['last_poll_at', 'expires_at', 'created_at', 'approved_at', 'revoked_at', 'last_seen_at', 'used_at'];

/** A row with its bigint times as numbers, typed as the caller's row. */
function rowOf<T>(r: Record<string, unknown> | undefined): T | undefined {
  if (!r) return undefined;
  for (const k of TIMES) if (k in r && r[k] !== null) r[k] = Number(r[k]);
  return r as T;
}

const DEVICE_CODE_COLUMNS = ['device_code_hash', 'user_code', 'client_id', 'device_id', 'device_name', 'platform', 'client_version', 'public_jwk', 'jwk_thumbprint', 'scope', 'status', 'interval_s', 'last_poll_at', 'expires_at', 'created_at', 'user_id', 'workspace_id'] as const;
const DEVICE_COLUMNS = ['id', 'user_id', 'workspace_id', 'name', 'platform', 'client_version', 'public_jwk', 'jwk_thumbprint', 'approved_at', 'revoked_at', 'last_seen_at'] as const;
const TOKEN_COLUMNS = ['token_hash', 'kind', 'device_id', 'family_id', 'expires_at', 'created_at', 'used_at', 'revoked_at'] as const;

/** `INSERT INTO table (cols) VALUES ($1…$n)` for `cols`. */
function insert(table: string, cols: readonly string[]): string {
  return `INSERT INTO ${table} (${cols.join(', ')}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')})`;
}

const UPSERT_DEVICE = `${insert('oauth_devices', DEVICE_COLUMNS)}
  ON CONFLICT (id) DO UPDATE SET user_id = excluded.user_id, workspace_id = excluded.workspace_id,
    name = excluded.name, platform = excluded.platform, client_version = excluded.client_version,
    public_jwk = excluded.public_jwk, jwk_thumbprint = excluded.jwk_thumbprint,
    approved_at = excluded.approved_at, revoked_at = NULL`;

type Q = pg.Pool | pg.PoolClient;

/** The PostgreSQL implementation of {@link LoginStore}, over the bridge store's pool. */
export class PgLoginStore implements LoginStore {
  constructor(private readonly pool: pg.Pool) {}

  private async rows(sql: string, params: unknown[] = [], q: Q = this.pool): Promise<Record<string, unknown>[]> {
    return (await reaching(q.query<Record<string, unknown>>(sql, params))).rows;
  }

  private async count(sql: string, params: unknown[], q: Q = this.pool): Promise<number> {
    return (await reaching(q.query(sql, params))).rowCount ?? 0;
  }

  /** Runs `fn` in one transaction on one client (rolled back when it throws). */
  private transaction<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    return pgTransaction(this.pool, fn);
  }

  async syncUsers(users: readonly ConfigUser[]): Promise<void> {
    await this.transaction(async (c) => {
      // Nodes starting together each sync the same users (the config digest makes them equal): one at a time.
      await c.query('LOCK TABLE oauth_users IN SHARE ROW EXCLUSIVE MODE');
      await c.query('DELETE FROM oauth_memberships');
      await c.query('DELETE FROM oauth_users');
      for (const u of users) {
        await c.query('INSERT INTO oauth_users (id, name, password_hash) VALUES ($1, $2, $3)', [u.id, u.name ?? u.id, u.password_hash]);
        for (const ws of u.workspaces) await c.query('INSERT INTO oauth_memberships (user_id, workspace_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [u.id, ws]);
      }
    });
  }

  async userByName(name: string): Promise<UserRow | undefined> {
    return (await this.rows('SELECT id, name, password_hash FROM oauth_users WHERE name = $1', [name]))[0] as UserRow | undefined;
  }

  async userName(id: string): Promise<string | undefined> {
    return (await this.rows('SELECT name FROM oauth_users WHERE id = $1', [id]))[0]?.['name'] as string | undefined;
  }

  async workspacesOf(userId: string): Promise<string[]> {
    // The C order, as SQLite sorts: the page lists them the same on either engine.
    return (await this.rows('SELECT workspace_id FROM oauth_memberships WHERE user_id = $1 ORDER BY workspace_id COLLATE "C"', [userId])).map((r) => r['workspace_id'] as string);
  }

  async isMember(userId: string, workspaceId: string): Promise<boolean> {
    return (await this.rows('SELECT 1 FROM oauth_memberships WHERE user_id = $1 AND workspace_id = $2', [userId, workspaceId])).length > 0;
  }

  async insertDeviceCode(row: DeviceCodeRow): Promise<boolean> {
    return (await this.count(`${insert('oauth_device_codes', DEVICE_CODE_COLUMNS)} ON CONFLICT DO NOTHING`, DEVICE_CODE_COLUMNS.map((k) => row[k]))) === 1;
  }

  async deviceCodeByHash(hash: string): Promise<DeviceCodeRow | undefined> {
    return rowOf<DeviceCodeRow>((await this.rows('SELECT * FROM oauth_device_codes WHERE device_code_hash = $1', [hash]))[0]);
  }

  async deviceCodeByUserCode(userCode: string): Promise<DeviceCodeRow | undefined> {
    return rowOf<DeviceCodeRow>((await this.rows('SELECT * FROM oauth_device_codes WHERE user_code = $1', [userCode]))[0]);
  }

  async notePoll(hash: string, at: number, intervalS: number): Promise<void> {
    await this.count('UPDATE oauth_device_codes SET last_poll_at = $1, interval_s = $2 WHERE device_code_hash = $3', [at, intervalS, hash]);
  }

  async decideDeviceCode(hash: string, status: 'approved' | 'denied', userId: string, workspaceId: string | null, q: Q = this.pool): Promise<boolean> {
    return (await this.count(`UPDATE oauth_device_codes SET status = $1, user_id = $2, workspace_id = $3 WHERE device_code_hash = $4 AND status = 'pending'`, [status, userId, workspaceId, hash], q)) === 1;
  }

  async approveDevice(hash: string, device: DeviceRow, revokeTokensAt: number | null): Promise<boolean> {
    return this.transaction(async (c) => {
      if (!(await this.decideDeviceCode(hash, 'approved', device.user_id, device.workspace_id, c))) return false;
      await c.query(UPSERT_DEVICE, DEVICE_COLUMNS.map((k) => device[k]));
      if (revokeTokensAt !== null) await c.query('UPDATE oauth_tokens SET revoked_at = $1 WHERE device_id = $2 AND revoked_at IS NULL', [revokeTokensAt, device.id]);
      return true;
    });
  }

  async consumeDeviceCode(hash: string): Promise<boolean> {
    return (await this.count(`UPDATE oauth_device_codes SET status = 'consumed' WHERE device_code_hash = $1 AND status = 'approved'`, [hash])) === 1;
  }

  async pruneDeviceCodes(now: number): Promise<void> {
    await this.count('DELETE FROM oauth_device_codes WHERE expires_at < $1', [now - 86_400_000]);
  }

  async countLiveDeviceCodes(now: number): Promise<number> {
    return Number((await this.rows(`SELECT count(*) AS n FROM oauth_device_codes WHERE status = 'pending' AND expires_at > $1`, [now]))[0]?.['n'] ?? 0);
  }

  async device(id: string): Promise<DeviceRow | undefined> {
    return rowOf<DeviceRow>((await this.rows('SELECT * FROM oauth_devices WHERE id = $1', [id]))[0]);
  }

  async devices(workspaceId?: string): Promise<DeviceRow[]> {
    const rows = workspaceId === undefined
      ? await this.rows('SELECT * FROM oauth_devices ORDER BY approved_at DESC, id COLLATE "C"')
      : await this.rows('SELECT * FROM oauth_devices WHERE workspace_id = $1 ORDER BY approved_at DESC, id COLLATE "C"', [workspaceId]);
    return rows.map((r) => rowOf<DeviceRow>(r)!);
  }

  async devicesOfUser(userId: string): Promise<DeviceRow[]> {
    return (await this.rows('SELECT * FROM oauth_devices WHERE user_id = $1 ORDER BY approved_at DESC, id COLLATE "C"', [userId])).map((r) => rowOf<DeviceRow>(r)!);
  }

  async revokeDevice(id: string, at: number): Promise<boolean> {
    return (await this.count('UPDATE oauth_devices SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [at, id])) === 1;
  }

  async touchDevice(id: string, at: number, clientVersion?: string): Promise<void> {
    if (clientVersion === undefined) await this.count('UPDATE oauth_devices SET last_seen_at = $1 WHERE id = $2', [at, id]);
    else await this.count('UPDATE oauth_devices SET last_seen_at = $1, client_version = $2 WHERE id = $3', [at, clientVersion, id]);
  }

  async insertTokens(rows: readonly TokenRow[]): Promise<void> {
    await this.transaction(async (c) => {
      for (const r of rows) await c.query(insert('oauth_tokens', TOKEN_COLUMNS), TOKEN_COLUMNS.map((k) => r[k]));
    });
  }

  async token(hash: string): Promise<TokenRow | undefined> {
    return rowOf<TokenRow>((await this.rows('SELECT * FROM oauth_tokens WHERE token_hash = $1', [hash]))[0]);
  }

  async markTokenUsed(hash: string, at: number): Promise<boolean> {
    return (await this.count('UPDATE oauth_tokens SET used_at = $1 WHERE token_hash = $2 AND used_at IS NULL', [at, hash])) === 1;
  }

  async revokeFamily(familyId: string, at: number): Promise<number> {
    return this.count('UPDATE oauth_tokens SET revoked_at = $1 WHERE family_id = $2 AND revoked_at IS NULL', [at, familyId]);
  }

  async revokeDeviceTokens(deviceId: string, at: number): Promise<number> {
    return this.count('UPDATE oauth_tokens SET revoked_at = $1 WHERE device_id = $2 AND revoked_at IS NULL', [at, deviceId]);
  }

  async pruneTokens(now: number): Promise<void> {
    await this.count('DELETE FROM oauth_tokens WHERE expires_at < $1', [now - 86_400_000]);
  }

  async insertWebSession(row: WebSessionRow): Promise<void> {
    await this.count('INSERT INTO oauth_web_sessions (id_hash, csrf, user_id, expires_at) VALUES ($1, $2, $3, $4)', [row.id_hash, row.csrf, row.user_id, row.expires_at]);
  }

  async webSession(idHash: string): Promise<WebSessionRow | undefined> {
    return rowOf<WebSessionRow>((await this.rows('SELECT * FROM oauth_web_sessions WHERE id_hash = $1', [idHash]))[0]);
  }

  async deleteWebSession(idHash: string): Promise<void> {
    await this.count('DELETE FROM oauth_web_sessions WHERE id_hash = $1', [idHash]);
  }

  async capAnonymousSessions(keep: number): Promise<void> {
    await this.count(
      `DELETE FROM oauth_web_sessions WHERE user_id IS NULL AND id_hash NOT IN
         (SELECT id_hash FROM oauth_web_sessions WHERE user_id IS NULL ORDER BY expires_at DESC LIMIT $1)`,
      [keep],
    );
  }

  async pruneWebSessions(now: number): Promise<void> {
    await this.count('DELETE FROM oauth_web_sessions WHERE expires_at < $1', [now]);
  }
}
