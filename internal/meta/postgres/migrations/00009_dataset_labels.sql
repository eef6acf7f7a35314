-- The labels of datasets' drafts: one row per sample a person labelled or
-- an auto-labeling service proposed a label for. record is JSON text that
-- the dataset package owns; update_time is epoch milliseconds.

-- +goose Up
CREATE TABLE dataset_labels (
    dataset_id  TEXT COLLATE "C" NOT NULL REFERENCES datasets (id),
    sample_key  TEXT COLLATE "C" NOT NULL,
    record      TEXT NOT NULL DEFAULT '',
    update_time BIGINT,
    PRIMARY KEY (dataset_id, sample_key)
);

-- +goose Down
DROP TABLE dataset_labels;
