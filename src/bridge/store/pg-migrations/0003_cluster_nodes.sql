-- Version 3: the nodes of the cluster (issue 34). Each node writes its row when it joins and renews last_seen
-- by heartbeat; a node whose shared config differs from the live nodes' (config_digest) refuses to join.
-- config_keys holds the digest of each shared key (JSON text), so the refusal names the keys that differ.

CREATE TABLE cluster_nodes (
  node_id       text        PRIMARY KEY,
  config_digest text        NOT NULL,
  config_keys   text        NOT NULL,
  started_at    timestamptz NOT NULL,
  last_seen     timestamptz NOT NULL
);
