-- Version 11: MCP sessions and their resumability events shared by every node of the cluster (issue 34,
-- docs/mcp.md "On a cluster"), so a TCP load balancer needs no stickiness: a session initialised on one node is
-- continued on any other, and a stream resumed with Last-Event-ID on another node replays what it missed.
-- A session's row lives `mcp.session_ttl_s` past its last request (each request renews `expires_at`); its events
-- `mcp.resume_ttl_s` past their writing. Every node sweeps both. Runtime tokens are stored as SHA-256 digests.

CREATE TABLE mcp_sessions (
  session_id   text        PRIMARY KEY,
  token_digest text        NOT NULL,
  workspace_id text        NOT NULL,
  -- The device of a per-device endpoint; NULL for the workspace endpoint.
  device_id    text,
  -- What the client said at initialize (clientInfo, capabilities, protocolVersion).
  client       jsonb       NOT NULL,
  expires_at   timestamptz NOT NULL
);
CREATE INDEX mcp_sessions_expires ON mcp_sessions (expires_at);

-- One row per event sent on a session's SSE streams; `n` orders them. The message is kept as the text sent.
CREATE TABLE mcp_events (
  session_id text        NOT NULL REFERENCES mcp_sessions (session_id) ON DELETE CASCADE,
  event_id   text        NOT NULL,
  n          bigserial   NOT NULL,
  stream_id  text        NOT NULL,
  message    text        NOT NULL,
  at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (session_id, event_id)
);
CREATE INDEX mcp_events_stream ON mcp_events (session_id, stream_id, n);
CREATE INDEX mcp_events_at ON mcp_events (at);

-- The workspace endpoint's device handles (`d1`, `d2`, …; docs/mcp.md), as the single process keeps them.
CREATE TABLE mcp_handles (
  workspace_id text    NOT NULL,
  device_id    text    NOT NULL,
  n            integer NOT NULL,
  PRIMARY KEY (workspace_id, device_id),
  UNIQUE (workspace_id, n)
);
