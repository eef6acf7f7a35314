-- An object that is one blob without a part ETag (a PUT or a copy: nearly
-- every object) keeps that blob's id in blob_id and '' in blobs: reading
-- it (GET, HEAD, a listing) decodes no JSON. Its blob's size is the
-- object's size. Other objects (multipart, empty) keep blob_id '' and
-- their JSON blob list in blobs, as before. Existing rows are converted
-- in place; Down converts them back.

-- +goose Up
ALTER TABLE objects ADD COLUMN blob_id TEXT NOT NULL DEFAULT '';
UPDATE objects SET blob_id = json_extract(blobs, '$[0].id'), blobs = ''
WHERE json_valid(blobs)
  AND json_type(blobs) = 'array'
  AND json_array_length(blobs) = 1
  AND json_type(blobs, '$[0].id') = 'text'
  AND json_extract(blobs, '$[0].id') <> ''
  AND json_type(blobs, '$[0].etag') IS NULL
  AND json_extract(blobs, '$[0].size') = size;

-- +goose Down
UPDATE objects SET blobs = json_array(json_object('id', blob_id, 'size', size)), blob_id = ''
WHERE blob_id <> '';
ALTER TABLE objects DROP COLUMN blob_id;
