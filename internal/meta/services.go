package meta

import (
	"context"
	"time"
)

// ServiceRecord is an online service as the store keeps it. ID is unique,
// and so is Name per owner. Spec, State and Runtime are JSON documents that
// the serving package owns: the service's definition (models, weights,
// auth, limits), its observed state (status, instances) and its
// server-private state (executor handles, token hashes, credentials keys).
// They come back nil when they were stored nil or empty.
//
// OwnerID is not a reference the store enforces: a service's events and
// usage outlive the account of its owner.
//
// ModelIDs are the model versions the service deploys, kept in step with
// Spec by the serving package: CreateService and UpdateService store them
// with the record (UpdateService replaces them), and ServicesUsingModel
// finds services by them. GetService and ListServices leave them nil.
//
// Version counts updates: UpdateService changes the record only when the
// stored version is still r.Version, and then increments it.
type ServiceRecord struct {
	ID         string
	Name       string
	OwnerID    string
	Status     string
	CreateTime time.Time
	UpdateTime time.Time
	Spec       []byte
	State      []byte
	Runtime    []byte
	ModelIDs   []string
	Version    int64
}

// ServiceFilter selects services in a list. Empty fields select every
// service.
type ServiceFilter struct {
	OwnerID  string   // "" = every owner
	Statuses []string // empty = every status
	NameLike string   // a substring of the name, case-insensitive for ASCII letters
}

// ServiceLogLine is a line of the output of a service instance. (InstanceID,
// Seq) identifies it within its service; Seq counts from 1 per instance.
// Text is stored byte for byte.
type ServiceLogLine struct {
	InstanceID string
	Seq        int64
	Time       time.Time
	Stream     string // stdout | stderr | runner
	Text       string
}

// ServiceEvent is something that happened to a service.
type ServiceEvent struct {
	Time    time.Time
	Level   string // Info | Warning | Error
	Source  string // Service | Instance | Runner | Executor
	Message string
}

// ServiceUsage is the time one instance of a service ran on a flavor. End
// is the zero time while the instance runs. (ServiceID, InstanceID)
// identifies it. Usage is kept when its service is deleted.
type ServiceUsage struct {
	ServiceID   string
	InstanceID  string
	OwnerID     string
	ServiceName string
	Flavor      string
	Start       time.Time
	End         time.Time
}

// UsageFilter selects usage records. Empty fields select every record.
type UsageFilter struct {
	OwnerID string    // "" = every owner
	Since   time.Time // records that ended before it are left out; zero = all
}

// Services stores online services and their instance logs, events and
// usage.
type Services interface {
	// CreateService stores r; Exists if the id is taken or the owner
	// already has a service with the name.
	CreateService(ctx context.Context, r *ServiceRecord) error
	// GetService returns the service; NotFound if none.
	GetService(ctx context.Context, id string) (*ServiceRecord, error)
	// ListServices returns a page of the services f selects, newest first
	// (creation time descending, then id descending), and their total.
	ListServices(ctx context.Context, f ServiceFilter, opts ListOptions) ([]*ServiceRecord, int, error)
	// UpdateService replaces every field of the service r.ID except its
	// creation time, if its stored version is still r.Version; it then sets
	// r.UpdateTime to the current time (which it stores) and increments
	// r.Version. NotFound if the service does not exist, Conflict if its
	// version changed, Exists if the owner has another service with the
	// name; r is unchanged on failure.
	UpdateService(ctx context.Context, r *ServiceRecord) error
	// DeleteService removes the service and, in the same transaction, its
	// logs and events (its usage stays); NotFound if none.
	DeleteService(ctx context.Context, id string) error
	// ServicesUsingModel returns the ids of the services, of every owner
	// and in every status, that deploy the model version (ModelIDs),
	// sorted.
	ServicesUsingModel(ctx context.Context, modelID string) ([]string, error)

	// AppendServiceLogs stores the lines in one transaction. A line whose
	// (instance, seq) the service already has is skipped, so a batch may be
	// sent again. NotFound if the service does not exist; an empty batch
	// does nothing.
	AppendServiceLogs(ctx context.Context, serviceID string, lines []ServiceLogLine) error
	// TailServiceLogs returns the last n lines (n <= 0 means
	// DefaultLogLimit, capped at MaxLogLimit) of one instance of the
	// service in seq order or, when instanceID is "", of every instance in
	// (time, instance, seq) order. An unknown service has none.
	TailServiceLogs(ctx context.Context, serviceID, instanceID string, n int) ([]ServiceLogLine, error)
	// TrimServiceLogs keeps the last keep lines of an instance of the
	// service and deletes the others (keep 0 deletes them all).
	TrimServiceLogs(ctx context.Context, serviceID, instanceID string, keep int) error

	// AddServiceEvent records an event; NotFound if the service does not
	// exist.
	AddServiceEvent(ctx context.Context, serviceID string, e ServiceEvent) error
	// ListServiceEvents returns a page of the service's events in the order
	// they happened (time, then the order they were added), and the total.
	ListServiceEvents(ctx context.Context, serviceID string, opts ListOptions) ([]ServiceEvent, int, error)

	// PutServiceUsage stores u, replacing the record of the same
	// (ServiceID, InstanceID).
	PutServiceUsage(ctx context.Context, u ServiceUsage) error
	// ListServiceUsage returns the records f selects ordered by start time,
	// then service and instance.
	ListServiceUsage(ctx context.Context, f UsageFilter) ([]ServiceUsage, error)
}
