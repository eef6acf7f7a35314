-- An object that is one blob without a part ETag (a PUT or a copy: nearly
-- every object) keeps that blob's id in blob_id and '' in blobs: reading
-- it (GET, HEAD, a listing) decodes no JSON. Its blob's size is the
-- object's size. Other objects (multipart, empty) keep blob_id '' and
-- their JSON blob list in blobs, as before. Existing rows are converted
-- in place; Down converts them back.

-- +goose Up
ALTER TABLE objects ADD COLUMN blob_id TEXT COLLATE "C" NOT NULL DEFAULT '';
UPDATE objects SET blob_id = blobs::jsonb -> 0 ->> 'id', blobs = ''
WHERE jsonb_typeof(blobs::jsonb) = 'array'
  AND jsonb_array_length(blobs::jsonb) = 1
  AND jsonb_typeof(blobs::jsonb -> 0 -> 'id') = 'string'
  AND blobs::jsonb -> 0 ->> 'id' <> ''
  AND blobs::jsonb -> 0 -> 'etag' IS NULL
  AND jsonb_typeof(blobs::jsonb -> 0 -> 'size') = 'number'
  AND (blobs::jsonb -> 0 ->> 'size')::numeric = size;

-- +goose Down
UPDATE objects SET blobs = jsonb_build_array(jsonb_build_object('id', blob_id, 'size', size))::text, blob_id = ''
WHERE blob_id <> '';
ALTER TABLE objects DROP COLUMN blob_id;
