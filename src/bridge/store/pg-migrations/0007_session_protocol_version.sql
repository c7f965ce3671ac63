-- The protocol version a device session's hello agreed, written with its claim, so that every node (not only
-- the one holding the socket) shows it in GET /v1/devices/{id} (issue 34).
ALTER TABLE device_sessions ADD COLUMN protocol_version text;
