/**
 * A small typed encoder/decoder for IPP messages (RFC 8010 §3: the binary encoding of RFC 8011 requests
 * and responses). It knows the value syntaxes a print client meets (integers, enums, booleans, strings,
 * ranges, resolutions, dates, collections, out-of-band values) and nothing about HTTP or printers.
 * Written here rather than taken from npm: the `ipp` package is unmaintained and untyped, and the
 * encoding is a few hundred lines of well-specified bytes.
 */

/** Delimiter tags (RFC 8010 §3.5.1). */
export const GROUP_TAGS = {
  operation: 0x01,
  job: 0x02,
  end: 0x03,
  printer: 0x04,
  unsupported: 0x05,
  subscription: 0x06,
  'event-notification': 0x07,
  resource: 0x08,
  document: 0x09,
  system: 0x0a,
} as const;

/** A group of attributes in a message. */
export type GroupName = Exclude<keyof typeof GROUP_TAGS, 'end'>;

/** Value tags (RFC 8010 §3.5.2). */
export const VALUE_TAGS = {
  unsupported: 0x10,
  unknown: 0x12,
  'no-value': 0x13,
  integer: 0x21,
  boolean: 0x22,
  enum: 0x23,
  octetString: 0x30,
  dateTime: 0x31,
  resolution: 0x32,
  rangeOfInteger: 0x33,
  begCollection: 0x34,
  textWithLanguage: 0x35,
  nameWithLanguage: 0x36,
  endCollection: 0x37,
  textWithoutLanguage: 0x41,
  nameWithoutLanguage: 0x42,
  keyword: 0x44,
  uri: 0x45,
  uriScheme: 0x46,
  charset: 0x47,
  naturalLanguage: 0x48,
  mimeMediaType: 0x49,
  memberAttrName: 0x4a,
} as const;

type StringTag = 'textWithoutLanguage' | 'nameWithoutLanguage' | 'keyword' | 'uri' | 'uriScheme' | 'charset' | 'naturalLanguage' | 'mimeMediaType';
const STRING_TAGS: readonly StringTag[] = ['textWithoutLanguage', 'nameWithoutLanguage', 'keyword', 'uri', 'uriScheme', 'charset', 'naturalLanguage', 'mimeMediaType'];

/** One attribute value, tagged with its IPP syntax. */
export type IppValue =
  | { tag: 'integer' | 'enum'; value: number }
  | { tag: 'boolean'; value: boolean }
  | { tag: StringTag; value: string }
  | { tag: 'textWithLanguage' | 'nameWithLanguage'; value: string; language: string }
  | { tag: 'octetString'; value: Buffer }
  | { tag: 'dateTime'; value: string }
  | { tag: 'resolution'; value: { x: number; y: number; units: 'dpi' | 'dpcm' } }
  | { tag: 'rangeOfInteger'; value: { lower: number; upper: number } }
  | { tag: 'collection'; value: IppAttribute[] }
  | { tag: 'unsupported' | 'unknown' | 'no-value' }
  | { tag: 'extension'; code: number; value: Buffer };

/** One attribute: a name and one or more values (a "1setOf" has several). */
export interface IppAttribute {
  name: string;
  values: IppValue[];
}

/** One attribute group. */
export interface IppGroup {
  group: GroupName;
  attributes: IppAttribute[];
}

/** A whole message: `code` is the operation-id in a request and the status-code in a response. */
export interface IppMessage {
  version: { major: number; minor: number };
  code: number;
  requestId: number;
  groups: IppGroup[];
}

/** A message that cannot be decoded (truncated, or a length that runs past the end). */
export class IppDecodeError extends Error {
  override readonly name = 'IppDecodeError';
}

// ----- encoding -----

class Writer {
  private readonly parts: Buffer[] = [];
  u8(n: number): void {
    const b = Buffer.alloc(1);
    b.writeUInt8(n);
    this.parts.push(b);
  }
  u16(n: number): void {
    const b = Buffer.alloc(2);
    b.writeUInt16BE(n);
    this.parts.push(b);
  }
  i32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32BE(n);
    this.parts.push(b);
  }
  bytes(b: Buffer): void {
    this.parts.push(b);
  }
  /** A length-prefixed field (names and values are limited to 32767 octets by RFC 8010 §3.1.4). */
  field(b: Buffer): void {
    if (b.length > 0x7fff) throw new RangeError('IPP field longer than 32767 octets');
    this.u16(b.length);
    this.parts.push(b);
  }
  done(): Buffer {
    return Buffer.concat(this.parts);
  }
}

