/**
 * The media handler's grant kinds: `grants.cameras`, `grants.microphones`, `grants.screens`. An entry is
 * `"*"`, a device id or label (`/dev/video0`, `"HD Webcam C270"`), or `{ id, alias }` where the alias is
 * the name runtimes use and people see in prompts.
 */
import { Type } from '@sinclair/typebox';
import { defineGrantKind, listingCandidates, type GrantListing, type GrantInput } from '../../src/sdk/index.js';
import { checkCaptureId } from './backends/device-check.js';

const Entry = Type.Union([
  Type.String({ minLength: 1 }),
  Type.Object({ id: Type.String({ minLength: 1 }), alias: Type.Optional(Type.String({ minLength: 1, maxLength: 80 })) }, { additionalProperties: false }),
]);

const normalize = (e: string | { id: string; alias?: string }): GrantInput => (typeof e === 'string' ? { id: e } : { id: e.id, ...(e.alias ? { alias: e.alias } : {}) });

/** A granted id covers a device by id, by label (case-insensitive; the device's label is the granted id), or `*`. */
const covers = (grantId: string, requestedId: string): boolean => grantId === '*' || grantId === requestedId || grantId.toLowerCase() === requestedId.toLowerCase();

/** Settings → Find devices for a media kind: `<fn>`'s `<key>` list, by id and label. */
const listing = (fn: string, key: string): GrantListing => ({ function: fn, candidates: (o) => listingCandidates(o, key, 'id', ['label']), idKey: 'id' });

/** `grants.cameras`. Before consent, a camera id is a capture device of the platform (never a file or a URL). */
export const cameraGrants = defineGrantKind({ kind: 'cameras', entry: Entry, normalize, covers, listing: listing('camera.list', 'cameras'), validate: (id) => checkCaptureId('camera', id) });
/** `grants.microphones`. Before consent, a microphone id is an audio source name (never a path or a URL). */
export const microphoneGrants = defineGrantKind({ kind: 'microphones', entry: Entry, normalize, covers, listing: listing('microphone.list', 'microphones'), validate: (id) => checkCaptureId('microphone', id) });
/** `grants.screens`. Before consent, a screen id is never a URL. */
export const screenGrants = defineGrantKind({ kind: 'screens', entry: Entry, normalize, covers, listing: listing('screen.list', 'screens'), validate: (id) => checkCaptureId('screen', id) });
