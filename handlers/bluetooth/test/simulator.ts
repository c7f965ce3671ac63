/**
 * A simulated Bluetooth LE adapter with peripherals, speaking the protocol of noble's WebSocket binding
 * (node_modules/@abandonware/noble/lib/websocket/bindings.js) on ws://localhost:2846.
 *
 * THIS IS A PROTOCOL SIMULATOR, NOT A RADIO. The machines the tests run on have no Bluetooth in the kernel;
 * this lets noble's real JavaScript API (scan, connect, discovery, read, write, notify, disconnect, adapter
 * state) run end to end, with the peripherals played by this file. It says nothing about a real adapter's
 * timing, pairing, MTU or radio behaviour.
 *
 * Wire format (JSON text frames): noble sends commands `{ action, peripheralUuid, serviceUuid,
 * characteristicUuid, data (hex), withoutResponse, notify, … }`; the simulator sends events `{ type:
 * stateChange | discover | connect | disconnect | servicesDiscover | characteristicsDiscover | read | write |
 * notify, … }`. The port is fixed by the binding (0xB1E), so only one simulator can run per machine: tests
 * that use it run one at a time.
 */
import { EventEmitter } from 'node:events';
import http from 'node:http';
import { WebSocketServer, type WebSocket } from 'ws';

/** noble's WebSocket binding always dials this port. */
export const NOBLE_WS_PORT = 0xb1e;

/** One characteristic of a simulated peripheral. */
export interface SimCharacteristic {
  uuid: string;
  properties: string[];
  value?: Buffer;
}

/** One simulated peripheral. */
export interface SimPeripheral {
  id: string;
  address: string;
  name?: string;
  rssi: number;
  advertised?: string[];
  manufacturerData?: Buffer;
  connectable?: boolean;
  services: { uuid: string; characteristics: SimCharacteristic[] }[];
}

/** A command noble sent. */
export interface SimCommand {
  action: string;
  peripheralUuid?: string;
  serviceUuid?: string;
  characteristicUuid?: string;
  data?: string;
  withoutResponse?: boolean;
  notify?: boolean;
  [k: string]: unknown;
}

/** What a test hook may do with a command instead of the normal answer. */
export type HookVerdict = 'answer' | 'ignore' | 'disconnect';

/** The simulator: one adapter, its peripherals, and hooks for tests. */
export class BleSimulator extends EventEmitter {
  /** Every command received, in order (values included: this is a test peer). */
  readonly commands: SimCommand[] = [];
  /** Subscriptions: `${id}/${service}/${char}`. */
  readonly subscribed = new Set<string>();
  /** Connected peripherals and the client (host) that holds each link: one central per peripheral. */
  readonly links = new Map<string, WebSocket>();
  state = 'poweredOn';
  /** Clients (hosts) scanning now. */
  private readonly scanners = new Set<WebSocket>();
  /** Return 'ignore' to leave a command unanswered, 'disconnect' to drop the link instead of answering. */
  hook: (c: SimCommand) => HookVerdict = () => 'answer';
  private readonly peripherals = new Map<string, SimPeripheral>();
  private readonly servers: http.Server[] = [];
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly clients = new Set<WebSocket>();
  private advertiser: NodeJS.Timeout | undefined;

  constructor(peripherals: SimPeripheral[]) {
    super();
    for (const p of peripherals) this.peripherals.set(p.id, p);
  }

