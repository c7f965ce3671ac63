-- Version 9: the sign-in state on PostgreSQL (issue 34), so a sign-in started on one node can be approved on
-- another, its tokens polled on a third, and a device's OAuth access token checked on any node. The tables and
-- rows are those of the single process's oauth.sqlite (src/bridge/oauth/oauth-store.ts, its migration 1): times
-- are milliseconds since the epoch (bigint), tokens and cookie values only as SHA-256 hashes.

CREATE TABLE oauth_users (
  id            text PRIMARY KEY,
  name          text NOT NULL UNIQUE,
  password_hash text NOT NULL
);

CREATE TABLE oauth_memberships (
  user_id      text NOT NULL REFERENCES oauth_users(id) ON DELETE CASCADE,
  workspace_id text NOT NULL,
  PRIMARY KEY (user_id, workspace_id)
);

CREATE TABLE oauth_device_codes (
  device_code_hash text    PRIMARY KEY,
  user_code        text    NOT NULL UNIQUE,
  client_id        text    NOT NULL,
  device_id        text    NOT NULL,
  device_name      text    NOT NULL,
  platform         text    NOT NULL,
  client_version   text    NOT NULL,
  public_jwk       text    NOT NULL,
  jwk_thumbprint   text    NOT NULL,
  scope            text,
  status           text    NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'consumed')),
  interval_s       integer NOT NULL,
  last_poll_at     bigint,
  expires_at       bigint  NOT NULL,
  created_at       bigint  NOT NULL,
  user_id          text,
  workspace_id     text
);
CREATE INDEX oauth_device_codes_expiry ON oauth_device_codes (expires_at);

CREATE TABLE oauth_devices (
  id             text   PRIMARY KEY,
  user_id        text   NOT NULL,
  workspace_id   text   NOT NULL,
  name           text   NOT NULL,
  platform       text   NOT NULL,
  client_version text   NOT NULL,
  public_jwk     text   NOT NULL,
  jwk_thumbprint text   NOT NULL,
  approved_at    bigint NOT NULL,
  revoked_at     bigint,
  last_seen_at   bigint
);
CREATE INDEX oauth_devices_workspace ON oauth_devices (workspace_id);
CREATE INDEX oauth_devices_user ON oauth_devices (user_id);

CREATE TABLE oauth_tokens (
  token_hash text   PRIMARY KEY,
  kind       text   NOT NULL CHECK (kind IN ('access', 'refresh')),
  device_id  text   NOT NULL REFERENCES oauth_devices(id),
  family_id  text   NOT NULL,
  expires_at bigint NOT NULL,
  created_at bigint NOT NULL,
  used_at    bigint,
  revoked_at bigint
);
CREATE INDEX oauth_tokens_device ON oauth_tokens (device_id);
CREATE INDEX oauth_tokens_family ON oauth_tokens (family_id);
CREATE INDEX oauth_tokens_expiry ON oauth_tokens (expires_at);

CREATE TABLE oauth_web_sessions (
  id_hash    text   PRIMARY KEY,
  csrf       text   NOT NULL,
  user_id    text,
  expires_at bigint NOT NULL
);
CREATE INDEX oauth_web_sessions_expiry ON oauth_web_sessions (expires_at);
