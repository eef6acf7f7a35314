// Package model is the model registry: it imports model packages (a
// directory with config.json, customize_service.py and weights) from OBS or
// from the output of a training job as immutable, versioned models.
//
// An import validates the package (config.json against the ModelArts
// schema, one handler class in customize_service.py, every problem reported
// with its file and field), maps the requested runtime to a configured
// engine, optionally dry-loads the handler in that engine (in the sandbox),
// copies every file to obs://atelier-system/models/<model_id>/ recording
// its ETag, and records the lineage of a job's model: the job, its
// parameters, the ETags of its inputs and its last metrics. An import is all
// or nothing: a failure removes what it copied.
//
// The pure parts (ParseConfig, ScanHandler, ValidatePackage,
// ResolveRuntime, ValidateName, ValidateVersion) have no I/O and are tested
// by tables and fuzzing; Service does the I/O through the obs and meta
// packages and authorizes every call (atelier:model:<Verb>). It reads the
// job a model is imported from — its status, outputs, inputs and metrics —
// through Jobs, a small interface it owns, as the importer may see it
// (internal/job's Jobs implements it).
package model
