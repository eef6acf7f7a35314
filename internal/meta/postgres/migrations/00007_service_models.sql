-- The model versions each service deploys, so that the model registry can
-- ask the store which services use a version (ServicesUsingModel) instead
-- of asking the serving package. Existing services are filled in from the
-- config of their spec.

-- +goose Up
CREATE TABLE service_models (
    service_id TEXT COLLATE "C" NOT NULL REFERENCES services (id),
    model_id   TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (service_id, model_id)
);
CREATE INDEX service_models_model ON service_models (model_id, service_id);
INSERT INTO service_models (service_id, model_id)
    SELECT DISTINCT s.id, c->>'model_id'
    FROM services s, jsonb_array_elements(COALESCE(s.spec::jsonb->'config', '[]'::jsonb)) c
    WHERE s.spec <> '' AND COALESCE(c->>'model_id', '') <> ''
ON CONFLICT DO NOTHING;

-- +goose Down
DROP TABLE service_models;
