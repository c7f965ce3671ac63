/**
 * What a media device id may be before it reaches ffmpeg's `-i` (issue 27, finding 1): a capture device
 * of the platform, never a regular file or a URL. On Linux a camera id that is a path must be a V4L2
 * character device (`/sys/dev/char/<major>:<minor>` under `video4linux`), after resolving links; a
 * microphone id is a PulseAudio or ALSA name, never a path. Ids that are names (`page:camera-1`,
 * `avf:0`, `dshow:<name>`, an administrator's configured device) are not paths and pass; a URL never does.
 */
import { promises as fs } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { DeviceKind } from './types.js';

/** Why an id is refused: the rule and an English sentence naming the id. */
export interface DeviceRefusal {
  rule: 'not_a_capture_device';
  message: string;
}

const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\/|^file:/i;

/** Linux's split of a `dev_t` (glibc's gnu_dev_major/minor). */
function majorMinor(rdev: number): [number, number] {
  const d = BigInt(rdev);
  return [Number(((d >> 8n) & 0xfffn) | ((d >> 32n) & ~0xfffn)), Number((d & 0xffn) | ((d >> 12n) & ~0xffn))];
}

/** Checks a device id of a kind on a platform; undefined when it may be handed to ffmpeg. */
export async function checkCaptureId(kind: DeviceKind, id: string, platform: NodeJS.Platform = process.platform, sys = '/sys'): Promise<DeviceRefusal | undefined> {
  const refuse = (why: string): DeviceRefusal => ({ rule: 'not_a_capture_device', message: `${id} is ${why}, not a ${kind} of this device; media grants cover only capture devices.` });
  const input = kind === 'microphone' ? id.replace(/^(?:pulse|alsa):/, '') : id;
  if (URL_LIKE.test(input)) return refuse('a URL');
  if (kind === 'microphone' && (input.startsWith('/') || input.startsWith('.'))) return refuse('a path');
  if (kind !== 'camera' || platform !== 'linux' || !id.startsWith('/')) return undefined;
  let st;
  try {
    st = await fs.stat(await fs.realpath(id));
  } catch {
    return undefined; // absent: the device listing says it is not connected
  }
  if (!st.isCharacterDevice()) return refuse(st.isFile() ? 'a regular file' : 'not a character device');
  const [major, minor] = majorMinor(st.rdev);
  const target = await fs.realpath(join(sys, 'dev', 'char', `${major}:${minor}`)).catch(() => undefined);
  if (!target || basename(dirname(target)) !== 'video4linux') return refuse('a character device but not a V4L2 camera');
  return undefined;
}