function encodeValueBytes(v: IppValue): { tag: number; bytes: Buffer } {
  switch (v.tag) {
    case 'integer':
    case 'enum': {
      const b = Buffer.alloc(4);
      b.writeInt32BE(v.value);
      return { tag: VALUE_TAGS[v.tag], bytes: b };
    }
    case 'boolean':
      return { tag: VALUE_TAGS.boolean, bytes: Buffer.from([v.value ? 1 : 0]) };
    case 'textWithLanguage':
    case 'nameWithLanguage': {
      const lang = Buffer.from(v.language, 'utf8');
      const text = Buffer.from(v.value, 'utf8');
      const b = Buffer.alloc(4 + lang.length + text.length);
      b.writeUInt16BE(lang.length, 0);
      lang.copy(b, 2);
      b.writeUInt16BE(text.length, 2 + lang.length);
      text.copy(b, 4 + lang.length);
      return { tag: VALUE_TAGS[v.tag], bytes: b };
    }
    case 'octetString':
      return { tag: VALUE_TAGS.octetString, bytes: v.value };
    case 'dateTime':
      return { tag: VALUE_TAGS.dateTime, bytes: encodeDate(v.value) };
    case 'resolution': {
      const b = Buffer.alloc(9);
      b.writeInt32BE(v.value.x, 0);
      b.writeInt32BE(v.value.y, 4);
      b.writeInt8(v.value.units === 'dpi' ? 3 : 4, 8);
      return { tag: VALUE_TAGS.resolution, bytes: b };
    }
    case 'rangeOfInteger': {
      const b = Buffer.alloc(8);
      b.writeInt32BE(v.value.lower, 0);
      b.writeInt32BE(v.value.upper, 4);
      return { tag: VALUE_TAGS.rangeOfInteger, bytes: b };
    }
    case 'unsupported':
    case 'unknown':
    case 'no-value':
      return { tag: VALUE_TAGS[v.tag], bytes: Buffer.alloc(0) };
    case 'extension':
      return { tag: v.code, bytes: v.value };
    case 'collection':
      throw new Error('collections are encoded by encodeAttribute');
    default:
      return { tag: VALUE_TAGS[v.tag], bytes: Buffer.from(v.value, 'utf8') };
  }
}

function encodeAttribute(w: Writer, a: IppAttribute): void {
  if (a.values.length === 0) throw new RangeError(`IPP attribute ${a.name} has no value`);
  a.values.forEach((v, i) => {
    const name = Buffer.from(i === 0 ? a.name : '', 'utf8');
    if (v.tag === 'collection') {
      w.u8(VALUE_TAGS.begCollection);
      w.field(name);
      w.field(Buffer.alloc(0));
      for (const m of v.value) {
        // RFC 8010 §3.1.6: each member is a memberAttrName value followed by the member's values, unnamed.
        w.u8(VALUE_TAGS.memberAttrName);
        w.field(Buffer.alloc(0));
        w.field(Buffer.from(m.name, 'utf8'));
        encodeAttribute(w, { name: '', values: m.values });
      }
      w.u8(VALUE_TAGS.endCollection);
      w.field(Buffer.alloc(0));
      w.field(Buffer.alloc(0));
      return;
    }
    const { tag, bytes } = encodeValueBytes(v);
    if (tag > 0xff) throw new RangeError('extended value tags are not encoded');
    w.u8(tag);
    w.field(name);
    w.field(bytes);
  });
}

function encodeDate(iso: string): Buffer {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) throw new RangeError(`not a date: ${iso}`);
  const b = Buffer.alloc(11);
  b.writeUInt16BE(d.getUTCFullYear(), 0);
  b.writeUInt8(d.getUTCMonth() + 1, 2);
  b.writeUInt8(d.getUTCDate(), 3);
  b.writeUInt8(d.getUTCHours(), 4);
  b.writeUInt8(d.getUTCMinutes(), 5);
  b.writeUInt8(d.getUTCSeconds(), 6);
  b.writeUInt8(Math.floor(d.getUTCMilliseconds() / 100), 7);
  b.write('+', 8, 'latin1');
  return b;
}

/** Encodes a message (without the document data that may follow it). */
export function encodeMessage(m: IppMessage): Buffer {
  const w = new Writer();
  w.u8(m.version.major);
  w.u8(m.version.minor);
  w.u16(m.code);
  w.i32(m.requestId);
  for (const g of m.groups) {
    w.u8(GROUP_TAGS[g.group]);
    for (const a of g.attributes) encodeAttribute(w, a);
  }
  w.u8(GROUP_TAGS.end);
  return w.done();
}

