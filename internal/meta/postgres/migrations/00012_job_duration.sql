-- jobs.duration: a job's running time in milliseconds (its status'
-- duration, kept by the job package), so that a list can be ordered by it.
-- Existing rows take it from their status document.

-- +goose Up
ALTER TABLE jobs ADD COLUMN duration BIGINT NOT NULL DEFAULT 0;
UPDATE jobs SET duration = COALESCE((status::jsonb ->> 'duration')::numeric::bigint, 0)
    WHERE status <> '';
CREATE INDEX jobs_duration ON jobs (duration, create_time, id);
CREATE INDEX jobs_name ON jobs (name, create_time, id);

-- +goose Down
DROP INDEX jobs_name;
DROP INDEX jobs_duration;
ALTER TABLE jobs DROP COLUMN duration;
