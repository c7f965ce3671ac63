-- Ended calls by age, for the retention sweep (`call_retention_s`): each node removes ended calls older than
-- the retention in small batches (FOR UPDATE SKIP LOCKED, so nodes sweeping at once never wait on each other).
-- Times are ISO 8601 text in UTC; compared byte-wise (COLLATE "C"), whatever the database's collation.
CREATE INDEX bridge_calls_ended ON bridge_calls ((updated_at COLLATE "C")) WHERE outcome IS NOT NULL;
