-- The model versions each service deploys, so that the model registry can
-- ask the store which services use a version (ServicesUsingModel) instead
-- of asking the serving package. Existing services are filled in from the
-- config of their spec.

-- +goose Up
CREATE TABLE service_models (
    service_id TEXT NOT NULL REFERENCES services (id),
    model_id   TEXT NOT NULL,
    PRIMARY KEY (service_id, model_id)
) STRICT;
CREATE INDEX service_models_model ON service_models (model_id, service_id);
INSERT OR IGNORE INTO service_models (service_id, model_id)
    SELECT s.id, json_extract(c.value, '$.model_id')
    FROM services s, json_each(s.spec, '$.config') c
    WHERE s.spec <> '' AND json_valid(s.spec) AND json_extract(c.value, '$.model_id') IS NOT NULL
        AND json_extract(c.value, '$.model_id') <> '';

-- +goose Down
DROP TABLE service_models;