// ----- decoding -----

const TAG_NAMES = new Map<number, string>(Object.entries(VALUE_TAGS).map(([k, v]) => [v, k]));
const GROUP_NAMES = new Map<number, GroupName>(
  Object.entries(GROUP_TAGS)
    .filter(([k]) => k !== 'end')
    .map(([k, v]) => [v, k as GroupName]),
);

class Reader {
  pos = 0;
  constructor(private readonly buf: Buffer) {}
  need(n: number): void {
    if (this.pos + n > this.buf.length) throw new IppDecodeError(`IPP message truncated at byte ${this.pos} (needs ${n} more)`);
  }
  u8(): number {
    this.need(1);
    return this.buf.readUInt8(this.pos++);
  }
  u16(): number {
    this.need(2);
    const v = this.buf.readUInt16BE(this.pos);
    this.pos += 2;
    return v;
  }
  i32(): number {
    this.need(4);
    const v = this.buf.readInt32BE(this.pos);
    this.pos += 4;
    return v;
  }
  take(n: number): Buffer {
    this.need(n);
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
  field(): Buffer {
    return this.take(this.u16());
  }
  get left(): number {
    return this.buf.length - this.pos;
  }
  peek(): number {
    this.need(1);
    return this.buf.readUInt8(this.pos);
  }
}

function decodeDate(b: Buffer): string {
  if (b.length !== 11) throw new IppDecodeError('dateTime value is not 11 octets');
  const ms = Date.UTC(b.readUInt16BE(0), b.readUInt8(2) - 1, b.readUInt8(3), b.readUInt8(4), b.readUInt8(5), b.readUInt8(6), b.readUInt8(7) * 100);
  const sign = String.fromCharCode(b.readUInt8(8)) === '-' ? 1 : -1;
  const offsetMin = b.readUInt8(9) * 60 + b.readUInt8(10);
  return new Date(ms + sign * offsetMin * 60_000).toISOString();
}

function fixed(b: Buffer, n: number, what: string): Buffer {
  if (b.length !== n) throw new IppDecodeError(`${what} value is ${b.length} octets, not ${n}`);
  return b;
}

function decodeValue(tag: number, b: Buffer): IppValue {
  const name = TAG_NAMES.get(tag);
  switch (name) {
    case 'integer':
    case 'enum':
      return { tag: name, value: fixed(b, 4, name).readInt32BE(0) };
    case 'boolean':
      return { tag: 'boolean', value: fixed(b, 1, name).readUInt8(0) !== 0 };
    case 'octetString':
      return { tag: 'octetString', value: Buffer.from(b) };
    case 'dateTime':
      return { tag: 'dateTime', value: decodeDate(b) };
    case 'resolution': {
      fixed(b, 9, name);
      return { tag: 'resolution', value: { x: b.readInt32BE(0), y: b.readInt32BE(4), units: b.readInt8(8) === 4 ? 'dpcm' : 'dpi' } };
    }
    case 'rangeOfInteger':
      fixed(b, 8, name);
      return { tag: 'rangeOfInteger', value: { lower: b.readInt32BE(0), upper: b.readInt32BE(4) } };
    case 'textWithLanguage':
    case 'nameWithLanguage': {
      const r = new Reader(b);
      const language = r.field().toString('utf8');
      const value = r.field().toString('utf8');
      return { tag: name, value, language };
    }
    case 'unsupported':
    case 'unknown':
    case 'no-value':
      return { tag: name };
    default:
      if (name && (STRING_TAGS as readonly string[]).includes(name)) return { tag: name as StringTag, value: b.toString('utf8') };
      // Unknown tags are kept opaque (RFC 8010 §3.5.2: a client ignores syntaxes it does not know).
      return { tag: 'extension', code: tag, value: Buffer.from(b) };
  }
}

/** Reads the members of a collection up to its endCollection. */
function decodeCollection(r: Reader): IppAttribute[] {
  const members: IppAttribute[] = [];
  let current: IppAttribute | undefined;
  for (;;) {
    const tag = r.u8();
    if (tag <= 0x0f) throw new IppDecodeError('collection not closed before the next group');
    r.field(); // member values carry an empty name
    if (tag === VALUE_TAGS.endCollection) {
      r.field();
      return members;
    }
    if (tag === VALUE_TAGS.memberAttrName) {
      current = { name: r.field().toString('utf8'), values: [] };
      members.push(current);
      continue;
    }
    if (!current) throw new IppDecodeError('collection value before any member name');
    if (tag === VALUE_TAGS.begCollection) {
      r.field();
      current.values.push({ tag: 'collection', value: decodeCollection(r) });
    } else {
      current.values.push(decodeValue(tag, r.field()));
    }
  }
}

/**
 * Decodes a message. Returns the message and the offset where the attributes end (document data, if
 * any, follows there).
 */
export function decodeMessage(buf: Buffer): { message: IppMessage; dataOffset: number } {
  const r = new Reader(buf);
  const version = { major: r.u8(), minor: r.u8() };
  const code = r.u16();
  const requestId = r.i32();
  const groups: IppGroup[] = [];
  let group: IppGroup | undefined;
  let attr: IppAttribute | undefined;
  for (;;) {
    const tag = r.u8();
    if (tag === GROUP_TAGS.end) break;
    if (tag <= 0x0f) {
      const g = GROUP_NAMES.get(tag);
      if (!g) throw new IppDecodeError(`unknown group tag 0x${tag.toString(16)}`);
      group = { group: g, attributes: [] };
      groups.push(group);
      attr = undefined;
      continue;
    }
    if (!group) throw new IppDecodeError('attribute before any group');
    let valueTag = tag;
    if (tag === 0x7f) valueTag = r.i32(); // RFC 8010 §3.5.2 extension: the real tag follows in 4 octets
    const name = r.field().toString('utf8');
    let value: IppValue;
    if (valueTag === VALUE_TAGS.begCollection) {
      r.field();
      value = { tag: 'collection', value: decodeCollection(r) };
    } else {
      value = decodeValue(valueTag, r.field());
    }
    if (name) {
      attr = { name, values: [value] };
      group.attributes.push(attr);
    } else {
      if (!attr) throw new IppDecodeError('additional value without an attribute');
      attr.values.push(value);
    }
  }
  return { message: { version, code, requestId, groups }, dataOffset: r.pos };
}

// ----- building and reading -----

/** Value builders, so requests read like the RFC's tables. */
export const v = {
  int: (value: number): IppValue => ({ tag: 'integer', value }),
  enum: (value: number): IppValue => ({ tag: 'enum', value }),
  bool: (value: boolean): IppValue => ({ tag: 'boolean', value }),
  keyword: (value: string): IppValue => ({ tag: 'keyword', value }),
  uri: (value: string): IppValue => ({ tag: 'uri', value }),
  name: (value: string): IppValue => ({ tag: 'nameWithoutLanguage', value }),
  text: (value: string): IppValue => ({ tag: 'textWithoutLanguage', value }),
  charset: (value: string): IppValue => ({ tag: 'charset', value }),
  language: (value: string): IppValue => ({ tag: 'naturalLanguage', value }),
  mime: (value: string): IppValue => ({ tag: 'mimeMediaType', value }),
  range: (lower: number, upper: number): IppValue => ({ tag: 'rangeOfInteger', value: { lower, upper } }),
  collection: (members: IppAttribute[]): IppValue => ({ tag: 'collection', value: members }),
};

/** A plain JS view of one value: numbers, strings, booleans, objects for ranges/resolutions/collections. */
export type PlainValue = number | boolean | string | null | { lower: number; upper: number } | { x: number; y: number; units: string } | { [k: string]: PlainValue | PlainValue[] };

/** The plain view of one value (octet strings as UTF-8 text, which is what printers put in them). */
export function plainValue(x: IppValue): PlainValue {
  switch (x.tag) {
    case 'collection':
      return plainAttributes(x.value);
    case 'unsupported':
    case 'unknown':
    case 'no-value':
      return null;
    case 'octetString':
      return x.value.toString('utf8');
    case 'extension':
      return null;
    default:
      return x.value;
  }
}

/** Attributes as a name → value object; a 1setOf becomes an array. */
export function plainAttributes(attrs: IppAttribute[]): { [k: string]: PlainValue | PlainValue[] } {
  const out: { [k: string]: PlainValue | PlainValue[] } = {};
  for (const a of attrs) {
    const vals = a.values.map(plainValue);
    out[a.name] = vals.length === 1 ? (vals[0] as PlainValue) : vals;
  }
  return out;
}

/** All groups of one kind, each as a plain object (e.g. every job in a Get-Jobs response). */
export function groupsOf(m: IppMessage, group: GroupName): { [k: string]: PlainValue | PlainValue[] }[] {
  return m.groups.filter((g) => g.group === group).map((g) => plainAttributes(g.attributes));
}
