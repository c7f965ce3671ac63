/**
 * The approval page (`GET /device` and its form posts): a bridge user signs in, compares the code,
 * sees which device asks, picks a workspace and approves or denies. Page sessions live in a cookie
 * (HttpOnly, SameSite=Strict) whose value is stored only as a hash; every form carries a CSRF token;
 * wrong codes and wrong passwords are rate-limited per client address, page session and user name.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApprovalError, type DeviceFlow } from './device-flow.js';
import type { DeviceIdentity } from '../auth.js';
import type { WebSessionRow } from './oauth-store.js';
import type { LoginStore } from './login-store.js';
import { verifyPassword } from '../../base/password.js';
import { AttemptLimiter, type AttemptLimits } from './rate-limit.js';
import { hashToken, newToken } from './tokens.js';
import { approveView, doneView, enterCodeView, messageView, signInView, type ListedDevice, type ViewLocale } from './approval-views.js';
import { pageLocale } from './page-locale.js';
import { readParams, redirect, sendHtml, str } from './http-io.js';

const COOKIE = 'aios_device_session';
const SESSION_TTL_MS = 30 * 60_000;
/** Anonymous page sessions kept at most (oldest dropped first; they only hold a CSRF token). */
const MAX_ANONYMOUS_SESSIONS = 2000;

/** Settings of the approval page. */
export interface ApprovalPageOptions {
  flow: DeviceFlow;
  store: LoginStore;
  /** Adds `Secure` to the cookie; true when the bridge's public URL is https. */
  secureCookies: () => boolean;
  /** Called after the signed-in owner revoked one of their devices, so the bridge can drop its session. */
  onDeviceRevoked: (identity: DeviceIdentity) => void;
  /** Whether the device has a live session now (the device list says so); default: never. */
  isOnline?: (identity: DeviceIdentity) => boolean | Promise<boolean>;
  /** Failed user-code lookups allowed per window, per client address and per page session. Default 5 per 10 minutes. */
  codeAttempts?: { max: number; windowMs: number };
  /**
   * Wrong codes the whole bridge accepts per minute, from everyone together (lookups and decisions);
   * past it every code entry waits for the next minute. Default 30. See docs/login.md for what it gives an attacker.
   */
  wrongCodesPerMinute?: number;
  /** New page sessions (visits without a cookie) per client address per 10 minutes; default 60. */
  newSessionsPerAddress?: number;
  clock?: () => number;
  /**
   * Where the failure counters live, by limit name: this process's memory by default; a clustered bridge passes
   * PostgreSQL's (`PgRateLimits.attempts`), so every node counts against one budget.
   */
  attempts?: AttemptLimitsFactory;
}

/** Makes the failure counter of one named limit: `max` failures per `windowMs`. */
export type AttemptLimitsFactory = (name: string, max: number, windowMs: number, now: () => number) => AttemptLimits;

/** The in-memory counters of one process. */
export const memoryAttempts: AttemptLimitsFactory = (_name, max, windowMs, now) => new AttemptLimiter(max, windowMs, now);

interface Session {
  row: WebSessionRow;
  cookie?: string;
}

/** Serves `/device` and `/device/*`. */
export class ApprovalPage {
  private readonly codeLimiter: AttemptLimits;
  private readonly bridgeCodeLimiter: AttemptLimits;
  private readonly signInLimiter: AttemptLimits;
  private readonly sessionLimiter: AttemptLimits;
  private readonly now: () => number;

  constructor(private readonly opts: ApprovalPageOptions) {
    this.now = opts.clock ?? Date.now;
    const ca = opts.codeAttempts ?? { max: 5, windowMs: 10 * 60_000 };
    const limits = opts.attempts ?? memoryAttempts;
    this.codeLimiter = limits('page_codes', ca.max, ca.windowMs, this.now);
    this.signInLimiter = limits('page_signin', 10, 15 * 60_000, this.now);
    this.bridgeCodeLimiter = limits('page_codes_bridge', opts.wrongCodesPerMinute ?? 30, 60_000, this.now);
    this.sessionLimiter = limits('page_sessions', opts.newSessionsPerAddress ?? 60, 10 * 60_000, this.now);
  }

