-- Version 2: one live session per device across the cluster (issue 34). A claim at hello takes the next
-- epoch from one sequence, so a device's epochs only grow (a released session's row is deleted; the next
-- claim still gets a larger epoch), and the newest claim wins. lease_until is renewed by the owner node's heartbeat; past it, the session has
-- lapsed (its node died or lost the database) and any node may take the device when it reconnects.

CREATE SEQUENCE device_session_epoch AS bigint;

CREATE TABLE device_sessions (
  workspace_id text        NOT NULL,
  device_id    text        NOT NULL,
  node_id      text        NOT NULL,
  epoch        bigint      NOT NULL,
  lease_until  timestamptz NOT NULL,
  PRIMARY KEY (workspace_id, device_id)
);
-- A node's heartbeat renews its sessions; the sweep looks for lapsed leases.
CREATE INDEX device_sessions_node ON device_sessions (node_id);
CREATE INDEX device_sessions_lease ON device_sessions (lease_until);
