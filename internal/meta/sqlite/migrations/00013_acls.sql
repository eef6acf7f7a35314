-- ACLs: an object's access control list and the one a multipart upload gives
-- its object, and a bucket's ACL, object ownership setting and public access
-- block: documents owned by the obs package ('' for none: the owner alone,
-- no ownership controls, nothing blocked). Existing rows get none; the obs
-- package gives new buckets the ownership BucketOwnerEnforced.

-- +goose Up
ALTER TABLE objects ADD COLUMN acl TEXT NOT NULL DEFAULT '';
ALTER TABLE uploads ADD COLUMN acl TEXT NOT NULL DEFAULT '';
ALTER TABLE buckets ADD COLUMN acl TEXT NOT NULL DEFAULT '';
ALTER TABLE buckets ADD COLUMN ownership TEXT NOT NULL DEFAULT '';
ALTER TABLE buckets ADD COLUMN public_access_block TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE buckets DROP COLUMN public_access_block;
ALTER TABLE buckets DROP COLUMN ownership;
ALTER TABLE buckets DROP COLUMN acl;
ALTER TABLE uploads DROP COLUMN acl;
ALTER TABLE objects DROP COLUMN acl;
