-- Version 4: a call's deadline as a time the database compares (issue 34). Every node's deadline sweeper claims
-- the open calls past it with FOR UPDATE SKIP LOCKED and ends them (PROTOCOL §6.4), so a call whose owner node
-- died still ends. deadline_ms stays (the records read it); deadline_at is the same instant, set at insert.

ALTER TABLE bridge_calls ADD COLUMN deadline_at timestamptz;
UPDATE bridge_calls SET deadline_at = to_timestamp(deadline_ms / 1000.0);
ALTER TABLE bridge_calls ALTER COLUMN deadline_at SET NOT NULL;
CREATE INDEX bridge_calls_deadline ON bridge_calls (deadline_at) WHERE outcome IS NULL;
