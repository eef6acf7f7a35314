package meta

import (
	"context"
	"time"
)

// ModelRecord is a model version as the store keeps it. ID is unique, and so
// is (OwnerID, Name, Version). Record is a JSON document that the model
// package owns (the api.Model of the version); it comes back nil when it was
// stored nil or empty.
//
// OwnerID is not a reference to a user that the store enforces, as for
// jobs: a model version outlives the account of the user who imported it.
// Name, Version, OwnerID and CreateTime never change; UpdateModel replaces
// only Status and Record.
type ModelRecord struct {
	ID         string
	Name       string
	Version    string
	OwnerID    string
	Status     string
	CreateTime time.Time
	Record     []byte
}

// ModelFilter selects model versions in a list. Empty fields select every
// version.
type ModelFilter struct {
	OwnerID  string // "" = every owner
	Name     string // the exact name
	NameLike string // a substring of the name, case-insensitive for ASCII letters
	Version  string // the exact version
	Status   string // the exact status
}

// Models stores the versions of the model registry.
type Models interface {
	// CreateModel stores r; Exists if the id is taken or the owner already
	// has a version with the name and version.
	CreateModel(ctx context.Context, r *ModelRecord) error
	// GetModel returns the version; NotFound if none.
	GetModel(ctx context.Context, id string) (*ModelRecord, error)
	// ListModels returns a page of the versions f selects, newest first
	// (creation time descending with the zero time last, then id
	// descending), and their total count.
	ListModels(ctx context.Context, f ModelFilter, opts ListOptions) ([]*ModelRecord, int, error)
	// UpdateModel replaces the status and the record of the version r.ID;
	// NotFound if it does not exist.
	UpdateModel(ctx context.Context, r *ModelRecord) error
	// DeleteModel removes the version; NotFound if none.
	DeleteModel(ctx context.Context, id string) error
}
