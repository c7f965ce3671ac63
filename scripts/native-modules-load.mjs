#!/usr/bin/env node
// Every native module the project ships loads in this Node (its ABI) and does one real thing; used by
// scripts/smoke-node.sh on Node 22 and 24. Prints one line per module and exits 1 if any fails.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const checks = {
  'better-sqlite3': () => {
    const Database = require('better-sqlite3');
    const db = new Database(':memory:');
    const v = db.prepare('select sqlite_version() as v').get().v;
    db.close();
    return `sqlite ${v}`;
  },
  '@serialport/bindings-cpp': () => {
    const { autoDetect } = require('@serialport/bindings-cpp');
    return `binding ${autoDetect().name ?? 'loaded'}`;
  },
  '@napi-rs/keyring': () => {
    const { Entry } = require('@napi-rs/keyring');
    return typeof Entry === 'function' ? 'Entry class' : 'loaded';
  },
  usb: () => {
    const { getDeviceList } = require('usb');
    return `${getDeviceList().length} USB devices listed`;
  },
  // noble's own require() opens an HCI socket and throws EAFNOSUPPORT on a kernel without Bluetooth (no
  // radio on CI machines), so the addon it uses on Linux is loaded directly: a wrong ABI fails here too.
  // (noble's own build/Release/noble.node is an empty target off macOS and Windows.)
  '@abandonware/bluetooth-hci-socket (addon)': () => {
    require('@abandonware/bluetooth-hci-socket/build/Release/bluetooth_hci_socket.node');
    return 'addon';
  },
};

let failed = 0;
for (const [name, check] of Object.entries(checks)) {
  try {
    console.log(`ok   ${name}: ${check()}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e instanceof Error ? e.message.split('\n')[0] : String(e)}`);
  }
}
console.log(`node ${process.version} (ABI ${process.versions.modules}): ${failed ? `${failed} native module(s) failed to load` : 'every native module loads'}`);
process.exit(failed ? 1 : 0);
