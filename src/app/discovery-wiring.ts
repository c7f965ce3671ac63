/**
 * Wires discovery (PROTOCOL.md §7, §8) into a loaded agent: built-in handlers listed as adapters,
 * third-party adapters registered as functions, the signed Adapter Card, and the local endpoint with its
 * registry and control methods, metrics and events.
 */
import { AdapterApprovals, approvalsFile } from '../discovery/adapter-approvals.js';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseToolYaml } from '../discovery/tool-yaml.js';
import type { AgentConfig } from '../config/agent-config.js';
import { AdapterRegistry } from '../discovery/registry.js';
import { TrustStore, importedKeysFile } from '../discovery/trust-store.js';
import { defaultAdapterDirs } from '../discovery/adapter-scanner.js';
import { defaultDesktopDirs } from '../discovery/desktop-entries.js';
import { buildDeviceCard } from '../discovery/card.js';
import { signCard } from '../protocol/card-sign.js';
import { publishedDescriptors } from '../discovery/skill-index.js';
import { LocalEndpoint } from '../endpoint/local-endpoint.js';
import { defaultSocket } from '../endpoint/socket-path.js';
import type { RpcMethod } from '../protocol/rpc-methods.js';
import type { DeviceKey } from '../identity/device-key.js';
import type { ToolsChanged } from '../protocol/messages.js';
import type { Logger } from '../base/logger.js';
import { APP_VERSION, PROJECT_ROOT } from '../version.js';
import { rendererDir } from './renderer-bundle.js';
import type { Agent } from '../agent/agent.js';

/** Reads a built-in handler's manifest (`handlers/<name>/tool.aios.yaml`) for its adapter listing. */
function builtinMeta(name: string): { id: string; name: string; version: string; description?: string } {
  const file = join(PROJECT_ROOT, 'handlers', name, 'tool.aios.yaml');
  // Parsed and checked like any manifest: a broken built-in one fails the start, naming the file and the reason.
  let tool: ReturnType<typeof parseToolYaml>['tool'] | undefined;
  try {
    tool = existsSync(file) ? parseToolYaml(readFileSync(file, 'utf8')).tool : undefined;
  } catch (e) {
    throw new Error(`${file}: ${(e as Error).message}`, { cause: e });
  }
  return { id: name, name: tool?.name ?? name, version: tool?.version ?? APP_VERSION, ...(tool?.description ? { description: tool.description } : {}) };
}

/** The discovery side of a running agent. */
export interface Discovery {
  adapters: AdapterRegistry;
  endpoint: LocalEndpoint | undefined;
  /** The current signed card (for hello). */
  card(): Record<string, unknown> | undefined;
  /** Told after the card was signed again for a change of the functions (it is new from then on). */
  onCardChanged(cb: () => void): void;
  stop(): Promise<void>;
}

