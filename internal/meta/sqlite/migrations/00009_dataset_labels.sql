-- The labels of datasets' drafts: one row per sample a person labelled or
-- an auto-labeling service proposed a label for. record is JSON text that
-- the dataset package owns; update_time is epoch milliseconds.

-- +goose Up
CREATE TABLE dataset_labels (
    dataset_id  TEXT NOT NULL REFERENCES datasets (id),
    sample_key  TEXT NOT NULL,
    record      TEXT NOT NULL DEFAULT '',
    update_time INTEGER,
    PRIMARY KEY (dataset_id, sample_key)
) STRICT;

-- +goose Down
DROP TABLE dataset_labels;
