-- Object lock. A bucket's object_lock is its configuration, a document of
-- the obs package ('' when object lock was never enabled; a bucket with
-- one has versioning 'Enabled' for good). Each version keeps its own lock,
-- as it keeps its tags and ACL: lock_mode ('', 'GOVERNANCE' or
-- 'COMPLIANCE') and lock_until (milliseconds since the epoch, NULL without
-- a mode) are its retention, legal_hold ('' when never set, 'ON' or 'OFF')
-- its legal hold. They go with the version between objects and
-- object_versions. An upload keeps the lock its request asked for, which
-- the object gets when the upload completes. Existing rows get none.
--
-- Down drops the columns: the locks are forgotten (nothing is deleted).

-- +goose Up
ALTER TABLE buckets ADD COLUMN object_lock TEXT NOT NULL DEFAULT '';
ALTER TABLE objects ADD COLUMN lock_mode TEXT NOT NULL DEFAULT '';
ALTER TABLE objects ADD COLUMN lock_until INTEGER;
ALTER TABLE objects ADD COLUMN legal_hold TEXT NOT NULL DEFAULT '';
ALTER TABLE object_versions ADD COLUMN lock_mode TEXT NOT NULL DEFAULT '';
ALTER TABLE object_versions ADD COLUMN lock_until INTEGER;
ALTER TABLE object_versions ADD COLUMN legal_hold TEXT NOT NULL DEFAULT '';
ALTER TABLE uploads ADD COLUMN lock_mode TEXT NOT NULL DEFAULT '';
ALTER TABLE uploads ADD COLUMN lock_until INTEGER;
ALTER TABLE uploads ADD COLUMN legal_hold TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE uploads DROP COLUMN legal_hold;
ALTER TABLE uploads DROP COLUMN lock_until;
ALTER TABLE uploads DROP COLUMN lock_mode;
ALTER TABLE object_versions DROP COLUMN legal_hold;
ALTER TABLE object_versions DROP COLUMN lock_until;
ALTER TABLE object_versions DROP COLUMN lock_mode;
ALTER TABLE objects DROP COLUMN legal_hold;
ALTER TABLE objects DROP COLUMN lock_until;
ALTER TABLE objects DROP COLUMN lock_mode;
ALTER TABLE buckets DROP COLUMN object_lock;
