package meta

import (
	"context"
	"time"
)

// NotebookRecord is a notebook as the store keeps it. ID is unique, and so
// is Name per owner. Spec, State and Runtime are JSON documents that the
// notebook package owns: the notebook's definition (engine, flavor,
// volume, lease), its observed state (phase, activity, reasons) and its
// server-private state (executor handle, runner token hash, Jupyter
// token, credentials key). They come back nil when they were stored nil
// or empty.
//
// OwnerID is not a reference the store enforces: a notebook's events
// outlive nothing, but its record must not vanish with its owner's
// account while its volume still exists.
//
// Version counts updates: UpdateNotebook changes the record only when the
// stored version is still r.Version, and then increments it.
type NotebookRecord struct {
	ID         string
	Name       string
	OwnerID    string
	Status     string
	CreateTime time.Time
	UpdateTime time.Time
	Spec       []byte
	State      []byte
	Runtime    []byte
	Version    int64
}

// NotebookFilter selects notebooks in a list. Empty fields select every
// notebook.
type NotebookFilter struct {
	OwnerID  string   // "" = every owner
	Statuses []string // empty = every status
	NameLike string   // a substring of the name, case-insensitive for ASCII letters
}

// NotebookEvent is something that happened to a notebook.
type NotebookEvent struct {
	Time    time.Time
	Level   string // Info | Warning | Error
	Source  string // Notebook | Runner | Executor | Idle
	Message string
}

// Notebooks stores notebooks and their events.
type Notebooks interface {
	// CreateNotebook stores r (Version is set to 1); Exists if the id is
	// taken or the owner already has a notebook with the name.
	CreateNotebook(ctx context.Context, r *NotebookRecord) error
	// GetNotebook returns the notebook; NotFound if none.
	GetNotebook(ctx context.Context, id string) (*NotebookRecord, error)
	// ListNotebooks returns a page of the notebooks f selects, newest
	// first (creation time descending, then id descending), and their
	// total.
	ListNotebooks(ctx context.Context, f NotebookFilter, opts ListOptions) ([]*NotebookRecord, int, error)
	// CountNotebooks counts the owner's notebooks whose status is one of
	// statuses (every status when empty); ownerID "" counts those of every
	// owner, as in NotebookFilter.
	CountNotebooks(ctx context.Context, ownerID string, statuses []string) (int, error)
	// UpdateNotebook replaces every field of the notebook r.ID except its
	// creation time, if its stored version is still r.Version; it then
	// sets r.UpdateTime to the current time (which it stores) and
	// increments r.Version. NotFound if the notebook does not exist,
	// Conflict if its version changed, Exists if the owner has another
	// notebook with the name; r is unchanged on failure.
	UpdateNotebook(ctx context.Context, r *NotebookRecord) error
	// DeleteNotebook removes the notebook and, in the same transaction,
	// its events; NotFound if none.
	DeleteNotebook(ctx context.Context, id string) error

	// AddNotebookEvent records an event; NotFound if the notebook does
	// not exist.
	AddNotebookEvent(ctx context.Context, notebookID string, e NotebookEvent) error
	// ListNotebookEvents returns a page of the notebook's events in the
	// order they happened (time, then the order they were added), and the
	// total.
	ListNotebookEvents(ctx context.Context, notebookID string, opts ListOptions) ([]NotebookEvent, int, error)
}