  /** The limiter keys a code entry counts against: the client address, the page session, and the whole bridge. */
  private codeKeys(req: IncomingMessage, session: Session): { keys: string[]; limiters: AttemptLimits[] } {
    return { keys: [`ip:${clientAddress(req)}`, `session:${session.row.id_hash}`, 'bridge'], limiters: [this.codeLimiter, this.codeLimiter, this.bridgeCodeLimiter] };
  }

  /** Minutes to wait when any of the code budgets is spent, else 0. */
  private async codeWaitMin(req: IncomingMessage, session: Session): Promise<number> {
    const { keys, limiters } = this.codeKeys(req, session);
    const blocked = await Promise.all(keys.map((k, i) => limiters[i]!.blocked(k)));
    if (!blocked.some(Boolean)) return 0;
    const waits = await Promise.all(keys.map((k, i) => limiters[i]!.retryAfterMs(k)));
    return Math.max(1, Math.ceil(Math.max(...waits) / 60_000));
  }

  private async codeFailed(req: IncomingMessage, session: Session): Promise<void> {
    const { keys, limiters } = this.codeKeys(req, session);
    await Promise.all(keys.map((k, i) => limiters[i]!.fail(k)));
  }

  private tooMany(v: ViewLocale, res: ServerResponse, waitMin: number, headers: Record<string, string | string[]> = {}): void {
    sendHtml(res, 429, messageView(v, v.t('bridge.msg.too_many_title'), v.t('bridge.msg.too_many_codes', { minutes: waitMin })), { ...headers, 'retry-after': String(waitMin * 60) });
  }

  /** The user's devices as the list shows them. */
  private async listed(userId: string): Promise<ListedDevice[]> {
    const online = this.opts.isOnline ?? (() => false);
    const devices = await this.opts.store.devicesOfUser(userId);
    return Promise.all(devices.map(async (d) => ({ ...d, online: d.revoked_at === null && (await online({ workspace_id: d.workspace_id, user_id: d.user_id, device_id: d.id })) })));
  }

  /** Serves the request when it is one of the page's routes; false otherwise. */
  async handle(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    const path = url.pathname;
    if (path !== '/device' && !path.startsWith('/device/')) return false;
    const loc = pageLocale(req, url);
    const v: ViewLocale = { locale: loc.locale, t: loc.t };
    if (req.method === 'GET' && path === '/device') {
      await this.show(v, req, res, url, loc.setCookie);
      return true;
    }
    if (req.method !== 'POST') {
      sendHtml(res, 405, messageView(v, v.t('bridge.msg.not_allowed_title'), v.t('bridge.msg.not_allowed')), { allow: 'GET, POST' });
      return true;
    }
    const params = await readParams(req);
    const session = await this.session(req);
    if (!params || !session || !this.csrfOk(session.row, str(params, 'csrf'))) {
      sendHtml(res, 403, messageView(v, v.t('bridge.msg.expired_title'), v.t('bridge.msg.expired')));
      return true;
    }
    switch (path) {
      case '/device/signin':
        return this.signIn(v, req, res, session, params).then(() => true);
      case '/device/decision':
        await this.decide(v, req, res, session, params);
        return true;
      case '/device/revoke':
        await this.revoke(v, res, session, params);
        return true;
      case '/device/signout':
        await this.opts.store.deleteWebSession(session.row.id_hash);
        redirect(res, '/device', { 'set-cookie': this.cookie('', 0) });
        return true;
      default:
        sendHtml(res, 404, messageView(v, v.t('bridge.msg.not_found_title'), v.t('bridge.msg.not_found')));
        return true;
    }
  }

