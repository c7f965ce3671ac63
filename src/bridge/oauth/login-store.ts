/**
 * The sign-in state (users, memberships, device codes, devices with their pinned keys, token hashes, approval-page
 * sessions) as one asynchronous interface with two implementations: {@link SqliteLoginStore} over the single
 * process's `oauth.sqlite` (`OAuthStore`), and PostgreSQL (`store/pg-login-store.ts`) for a clustered bridge, where
 * a sign-in started on one node is approved on another and its tokens are checked on any (issue 34). Both pass
 * one behaviour suite (test/login/device-flow-suite.ts).
 */
import type { ConfigUser, DeviceCodeRow, DeviceRow, OAuthStore, TokenRow, WebSessionRow } from './oauth-store.js';

/** A bridge user as the login tables hold it. */
export interface UserRow {
  id: string;
  name: string;
  password_hash: string;
}

/** Typed access to the login tables. Times are milliseconds since the epoch, as the rows hold them. */
export interface LoginStore {
  /** Replaces the users and memberships with the config's; devices of removed users stop authenticating. */
  syncUsers(users: readonly ConfigUser[]): Promise<void>;
  /** A user by sign-in name. */
  userByName(name: string): Promise<UserRow | undefined>;
  /** A user's display name by id. */
  userName(id: string): Promise<string | undefined>;
  /** The workspaces a user belongs to, sorted. */
  workspacesOf(userId: string): Promise<string[]>;
  /** True when the user is (still) a member of the workspace. */
  isMember(userId: string, workspaceId: string): Promise<boolean>;

  /** Stores a new device code; false (nothing stored) when its user code is taken: the caller draws another. */
  insertDeviceCode(row: DeviceCodeRow): Promise<boolean>;
  /** A device code by the hash of its `device_code`. */
  deviceCodeByHash(hash: string): Promise<DeviceCodeRow | undefined>;
  /** A device code by its (normalised) user code. */
  deviceCodeByUserCode(userCode: string): Promise<DeviceCodeRow | undefined>;
  /** Records a poll and the (possibly raised) interval. */
  notePoll(hash: string, at: number, intervalS: number): Promise<void>;
  /** Moves a pending code to a decided state; false when it was no longer pending. */
  decideDeviceCode(hash: string, status: 'approved' | 'denied', userId: string, workspaceId: string | null): Promise<boolean>;
  /**
   * In one transaction: approves the pending code, registers (or re-registers) the device with its pinned key,
   * and, when `revokeTokensAt` is given, revokes the device's earlier tokens. False (nothing changed) when the
   * code was no longer pending.
   */
  approveDevice(hash: string, device: DeviceRow, revokeTokensAt: number | null): Promise<boolean>;
  /** Marks an approved code as exchanged for tokens; false if someone else already did. */
  consumeDeviceCode(hash: string): Promise<boolean>;
  /** Drops codes that expired more than a day ago. */
  pruneDeviceCodes(now: number): Promise<void>;
  /** Pending device codes that have not expired. */
  countLiveDeviceCodes(now: number): Promise<number>;

  /** A device by id. */
  device(id: string): Promise<DeviceRow | undefined>;
  /** Devices of a workspace (or all), newest approval first. */
  devices(workspaceId?: string): Promise<DeviceRow[]>;
  /** Devices a user approved, newest first. */
  devicesOfUser(userId: string): Promise<DeviceRow[]>;
  /** Marks a device revoked; false when it was unknown or already revoked. */
  revokeDevice(id: string, at: number): Promise<boolean>;
  /** Records when a device last authenticated and which client version it reported. */
  touchDevice(id: string, at: number, clientVersion?: string): Promise<void>;

  /** Stores token hashes (one login's access and refresh token together). */
  insertTokens(rows: readonly TokenRow[]): Promise<void>;
  /** A token by hash. */
  token(hash: string): Promise<TokenRow | undefined>;
  /** Marks a refresh token as used (rotated); false when it already was. */
  markTokenUsed(hash: string, at: number): Promise<boolean>;
  /** Revokes every live token of one family (one login's chain of rotations). */
  revokeFamily(familyId: string, at: number): Promise<number>;
  /** Revokes every live token of a device. */
  revokeDeviceTokens(deviceId: string, at: number): Promise<number>;
  /** Deletes tokens that expired more than a day ago. */
  pruneTokens(now: number): Promise<void>;

