/**
 * The JSON Schemas (TypeBox) of the serial functions' arguments and answers. The engine's argument
 * types (engine/operations.ts) are the same shapes.
 */
import { Type, type TObject, type TProperties } from '@sinclair/typebox';
import { SettingsProps } from './grant-kind.js';
import { MAX_IO_BYTES } from './engine/payload.js';
import { MAX_MONITOR_MS } from './engine/operations.js';

const closed = <P extends TProperties>(p: P, description?: string): TObject<P> => Type.Object(p, { additionalProperties: false, ...(description ? { description } : {}) });

/** `port`: an alias or a path from grants.serial. */
export const PortArg = Type.String({ minLength: 1, maxLength: 512, description: 'The port: its alias from grants.serial (e.g. scale) or its path (/dev/ttyUSB0, COM3).' });
/** Text encodings. */
export const Encoding = Type.Union([Type.Literal('utf8'), Type.Literal('latin1'), Type.Literal('ascii'), Type.Literal('utf16le')]);
/** Per-call port settings (override the grant's). */
export const Settings = Type.Optional(closed(SettingsProps, "Port settings for this call; default: the grant's, else 9600 8N1 without flow control. A change reopens the port."));
/** Bytes to send. */
export const Payload = closed(
  {
    text: Type.Optional(Type.String({ maxLength: MAX_IO_BYTES, description: 'Text to send, encoded with `encoding`. Use \\r\\n etc. for control characters.' })),
    encoding: Type.Optional(Encoding),
    hex: Type.Optional(Type.String({ maxLength: 3 * MAX_IO_BYTES, description: 'Bytes as hex pairs (spaces and colons allowed): "02 57 03".' })),
    base64: Type.Optional(Type.String({ maxLength: Math.ceil(MAX_IO_BYTES / 3) * 4 + 8, description: 'Bytes as base64.' })),
  },
  'Exactly one of text, hex or base64.',
);
const Format = Type.Union([Type.Literal('text'), Type.Literal('base64'), Type.Literal('both')]);
const Ms = (max: number, description: string) => Type.Optional(Type.Integer({ minimum: 1, maximum: max, description }));
const EndReason = Type.Union(['delimiter', 'bytes', 'regex', 'idle', 'time', 'limit'].map((e) => Type.Literal(e)));

export const ListInput = closed({});
export const ListOutput = closed({
  ports: Type.Array(
    closed({
      path: Type.String(),
      granted: Type.Boolean(),
      alias: Type.Optional(Type.String()),
      listed: Type.Boolean(),
      manufacturer: Type.Optional(Type.String()),
      serial_number: Type.Optional(Type.String()),
      vendor_id: Type.Optional(Type.String()),
      product_id: Type.Optional(Type.String()),
      pnp_id: Type.Optional(Type.String()),
      location_id: Type.Optional(Type.String()),
    }),
  ),
});

export const RequestInput = closed({
  port: PortArg,
  write: Type.Optional(Payload),
  until: Type.Optional(
    closed(
      {
        delimiter: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'End when this text arrives (e.g. "\\r\\n").' })),
        delimiter_hex: Type.Optional(Type.String({ minLength: 2, maxLength: 192, description: 'End when these bytes arrive (hex, e.g. "03").' })),
        include_delimiter: Type.Optional(Type.Boolean({ description: 'Keep the delimiter in the answer (default true).' })),
        bytes: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_IO_BYTES, description: 'End after this many bytes.' })),
        idle_ms: Ms(600_000, 'End when no byte came for this long, counted from the first byte.'),
        regex: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'End when the text so far matches this JavaScript regular expression.' })),
        regex_flags: Type.Optional(Type.String({ pattern: '^[imsu]*$', maxLength: 4 })),
        max_ms: Ms(600_000, 'Time limit of the read (default 5000); keep it below the call\'s timeout_ms.'),
      },
      'Whichever comes first ends the read. Without delimiter, bytes, idle_ms or regex, the read ends 200 ms after the last byte.',
    ),
  ),
  encoding: Type.Optional(Encoding),
  format: Type.Optional(Format),
  max_bytes: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_IO_BYTES, description: 'Size cap of the answer (default 65536); reaching it ends the read with ended: limit.' })),
  flush_input: Type.Optional(Type.Boolean({ description: 'Drop bytes received before this call (default true).' })),
  settings: Settings,
});
export const RequestOutput = closed({
  port: Type.String(),
  path: Type.String(),
  written: Type.Integer({ minimum: 0 }),
  bytes: Type.Integer({ minimum: 0 }),
  text: Type.Optional(Type.String()),
  base64: Type.Optional(Type.String()),
  ended: EndReason,
  match: Type.Optional(Type.String()),
  reused_port: Type.Boolean(),
  timings: closed({
    open_ms: Type.Number(),
    write_ms: Type.Number(),
    first_byte_ms: Type.Union([Type.Number(), Type.Null()]),
    read_ms: Type.Number(),
    total_ms: Type.Number(),
  }),
});

export const WriteInput = closed({ port: PortArg, data: Payload, settings: Settings });
export const WriteOutput = closed({ port: Type.String(), path: Type.String(), written: Type.Integer({ minimum: 0 }), write_ms: Type.Number() });

const Lines = closed({ dtr: Type.Boolean(), rts: Type.Boolean(), brk: Type.Boolean() });
export const SetSignalsInput = closed({
  port: PortArg,
  dtr: Type.Optional(Type.Boolean()),
  rts: Type.Optional(Type.Boolean()),
  brk: Type.Optional(Type.Boolean({ description: 'Hold (true) or release (false) a break.' })),
  break_ms: Ms(10_000, 'Send a break of this length, then release it.'),
  settings: Settings,
});
export const SetSignalsOutput = closed({ port: Type.String(), path: Type.String(), dtr: Type.Boolean(), rts: Type.Boolean(), brk: Type.Boolean() });
export const GetSignalsInput = closed({ port: PortArg, settings: Settings });
export const GetSignalsOutput = closed({ port: Type.String(), path: Type.String(), cts: Type.Boolean(), dsr: Type.Boolean(), dcd: Type.Boolean(), set: Lines });

export const MonitorInput = closed({
  port: PortArg,
  duration_ms: Type.Integer({ minimum: 1, maximum: MAX_MONITOR_MS, description: 'How long to watch (at most 10 minutes).' }),
  max_bytes: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_IO_BYTES, description: 'Bytes kept in the record (default and maximum 1 MiB); later ones are counted in overflow_bytes.' })),
  encoding: Type.Optional(Encoding),
  format: Type.Optional(Type.Union([Type.Literal('lines'), Format])),
  flush_input: Type.Optional(Type.Boolean({ description: 'Drop bytes received before the watch (default false).' })),
  settings: Settings,
});
export const MonitorOutput = closed({
  port: Type.String(),
  path: Type.String(),
  duration_ms: Type.Number(),
  bytes: Type.Integer({ minimum: 0 }),
  kept_bytes: Type.Integer({ minimum: 0 }),
  overflow_bytes: Type.Integer({ minimum: 0 }),
  line_count: Type.Integer({ minimum: 0 }),
  lines: Type.Optional(Type.Array(closed({ t_ms: Type.Number(), text: Type.String() }))),
  text: Type.Optional(Type.String()),
  base64: Type.Optional(Type.String()),
  first_byte_ms: Type.Union([Type.Number(), Type.Null()]),
});