  /** Listens on localhost:2846 (IPv4 and, where the machine has it, IPv6 loopback). */
  async start(): Promise<this> {
    // "localhost" may resolve to either loopback address: listen on both, and on nothing else.
    for (const host of ['127.0.0.1', '::1']) {
      const server = http.createServer((_req, res) => res.writeHead(426).end());
      server.on('upgrade', (req, socket, head) => this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws)));
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(NOBLE_WS_PORT, host, () => resolve());
        });
        this.servers.push(server);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'EADDRINUSE') {
          await this.stop();
          throw new Error(`port ${NOBLE_WS_PORT} (noble's WebSocket binding) is taken on ${host}: another simulator test or bench is running; run them one at a time`, { cause: e });
        }
        if (host === '127.0.0.1') throw e;
        // No IPv6 loopback on this machine: localhost is 127.0.0.1 then.
      }
    }
    return this;
  }

  /** Stops listening and closes every client (noble sees its socket close). */
  async stop(): Promise<void> {
    clearInterval(this.advertiser);
    this.advertiser = undefined;
    for (const c of this.clients) c.terminate();
    await Promise.all(this.servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
    this.servers.length = 0;
  }

  /** True while any host scans. */
  get scanning(): boolean {
    return this.scanners.size > 0;
  }

  /** Whether a host holds a link to `id`. */
  isConnected(id: string): boolean {
    return this.links.has(id);
  }

  /** Number of noble clients connected now. */
  get clientCount(): number {
    return this.clients.size;
  }

  /** A peripheral by id. */
  peripheral(id: string): SimPeripheral {
    const p = this.peripherals.get(id);
    if (!p) throw new Error(`no simulated peripheral ${id}`);
    return p;
  }

  /** Changes the adapter state (poweredOn, poweredOff, unauthorized, …) and tells noble. */
  setState(state: string): void {
    this.state = state;
    if (state !== 'poweredOn') {
      this.scanners.clear();
      this.links.clear();
      this.subscribed.clear();
    }
    this.broadcast({ type: 'stateChange', state });
  }

  /** Drops the link to a peripheral as if it went out of range. */
  dropLink(id: string): void {
    const owner = this.links.get(id);
    if (!owner) return;
    this.unlink(id);
    send(owner, { type: 'disconnect', peripheralUuid: id });
  }

  private unlink(id: string): void {
    this.links.delete(id);
    for (const k of [...this.subscribed]) if (k.startsWith(`${id}/`)) this.subscribed.delete(k);
  }

  /** Sends a notification if noble subscribed to that characteristic; true when sent. */
  notify(id: string, service: string, characteristic: string, data: Buffer): boolean {
    const owner = this.links.get(id);
    if (!owner || !this.subscribed.has(`${id}/${service}/${characteristic}`)) return false;
    send(owner, { type: 'read', peripheralUuid: id, serviceUuid: service, characteristicUuid: characteristic, data: data.toString('hex'), isNotification: true });
    return true;
  }

  /** Resolves with the first command (already received or future) that matches, after index `from`. */
  waitFor(pred: (c: SimCommand) => boolean, from = 0, ms = 20_000): Promise<SimCommand> {
    const have = this.commands.slice(from).find(pred);
    if (have) return Promise.resolve(have);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.off('command', on);
        reject(new Error('the simulator did not receive the expected command in time'));
      }, ms);
      const on = (c: SimCommand) => {
        if (!pred(c)) return;
        clearTimeout(timer);
        this.off('command', on);
        resolve(c);
      };
      this.on('command', on);
    });
  }

  private accept(ws: WebSocket): void {
    this.clients.add(ws);
    ws.on('close', () => {
      this.clients.delete(ws);
      this.scanners.delete(ws);
      for (const [id, owner] of [...this.links]) if (owner === ws) this.unlink(id);
    });
    ws.on('message', (raw) => {
      let c: SimCommand;
      try {
        c = JSON.parse(String(raw)) as SimCommand;
      } catch {
        return;
      }
      this.commands.push(c);
      this.emit('command', c);
      const verdict = this.hook(c);
      if (verdict === 'ignore') return;
      if (verdict === 'disconnect' && c.peripheralUuid) return this.dropLink(c.peripheralUuid);
      this.answer(ws, c);
    });
    ws.send(JSON.stringify({ type: 'stateChange', state: this.state }));
  }

  private broadcast(msg: Record<string, unknown>): void {
    const text = JSON.stringify(msg);
    for (const c of this.clients) c.send(text);
  }

  private advertise(): void {
    if (this.state !== 'poweredOn') return;
    for (const p of this.peripherals.values()) {
      // A connected peripheral stops advertising, as real ones do.
      if (this.links.has(p.id)) continue;
      const msg = {
        type: 'discover',
        peripheralUuid: p.id,
        address: p.address,
        addressType: 'public',
        connectable: p.connectable ?? true,
        rssi: p.rssi,
        advertisement: {
          localName: p.name,
          serviceUuids: p.advertised ?? [],
          manufacturerData: p.manufacturerData?.toString('hex'),
        },
      };
      for (const c of this.scanners) send(c, msg);
    }
  }

  private char(c: SimCommand): SimCharacteristic | undefined {
    const p = this.peripherals.get(c.peripheralUuid ?? '');
    return p?.services.find((s) => s.uuid === c.serviceUuid)?.characteristics.find((x) => x.uuid === c.characteristicUuid);
  }

  private answer(ws: WebSocket, c: SimCommand): void {
    const id = c.peripheralUuid ?? '';
    const p = this.peripherals.get(id);
    const on = this.state === 'poweredOn';
    const mine = this.links.get(id) === ws;
    const reply = (msg: Record<string, unknown>) => send(ws, msg);
    const at = { peripheralUuid: id, serviceUuid: c.serviceUuid, characteristicUuid: c.characteristicUuid };
    switch (c.action) {
      case 'startScanning':
        if (!on) return;
        this.scanners.add(ws);
        this.advertiser ??= setInterval(() => this.advertise(), 50);
        return this.advertise();
      case 'stopScanning':
        this.scanners.delete(ws);
        if (!this.scanners.size) {
          clearInterval(this.advertiser);
          this.advertiser = undefined;
        }
        return;
      case 'connect':
        // A peripheral takes one central: a second host's attempt goes unanswered (times out).
        if (!on || !p || (this.links.has(id) && !mine)) return;
        this.links.set(id, ws);
        return reply({ type: 'connect', peripheralUuid: id });
      case 'disconnect':
        if (mine) this.unlink(id);
        return reply({ type: 'disconnect', peripheralUuid: id });
      case 'discoverServices':
        if (!p || !mine) return;
        return reply({ type: 'servicesDiscover', peripheralUuid: id, serviceUuids: p.services.map((s) => s.uuid) });
      case 'discoverCharacteristics': {
        const s = p?.services.find((x) => x.uuid === c.serviceUuid);
        if (!s || !mine) return;
        return reply({ type: 'characteristicsDiscover', peripheralUuid: id, serviceUuid: s.uuid, characteristics: s.characteristics.map((x) => ({ uuid: x.uuid, properties: x.properties })) });
      }
      case 'read': {
        const ch = this.char(c);
        if (!ch || !mine) return;
        return reply({ type: 'read', ...at, data: (ch.value ?? Buffer.alloc(0)).toString('hex'), isNotification: false });
      }
      case 'write': {
        const ch = this.char(c);
        if (!ch || !mine) return;
        ch.value = Buffer.from(c.data ?? '', 'hex');
        return reply({ type: 'write', ...at });
      }
      case 'notify': {
        if (!this.char(c) || !mine) return;
        const key = `${id}/${c.serviceUuid}/${c.characteristicUuid}`;
        if (c.notify) this.subscribed.add(key);
        else this.subscribed.delete(key);
        return reply({ type: 'notify', ...at, state: Boolean(c.notify) });
      }
      default:
        return;
    }
  }
}

