package meta

import (
	"context"
	"time"
)

// DatasetRecord is a dataset as the store keeps it. ID is unique, and so is
// (OwnerID, Name). Record is a JSON document the dataset package owns (the
// api.Dataset); it comes back nil when it was stored empty. Name, OwnerID,
// Type and CreateTime never change; UpdateDataset replaces only Record.
type DatasetRecord struct {
	ID         string
	Name       string
	OwnerID    string
	Type       string
	CreateTime time.Time
	Record     []byte
}

// DatasetFilter selects datasets in a list. Empty fields select every
// dataset.
type DatasetFilter struct {
	OwnerID  string // "" = every owner
	Name     string // the exact name
	NameLike string // a substring of the name, case-insensitive for ASCII letters
}

// DatasetVersionRecord is a version of a dataset. ID is unique, and so is
// (DatasetID, Name). Record is a JSON document the dataset package owns
// (the api.DatasetVersion). UpdateDatasetVersion replaces Status and
// Record; the dataset package keeps a published version's content
// unchanged (only its status moves between published and degraded).
type DatasetVersionRecord struct {
	ID         string
	DatasetID  string
	Name       string
	Status     string
	CreateTime time.Time
	Record     []byte
	// PinsHeld (read only) says the version's pins count: its last
	// PublishDatasetVersion ended, and no delete of it has begun.
	PinsHeld bool
}

// Datasets stores datasets, their versions and the object versions those
// pin. DeleteDataset and DeleteDatasetVersion remove the pins with the
// versions.
type Datasets interface {
	// CreateDataset stores r; Exists if the id is taken or the owner
	// already has a dataset with the name.
	CreateDataset(ctx context.Context, r *DatasetRecord) error
	// GetDataset returns the dataset; NotFound if none.
	GetDataset(ctx context.Context, id string) (*DatasetRecord, error)
	// ListDatasets returns a page of the datasets f selects, newest first
	// (creation time descending, then id descending), and their total.
	ListDatasets(ctx context.Context, f DatasetFilter, opts ListOptions) ([]*DatasetRecord, int, error)
	// UpdateDataset replaces the record of r.ID; NotFound if none.
	UpdateDataset(ctx context.Context, r *DatasetRecord) error
	// DeleteDataset removes the dataset and, in the same transaction,
	// every version of it; NotFound if none.
	DeleteDataset(ctx context.Context, id string) error

	// CreateDatasetVersion stores r; NotFound if the dataset does not
	// exist, Exists if the id is taken or the dataset already has a
	// version with the name.
	CreateDatasetVersion(ctx context.Context, r *DatasetVersionRecord) error
	// GetDatasetVersion returns the version; NotFound if none.
	GetDatasetVersion(ctx context.Context, id string) (*DatasetVersionRecord, error)
	// ListDatasetVersions returns a page of a dataset's versions, newest
	// first, and their total.
	ListDatasetVersions(ctx context.Context, datasetID string, opts ListOptions) ([]*DatasetVersionRecord, int, error)
	// ListDatasetVersionsByStatus returns the versions (of every dataset)
	// in the status, oldest first: the controller resumes "creating" ones
	// after a restart.
	ListDatasetVersionsByStatus(ctx context.Context, status string) ([]*DatasetVersionRecord, error)
	// UpdateDatasetVersion replaces the status and the record of r.ID;
	// NotFound if none.
	UpdateDatasetVersion(ctx context.Context, r *DatasetVersionRecord) error
	// DeleteDatasetVersion removes the version and its pins; NotFound if
	// none. Once begun it is not cut short by ctx, and the version holds
	// nothing from its start (a crash part-way leaves it, PinsHeld false).
	DeleteDatasetVersion(ctx context.Context, id string) error

	// PublishDatasetVersion replaces the status and the record of r.ID,
	// as UpdateDatasetVersion does, and sets the object versions it pins
	// (replacing any it had); NotFound if none. Duplicate pins count once.
	// The pins are written in short transactions and count from the last
	// one, which sets the status and record: cut short, the version pins
	// nothing (its old pins are gone first) and a publication again
	// replaces what was written. While a version is published again it
	// holds nothing.
	PublishDatasetVersion(ctx context.Context, r *DatasetVersionRecord, pins []ObjectPin) error
	// DatasetPinned reports whether a version of a dataset of owner pins
	// the object version.
	DatasetPinned(ctx context.Context, owner, bucket, key, versionID string) (bool, error)
}

// ObjectPin names one version of an object that a dataset version keeps:
// lifecycle rules do not expire it while the dataset version exists.
type ObjectPin struct {
	Bucket, Key, VersionID string
}

// DatasetLabel is a sample's label in a dataset's draft: what a person set
// (or an auto-labeling service proposed) for the sample with Key (relative
// to the dataset's source). Record is a JSON document the dataset package
// owns. (DatasetID, Key) is unique.
type DatasetLabel struct {
	DatasetID  string
	Key        string
	Record     []byte
	UpdateTime time.Time
}

// DatasetLabels stores the drafts' labels; DeleteDataset removes a
// dataset's with it.
type DatasetLabels interface {
	// PutDatasetLabel stores l, replacing the label of the same sample;
	// NotFound if the dataset does not exist.
	PutDatasetLabel(ctx context.Context, l *DatasetLabel) error
	// GetDatasetLabel returns the label; NotFound if none.
	GetDatasetLabel(ctx context.Context, datasetID, key string) (*DatasetLabel, error)
	// ListDatasetLabels returns up to limit labels of the dataset whose key
	// sorts after after, in key order (limit <= 0: MaxLimit).
	ListDatasetLabels(ctx context.Context, datasetID, after string, limit int) ([]*DatasetLabel, error)
	// DeleteDatasetLabel removes the label; NotFound if none.
	DeleteDatasetLabel(ctx context.Context, datasetID, key string) error
}
