/** The JSON Schema of a blob reference (PROTOCOL.md §9), for this handler's inputs and outputs. */
import { Type } from '@sinclair/typebox';

/** `{ blob_id, sha256, size, media_type }` */
export const BlobRefSchema = Type.Object(
  {
    blob_id: Type.String({ pattern: '^[A-Za-z0-9_-]{1,128}$' }),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
    size: Type.Integer({ minimum: 0 }),
    media_type: Type.String({ maxLength: 255 }),
  },
  { additionalProperties: false },
);
