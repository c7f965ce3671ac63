/**
 * The reference bridge's pages in every locale: the approval page (`/device`) and the page a bridge without
 * sign-in shows there. The bridge picks the language per request (src/bridge/oauth/page-locale.ts). JSON tables
 * (src/i18n/bridge/<locale>.json); the zh-CN one is typed against the en one, so a key missing from zh-CN fails
 * the type-check (test/sdk/catalogues.test.ts refuses a key only in zh-CN).
 */
import type { Messages } from './catalogue.js';
import enTable from './bridge/en.json' with { type: 'json' };
import zhTable from './bridge/zh-CN.json' with { type: 'json' };

/** English bridge page strings. */
export const bridgeEn = enTable satisfies Messages;

/** A key of the bridge pages' catalogue. */
export type BridgeKey = keyof typeof bridgeEn;

/** Simplified Chinese bridge page strings. */
export const bridgeZh: Record<BridgeKey, string> = zhTable;
