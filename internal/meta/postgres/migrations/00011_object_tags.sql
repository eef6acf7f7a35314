-- Tagging: an object's tags and those a multipart upload gives its object,
-- as JSON text ('{}' for none, like metadata), and a bucket's tag set, a
-- document owned by the obs package ('' for none, like its policy).
-- Existing rows get no tags.

-- +goose Up
ALTER TABLE objects ADD COLUMN tags TEXT NOT NULL DEFAULT '{}';
ALTER TABLE uploads ADD COLUMN tags TEXT NOT NULL DEFAULT '{}';
ALTER TABLE buckets ADD COLUMN tags TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE buckets DROP COLUMN tags;
ALTER TABLE uploads DROP COLUMN tags;
ALTER TABLE objects DROP COLUMN tags;
