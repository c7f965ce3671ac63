-- The bridge's store on PostgreSQL, version 1: what SQLite's BRIDGE_MIGRATIONS 1-8 hold for calls, devices
-- and refused hellos (src/bridge/store.ts). JSON stays text, as in SQLite: read back byte for byte (an
-- Adapter Card's digest is over its JSON text; jsonb would reorder its keys). Times are the records'
-- ISO-8601 UTC strings (toISOString), which sort in time order.

CREATE TABLE bridge_calls (
  workspace_id   text    NOT NULL,
  call_id        text    NOT NULL,
  device_id      text    NOT NULL,
  function       text    NOT NULL,
  args_digest    text    NOT NULL,
  params         text    NOT NULL,
  state          text    NOT NULL,
  outcome        text,
  bridge_outcome boolean NOT NULL DEFAULT false,
  timeline       text    NOT NULL,
  deadline_ms    bigint  NOT NULL,
  created_at     text    NOT NULL,
  updated_at     text    NOT NULL,
  sent           boolean NOT NULL DEFAULT false,
  resolved_from  text,
  device_outcome text,
  -- Idempotency (PROTOCOL §6.1): one call per (workspace, call id) across every node, kept by the engine.
  CONSTRAINT bridge_calls_idempotency PRIMARY KEY (workspace_id, call_id)
);
CREATE INDEX bridge_calls_open ON bridge_calls (device_id) WHERE outcome IS NULL;
CREATE INDEX bridge_calls_unresolved ON bridge_calls (workspace_id, device_id, updated_at) WHERE state = 'unknown' AND bridge_outcome;

CREATE TABLE bridge_devices (
  workspace_id        text    NOT NULL,
  device_id           text    NOT NULL,
  user_id             text    NOT NULL,
  name                text,
  platform            text,
  arch                text,
  client_version      text,
  last_seen           text,
  functions           text    NOT NULL DEFAULT '[]',
  functions_revision  integer NOT NULL DEFAULT 0,
  adapter_card        text,
  adapter_card_digest text,
  last_closed         text,
  PRIMARY KEY (workspace_id, device_id)
);

CREATE TABLE bridge_refused_hellos (
  workspace_id     text NOT NULL,
  device_id        text NOT NULL,
  type             text NOT NULL,
  message          text NOT NULL,
  at               text NOT NULL,
  client_version   text NOT NULL,
  minimum          text,
  protocol_version text NOT NULL,
  PRIMARY KEY (workspace_id, device_id)
);