  private async show(v: ViewLocale, req: IncomingMessage, res: ServerResponse, url: URL, langCookie?: string): Promise<void> {
    let session = await this.session(req);
    const userCodeAsked = url.searchParams.get('user_code')?.trim() ?? '';
    v = { ...v, here: userCodeAsked ? `/device?user_code=${encodeURIComponent(userCodeAsked)}` : '/device' };
    if (!session) {
      // A visit without a cookie stores a row: limited per address, and anonymous rows are capped.
      const who = `ip:${clientAddress(req)}`;
      if (await this.sessionLimiter.blocked(who)) {
        sendHtml(res, 429, messageView(v, v.t('bridge.msg.too_many_title'), v.t('bridge.msg.too_many_sessions')), { 'retry-after': '600' });
        return;
      }
      await this.sessionLimiter.fail(who);
      session = await this.newSession(null);
      await this.opts.store.capAnonymousSessions(MAX_ANONYMOUS_SESSIONS);
    }
    const cookies = [session.cookie, langCookie].filter((c): c is string => c !== undefined);
    const headers: Record<string, string | string[]> = cookies.length ? { 'set-cookie': cookies } : {};
    const userCode = userCodeAsked;
    const userId = session.row.user_id;
    if (!userId) {
      sendHtml(res, 200, signInView(v, { csrf: session.row.csrf, userCode }), headers);
      return;
    }
    const userName = (await this.opts.store.userName(userId)) ?? userId;
    if (!userCode) {
      sendHtml(res, 200, enterCodeView(v, { csrf: session.row.csrf, userName, devices: await this.listed(userId) }), headers);
      return;
    }
    const waitMin = await this.codeWaitMin(req, session);
    if (waitMin) {
      this.tooMany(v, res, waitMin, headers);
      return;
    }
    const request = await this.opts.flow.pendingRequest(userCode);
    if (!request) {
      await this.codeFailed(req, session);
      const view = enterCodeView(v, { csrf: session.row.csrf, userName, devices: await this.listed(userId), error: v.t('bridge.error.unknown_code') });
      sendHtml(res, 404, view, headers);
      return;
    }
    sendHtml(res, 200, approveView(v, { csrf: session.row.csrf, userName, request, workspaces: await this.opts.store.workspacesOf(userId) }), headers);
  }

  private async signIn(v: ViewLocale, req: IncomingMessage, res: ServerResponse, session: Session, params: Record<string, unknown>): Promise<void> {
    const username = (str(params, 'username') ?? '').trim();
    const password = str(params, 'password') ?? '';
    const userCode = (str(params, 'user_code') ?? '').trim();
    const keys = [`ip:${clientAddress(req)}`, `user:${username.toLowerCase()}`];
    if ((await Promise.all(keys.map((k) => this.signInLimiter.blocked(k)))).some(Boolean)) {
      sendHtml(res, 429, signInView(v, { csrf: session.row.csrf, userCode, error: v.t('bridge.signin.too_many') }));
      return;
    }
    const user = username ? await this.opts.store.userByName(username) : undefined;
    const ok = await verifyPassword(password, user?.password_hash ?? null);
    if (!ok || !user) {
      for (const k of keys) await this.signInLimiter.fail(k);
      sendHtml(res, 401, signInView(v, { csrf: session.row.csrf, userCode, error: v.t('bridge.signin.wrong') }));
      return;
    }
    // A fresh session id at sign-in, so a session planted before sign-in cannot ride on it.
    await this.opts.store.deleteWebSession(session.row.id_hash);
    const fresh = await this.newSession(user.id);
    redirect(res, userCode ? `/device?user_code=${encodeURIComponent(userCode)}` : '/device', { 'set-cookie': fresh.cookie! });
  }