function send(ws: WebSocket, msg: Record<string, unknown>): void {
  ws.send(JSON.stringify(msg));
}

/** The peripherals most tests use: a fridge thermometer (Environmental Sensing) and a lamp. */
export function standardPeripherals(): SimPeripheral[] {
  return [
    {
      id: 'a4c138000001',
      address: 'a4:c1:38:00:00:01',
      name: 'Fridge TH',
      rssi: -48,
      advertised: ['181a'],
      manufacturerData: Buffer.from([0x59, 0x00, 0x01, 0x02]),
      services: [
        {
          uuid: '181a',
          characteristics: [
            { uuid: '2a6e', properties: ['read', 'notify'], value: Buffer.from([0x20, 0x03]) }, // 8.00 °C
            { uuid: '2a6f', properties: ['read'], value: Buffer.from([0x32, 0x00]) },
          ],
        },
        { uuid: '180f', characteristics: [{ uuid: '2a19', properties: ['read'], value: Buffer.from([87]) }] },
        { uuid: 'ffe0', characteristics: [{ uuid: 'ffe1', properties: ['write', 'writeWithoutResponse', 'read'], value: Buffer.from('idle') }] },
      ],
    },
    {
      id: 'c0ffee000002',
      address: 'c0:ff:ee:00:00:02',
      name: 'Desk Lamp',
      rssi: -70,
      advertised: ['fff0'],
      services: [{ uuid: 'fff0', characteristics: [{ uuid: 'fff1', properties: ['read', 'write'], value: Buffer.from([0]) }] }],
    },
    {
      id: 'beac00000003',
      address: 'be:ac:00:00:00:03',
      rssi: -90,
      connectable: false,
      manufacturerData: Buffer.from('4c000215', 'hex'),
      services: [],
    },
  ];
}
