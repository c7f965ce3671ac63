-- A call's latest progress note (§7 `aios/notification.progress`), written by the node holding the device's
-- session so that the nodes streaming the call elsewhere can send it on (issue 34). The latest value only:
-- progress is coalesced by design (at most 10 a second per call, the latest kept).
ALTER TABLE bridge_calls ADD COLUMN progress text;