  private async decide(v: ViewLocale, req: IncomingMessage, res: ServerResponse, session: Session, params: Record<string, unknown>): Promise<void> {
    const userId = session.row.user_id;
    if (!userId) {
      redirect(res, '/device');
      return;
    }
    const userCode = str(params, 'user_code') ?? '';
    const action = str(params, 'action');
    // The decision takes a code too: the same budgets as the lookup, or it would be a way around them.
    const waitMin = await this.codeWaitMin(req, session);
    if (waitMin) {
      this.tooMany(v, res, waitMin);
      return;
    }
    const request = await this.opts.flow.pendingRequest(userCode);
    const userName = (await this.opts.store.userName(userId)) ?? userId;
    try {
      if (!request) throw new ApprovalError('This code is unknown, expired or already used.', 'unknown_code');
      if (action === 'deny') {
        await this.opts.flow.deny(userCode, userId);
        sendHtml(res, 200, doneView(v, { approved: false, deviceName: request.device_name }));
      } else if (action === 'approve') {
        const workspaceId = str(params, 'workspace_id') ?? '';
        const device = await this.opts.flow.approve(userCode, userId, workspaceId);
        sendHtml(res, 200, doneView(v, { approved: true, deviceName: device.name, workspaceId }));
      } else {
        throw new ApprovalError('Choose Approve or Deny.', 'choose');
      }
    } catch (e) {
      if (!(e instanceof ApprovalError)) throw e;
      await this.codeFailed(req, session);
      const still = await this.opts.flow.pendingRequest(userCode);
      const error = v.t(`bridge.error.${e.reason}`, e.params);
      const view = still
        ? approveView(v, { csrf: session.row.csrf, userName, request: still, workspaces: await this.opts.store.workspacesOf(userId), error })
        : enterCodeView(v, { csrf: session.row.csrf, userName, devices: await this.listed(userId), error });
      sendHtml(res, 409, view);
    }
  }

  private async revoke(v: ViewLocale, res: ServerResponse, session: Session, params: Record<string, unknown>): Promise<void> {
    const userId = session.row.user_id;
    if (!userId) {
      redirect(res, '/device');
      return;
    }
    const deviceId = str(params, 'device_id') ?? '';
    const device = await this.opts.store.device(deviceId);
    const userName = (await this.opts.store.userName(userId)) ?? userId;
    let message: string | undefined;
    let error: string | undefined;
    if (!device || device.user_id !== userId) error = v.t('bridge.devices.not_yours');
    else {
      if (await this.opts.flow.revokeDevice(deviceId)) this.opts.onDeviceRevoked({ workspace_id: device.workspace_id, user_id: device.user_id, device_id: device.id });
      message = v.t('bridge.devices.revoked_msg', { name: device.name });
    }
    const view = enterCodeView(v, { csrf: session.row.csrf, userName, devices: await this.listed(userId), ...(error ? { error } : {}), ...(message ? { message } : {}) });
    sendHtml(res, error ? 404 : 200, view);
  }

  private async session(req: IncomingMessage): Promise<Session | null> {
    const value = readCookie(req.headers.cookie, COOKIE);
    if (!value) return null;
    const row = await this.opts.store.webSession(hashToken(value));
    if (!row) return null;
    if (this.now() >= row.expires_at) {
      await this.opts.store.deleteWebSession(row.id_hash);
      return null;
    }
    return { row };
  }

  private async newSession(userId: string | null): Promise<Session> {
    const now = this.now();
    await this.opts.store.pruneWebSessions(now);
    const value = newToken('web_session');
    const row: WebSessionRow = { id_hash: hashToken(value), csrf: randomBytes(24).toString('base64url'), user_id: userId, expires_at: now + SESSION_TTL_MS };
    await this.opts.store.insertWebSession(row);
    return { row, cookie: this.cookie(value, SESSION_TTL_MS / 1000) };
  }

  private cookie(value: string, maxAgeS: number): string {
    return `${COOKIE}=${value}; Path=/device; HttpOnly; SameSite=Strict; Max-Age=${maxAgeS}${this.opts.secureCookies() ? '; Secure' : ''}`;
  }

  private csrfOk(row: WebSessionRow, sent: string | undefined): boolean {
    if (!sent) return false;
    const a = Buffer.from(row.csrf);
    const b = Buffer.from(sent);
    return a.length === b.length && timingSafeEqual(a, b);
  }
}

function readCookie(header: string | undefined, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim() || null;
  }
  return null;
}

// The socket address, not X-Forwarded-For: a header anyone can set must not reset their own limit.
function clientAddress(req: IncomingMessage): string {
  return req.socket.remoteAddress ?? 'unknown';
}
