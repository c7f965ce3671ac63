/**
 * Starts a complete reference bridge from its config: the one place where its parts are wired
 * (config tokens, device login when `users` are configured, blobs).
 */
import { join } from 'node:path';
import { ensurePrivateDir } from '../storage/private-dir.js';
import type { BridgeConfig } from '../config/bridge-config.js';
import type { Logger } from '../base/logger.js';
import { openDatabase } from '../storage/sqlite.js';
import { OAuthService } from '../bridge/oauth/oauth-routes.js';
import { assertStoreWired, BridgeServer } from '../bridge/server.js';
import { signInDisabledMount } from '../bridge/sign-in-disabled.js';
import type { DeviceIdentity } from '../bridge/auth.js';

/** A running bridge. */
export interface RunningBridge {
  server: BridgeServer;
  oauth: OAuthService | undefined;
  url: string;
  stop(): Promise<void>;
}

export async function startBridge(config: BridgeConfig, log: Logger): Promise<RunningBridge> {
  // Before the login store is opened: a refused start leaves nothing open.
  assertStoreWired(config);
  let oauth: OAuthService | undefined;
  // The OAuth service needs the server's URL, and the server needs the service: resolved late.
  const late: { server?: BridgeServer } = {};
  let db: ReturnType<typeof openDatabase> | undefined;
  if (config.users?.length) {
    ensurePrivateDir(config.data_dir);
    db = openDatabase(join(config.data_dir, 'oauth.sqlite'));
    oauth = new OAuthService({
      db,
      users: config.users,
      public_url: () => late.server!.publicUrl,
      reserved_device_ids: Object.values(config.device_tokens).map((d) => d.device_id),
      is_online: (d) => late.server?.hub.isOnline(d.device_id, d.workspace_id) ?? false,
      ...(config.access_token_ttl_s ? { access_token_ttl_s: config.access_token_ttl_s } : {}),
      ...(config.refresh_token_ttl_s ? { refresh_token_ttl_s: config.refresh_token_ttl_s } : {}),
      ...(config.device_code_ttl_s !== undefined ? { device_code_ttl_s: config.device_code_ttl_s } : {}),
      ...(config.device_poll_interval_s !== undefined ? { device_poll_interval_s: config.device_poll_interval_s } : {}),
    });
  }
  const o = oauth;
  const server = new BridgeServer(config, {
    log,
    ...(o ? { deviceAuth: [o], mounts: [(q, s, u) => o.handleHttp(q, s, u)], pinnedKey: (id: DeviceIdentity) => o.devicePublicJwk(id) } : { mounts: [signInDisabledMount] }),
  });
  late.server = server;
  const srv = server;
  o?.onRevoked((identity) => srv.hub.disconnect(identity));
  srv.hub.on('online', (c: { identity: { device_id: string }; hello: { client: { version: string } } }) => void o?.noteClientVersion(c.identity.device_id, c.hello.client.version).catch((e: Error) => log.warn({ err: e.message }, 'could not record a device\'s client version')));
  const url = await srv.start();
  return {
    server: srv,
    oauth,
    url,
    async stop() {
      await srv.stop();
      db?.close();
    },
  };
}
