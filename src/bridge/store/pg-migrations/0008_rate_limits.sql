-- Version 8: rate limits shared by every node of the cluster (issue 34), so a runtime token (or a client address
-- on the sign-in routes) has one budget however the load balancer spreads its requests. A row is one key's state,
-- changed by one atomic statement (INSERT … ON CONFLICT DO UPDATE … RETURNING) under its row lock, on the
-- database's clock (nodes' clocks may differ). Rows of idle keys are deleted from time to time.

-- Token buckets (the runtime API's per-token limit, src/bridge/token-bucket.ts): `tokens` at time `at`; `ok` is
-- whether the statement that wrote the row took a token (RETURNING sees only the new row).
CREATE TABLE rate_buckets (
  key    text             PRIMARY KEY,
  tokens double precision NOT NULL,
  ok     boolean          NOT NULL,
  at     timestamptz      NOT NULL
);
CREATE INDEX rate_buckets_at ON rate_buckets (at);

-- Failure counters with a lockout window (the sign-in routes' limits, src/bridge/oauth/rate-limit.ts).
CREATE TABLE rate_attempts (
  key      text        PRIMARY KEY,
  count    integer     NOT NULL,
  reset_at timestamptz NOT NULL
);
CREATE INDEX rate_attempts_reset ON rate_attempts (reset_at);