/** Builds the adapter registry and registers third-party adapters' functions into the agent. */
export async function startDiscovery(agent: Agent, config: AgentConfig, key: DeviceKey, log: Logger, extraMethods: Record<string, RpcMethod>[]): Promise<Discovery> {
  const trust = await TrustStore.load({ files: config.trust?.keys ?? [], importedFile: importedKeysFile(config.data_dir), log });
  const adapters = new AdapterRegistry({
    dirs: [...defaultAdapterDirs(), ...(config.adapters?.dirs ?? [])],
    desktopDirs: defaultDesktopDirs(),
    developerMode: config.adapters?.developer_mode === true,
    allowUnsandboxed: config.adapters?.unsandboxed === 'allow',
    // A new local adapter waits for approval (the admin config's, which wins, or the person's in the data
    // folder); the level of its functions is max(the card's claim, the chosen one), `high` unless chosen.
    approvals: new AdapterApprovals({ file: approvalsFile(config.data_dir), admin: config.adapters?.approved }),
    trust,
    log,
    dataDir: config.data_dir,
    // Third-party code gets its own options but none of the user's grants.
    handlerEnv: (id) => agent.handlerEnv(id, false),
    // Functions the agent would refuse make their adapter unavailable, with the reason, in the listing.
    checkFunctions: (fns) => agent.registry.check(fns),
  });
  for (const h of agent.handlerResults) {
    if (h.error) continue;
    adapters.addBuiltin(builtinMeta(h.name), h.functions.map((id) => agent.registry.get(id)!.descriptor));
  }

  // Third-party adapters' functions live in the agent's registry under the source `adapter:<id>`.
  const registered = new Set<string>();
  const sync = () => {
    const current = adapters.listAdapters().filter((e) => e.kind !== 'builtin' && e.functions.length);
    const now = new Set(current.map((e) => e.id));
    // Adapters that are gone first: an adapter renamed, or a local one replaced by a remote one,
    // offers the same function ids, which the old source still holds until it is unregistered.
    for (const id of registered) if (!now.has(id)) agent.registry.unregisterSource(`adapter:${id}`);
    for (const e of current) {
      try {
        agent.registry.replaceSource(`adapter:${e.id}`, e.functions);
      } catch (err) {
        // Not expected (the adapter registry checked the descriptors and the clashes): its functions stay out.
        log.error({ adapter: e.id, err: (err as Error).message }, 'adapter functions refused');
        now.delete(e.id);
      }
    }
    registered.clear();
    for (const id of now) registered.add(id);
  };
  // Listening before start(): the remote adapters are fetched in the background from there on.
  adapters.on('changed', sync);
  await adapters.start();
  sync();

  const deviceId = agent.identity.deviceId;
  let card: Record<string, unknown> | undefined;
  // The card without credentials lists no private skill; each variant is signed on its own.
  let anonymousCard: Record<string, unknown> | undefined;
  const published = (authenticated: boolean) => publishedDescriptors(agent.registry.descriptors(), { authenticated, disabled: agent.isDisabled });
  const configuredSocket = config.local_endpoint?.socket;
  const socket = config.local_endpoint?.enabled === false || configuredSocket === false ? undefined : configuredSocket ? { path: configuredSocket } : await defaultSocket(config.data_dir);
  const endpoint = config.local_endpoint?.enabled === false
    ? undefined
    : new LocalEndpoint({
        host: config.local_endpoint?.host ?? '127.0.0.1',
        port: config.local_endpoint?.port ?? 9527,
        socketPath: socket?.path ?? null,
        ...(socket?.madeDir ? { socketDirMade: socket.madeDir } : {}),
        dataDir: config.data_dir,
        version: APP_VERSION,
        log,
        uiDir: await rendererDir(log),
      });
  const http = endpoint ? (await endpoint.start()).http : undefined;
  const sign = async () => {
    const meta = { deviceId, deviceName: agent.identity.deviceName, version: APP_VERSION, http: http ?? '' };
    card = (await signCard(buildDeviceCard(meta, published(true)), key)) as unknown as Record<string, unknown>;
    anonymousCard = (await signCard(buildDeviceCard(meta, published(false)), key)) as unknown as Record<string, unknown>;
  };
  await sign();
  const cardListeners: (() => void)[] = [];
  agent.registry.on('changed', (c: ToolsChanged) => {
    adapters.publish(c);
    sign().then(
      () => cardListeners.forEach((cb) => cb()),
      (e: unknown) => log.error({ err: String(e) }, 'could not re-sign the adapter card'),
    );
  });

  if (endpoint) {
    endpoint.setCardProvider((authenticated) => (authenticated ? card : anonymousCard) ?? {});
    endpoint.setJwksProvider(() => ({ keys: [key.publicJwk] }));
    endpoint.setDescriptorsProvider(() => published(true));
    endpoint.setHealthProvider(() => {
      const stopped = agent.stopped();
      return { bridge: agent.session?.status ?? 'offline', ...(stopped ? { stopped } : {}) };
    });
    endpoint.addMethods(adapters.registryMethods());
    for (const m of extraMethods) endpoint.addMethods(m);
  }
  return {
    adapters,
    endpoint,
    card: () => card,
    onCardChanged: (cb) => cardListeners.push(cb),
    async stop() {
      await adapters.stop();
      await endpoint?.stop();
    },
  };
}
