package meta

import (
	"context"
	"time"
)

// JobRecord is a training job as the store keeps it. ID is unique, and so is
// Name per owner. Spec, Status and Runtime are JSON documents that the job
// package owns: the api.Job without its status, the api.JobStatus, and the
// server-private state of the job (executor handle, token hash, credentials
// key, …). They come back nil when they were stored nil or empty.
//
// OwnerID is not a reference to a user that the store enforces: a job, its
// logs and its events outlive the account of the user who ran it.
//
// Duration is the job's running time in milliseconds as its status last
// said (the job package keeps it equal to the status' duration), so that a
// list can be ordered by it without reading the documents.
//
// Version counts updates: UpdateJob changes the record only when the stored
// version is still r.Version, and then increments it.
type JobRecord struct {
	ID         string
	Name       string
	OwnerID    string
	Phase      string
	Priority   int
	CreateTime time.Time
	UpdateTime time.Time
	Spec       []byte
	Status     []byte
	Runtime    []byte
	Duration   int64
	Version    int64
}

// JobFilter selects jobs in a list, and orders them. Empty fields select
// every job.
type JobFilter struct {
	OwnerID  string   // "" = every owner
	Phases   []string // empty = every phase
	NameLike string   // a substring of the name, case-insensitive for ASCII letters
	// Sort is one of JobSorts: a key, descending with a leading "-". ""
	// is JobSortNewest. Ties are ordered newest first (creation time
	// descending, then id descending); "create_time" is the exact reverse
	// of the default.
	Sort string
}

// JobSortNewest is the default order of ListJobs.
const JobSortNewest = "-create_time"

// JobSorts are the orders ListJobs knows: by creation time, name (byte
// order), phase or duration, ascending or (with "-") descending.
var JobSorts = []string{"create_time", "-create_time", "name", "-name", "phase", "-phase", "duration", "-duration"}

// JobLogLine is a line of a job's output. (Attempt, Seq) identifies it within
// its job; both count from 1. Text is stored byte for byte.
type JobLogLine struct {
	Attempt int
	Seq     int64
	Time    time.Time
	Stream  string // stdout | stderr | runner
	Text    string
}

// JobLogCursor is a position in a job's log: ReadJobLogs returns the lines
// after it. The zero cursor is the start of the log.
type JobLogCursor struct {
	Attempt int
	Seq     int64
}

// JobMetric is a sample of metrics. (Attempt, Seq, Kind) identifies it
// within its job. Step is nil when the sample has none.
type JobMetric struct {
	Attempt int
	Seq     int64
	Time    time.Time
	Kind    string // system | user
	Step    *int64
	Values  map[string]float64
}

// JobEvent is something that happened to a job.
type JobEvent struct {
	Time    time.Time
	Level   string // Info | Warning | Error
	Source  string // Job | Runner | Executor
	Message string
}

// Log read limits: ReadJobLogs returns DefaultLogLimit lines when asked for
// none, and never more than MaxLogLimit.
const (
	DefaultLogLimit = 1000
	MaxLogLimit     = 10000
)

// Jobs stores training jobs and their logs, metrics and events.
type Jobs interface {
	// CreateJob stores r; Exists if the id is taken or the owner already has
	// a job with the name.
	CreateJob(ctx context.Context, r *JobRecord) error
	// GetJob returns the job; NotFound if none.
	GetJob(ctx context.Context, id string) (*JobRecord, error)
	// ListJobs returns a page of the jobs f selects in f.Sort's order (by
	// default newest first: creation time descending, then id descending),
	// and their total count. Invalid if f.Sort is not one of JobSorts.
	ListJobs(ctx context.Context, f JobFilter, opts ListOptions) ([]*JobRecord, int, error)
	// UpdateJob replaces every field of the job r.ID except its creation
	// time, if its stored version is still r.Version; it then sets
	// r.UpdateTime to the current time (which it stores) and increments
	// r.Version. NotFound if the job does not exist, Conflict if its version
	// changed, Exists if the owner has another job with the name; r is
	// unchanged on failure.
	UpdateJob(ctx context.Context, r *JobRecord) error
	// DeleteJob removes the job and, in the same transaction, its logs,
	// metrics and events; NotFound if none.
	DeleteJob(ctx context.Context, id string) error
	// AppendJobLogs stores the lines in one transaction. A line whose
	// (attempt, seq) the job already has is skipped, so a batch may be sent
	// again. NotFound if the job does not exist; an empty batch does nothing.
	AppendJobLogs(ctx context.Context, jobID string, lines []JobLogLine) error
	// ReadJobLogs returns up to limit lines of the job after the cursor, in
	// (attempt, seq) order. Limit <= 0 means DefaultLogLimit; larger limits
	// are capped at MaxLogLimit. An unknown job has no lines.
	ReadJobLogs(ctx context.Context, jobID string, after JobLogCursor, limit int) ([]JobLogLine, error)
	// AppendJobMetrics stores the samples in one transaction. A sample whose
	// (attempt, seq, kind) the job already has is skipped. NotFound if the
	// job does not exist; an empty batch does nothing.
	AppendJobMetrics(ctx context.Context, jobID string, samples []JobMetric) error
	// ListJobMetrics returns every sample of the job in (attempt, seq, kind)
	// order. An unknown job has none.
	ListJobMetrics(ctx context.Context, jobID string) ([]JobMetric, error)
	// AddJobEvent records an event; NotFound if the job does not exist.
	AddJobEvent(ctx context.Context, jobID string, e JobEvent) error
	// ListJobEvents returns a page of the job's events in the order they
	// happened (time, then the order they were added), and the total. An
	// unknown job has none.
	ListJobEvents(ctx context.Context, jobID string, opts ListOptions) ([]JobEvent, int, error)
}
