-- Version 10: blobs on a cluster (issue 34). The bytes are files in a folder every node mounts (blobs.dir); their
-- metadata and each workspace's quota are here, so a blob uploaded through one node is read through any other,
-- and two nodes uploading at once cannot pass the quota together. An upload under way is a row in state
-- 'uploading' whose size is what it has reserved so far and whose expires_at is a lease its node renews; a
-- finished blob is 'ready', its size the blob's, expires_at its end of life. A workspace's used bytes are the sum
-- of its rows not expired, taken under a per-workspace advisory lock (src/bridge/cluster/pg-blob-ledger.ts).

CREATE TABLE bridge_blobs (
  blob_id      text        PRIMARY KEY,
  workspace_id text        NOT NULL,
  state        text        NOT NULL CHECK (state IN ('uploading', 'ready')),
  size         bigint      NOT NULL CHECK (size >= 0),
  sha256       text,
  media_type   text,
  node_id      text        NOT NULL,
  created_at   timestamptz NOT NULL,
  expires_at   timestamptz NOT NULL,
  CHECK (state = 'uploading' OR (sha256 IS NOT NULL AND media_type IS NOT NULL))
);
CREATE INDEX bridge_blobs_workspace ON bridge_blobs (workspace_id);
CREATE INDEX bridge_blobs_expires ON bridge_blobs (expires_at);