  /** Creates an approval-page session. */
  insertWebSession(row: WebSessionRow): Promise<void>;
  /** An approval-page session by the hash of its cookie value. */
  webSession(idHash: string): Promise<WebSessionRow | undefined>;
  /** Deletes one approval-page session. */
  deleteWebSession(idHash: string): Promise<void>;
  /** Keeps at most `keep` anonymous page sessions, dropping the oldest; signed-in ones stay. */
  capAnonymousSessions(keep: number): Promise<void>;
  /** Deletes expired approval-page sessions. */
  pruneWebSessions(now: number): Promise<void>;
}

/** The single process's login store: the synchronous `OAuthStore` on `oauth.sqlite`, behind the async interface. */
export class SqliteLoginStore implements LoginStore {
  constructor(readonly sync: OAuthStore) {}

  async syncUsers(users: readonly ConfigUser[]) { this.sync.syncUsers(users); }
  async userByName(name: string) { return this.sync.userByName(name); }
  async userName(id: string) { return this.sync.userName(id); }
  async workspacesOf(userId: string) { return this.sync.workspacesOf(userId); }
  async isMember(userId: string, workspaceId: string) { return this.sync.isMember(userId, workspaceId); }
  async insertDeviceCode(row: DeviceCodeRow) { return this.sync.insertDeviceCode(row); }
  async deviceCodeByHash(hash: string) { return this.sync.deviceCodeByHash(hash); }
  async deviceCodeByUserCode(userCode: string) { return this.sync.deviceCodeByUserCode(userCode); }
  async notePoll(hash: string, at: number, intervalS: number) { this.sync.notePoll(hash, at, intervalS); }
  async decideDeviceCode(hash: string, status: 'approved' | 'denied', userId: string, workspaceId: string | null) { return this.sync.decideDeviceCode(hash, status, userId, workspaceId); }
  async approveDevice(hash: string, device: DeviceRow, revokeTokensAt: number | null) {
    return this.sync.db.transaction(() => {
      if (!this.sync.decideDeviceCode(hash, 'approved', device.user_id, device.workspace_id)) return false;
      this.sync.upsertDevice(device);
      if (revokeTokensAt !== null) this.sync.revokeDeviceTokens(device.id, revokeTokensAt);
      return true;
    })();
  }
  async consumeDeviceCode(hash: string) { return this.sync.consumeDeviceCode(hash); }
  async pruneDeviceCodes(now: number) { this.sync.pruneDeviceCodes(now); }
  async countLiveDeviceCodes(now: number) { return this.sync.countLiveDeviceCodes(now); }
  async device(id: string) { return this.sync.device(id); }
  async devices(workspaceId?: string) { return this.sync.devices(workspaceId); }
  async devicesOfUser(userId: string) { return this.sync.devicesOfUser(userId); }
  async revokeDevice(id: string, at: number) { return this.sync.revokeDevice(id, at); }
  async touchDevice(id: string, at: number, clientVersion?: string) { this.sync.touchDevice(id, at, clientVersion); }
  async insertTokens(rows: readonly TokenRow[]) {
    this.sync.db.transaction(() => {
      for (const r of rows) this.sync.insertToken(r);
    })();
  }
  async token(hash: string) { return this.sync.token(hash); }
  async markTokenUsed(hash: string, at: number) { return this.sync.markTokenUsed(hash, at); }
  async revokeFamily(familyId: string, at: number) { return this.sync.revokeFamily(familyId, at); }
  async revokeDeviceTokens(deviceId: string, at: number) { return this.sync.revokeDeviceTokens(deviceId, at); }
  async pruneTokens(now: number) { this.sync.pruneTokens(now); }
  async insertWebSession(row: WebSessionRow) { this.sync.insertWebSession(row); }
  async webSession(idHash: string) { return this.sync.webSession(idHash); }
  async deleteWebSession(idHash: string) { this.sync.deleteWebSession(idHash); }
  async capAnonymousSessions(keep: number) { this.sync.capAnonymousSessions(keep); }
  async pruneWebSessions(now: number) { this.sync.pruneWebSessions(now); }
}
