package store

import (
	"context"
	"time"
)

// ToolProcess is the process group of a tool a run started, recorded while
// it may still run: should the run's knit die, whoever runs the
// environment next ends the group before the component runs again.
type ToolProcess struct {
	RunID string `json:"runId"`
	Env   string `json:"env"`
	// Host is where the group runs: only a knit on that host can end it.
	Host string `json:"host"`
	// PGID is the group's ID, Start its leader's identity (see
	// procexec.Group), which tells it apart from a later process that got
	// the same PID.
	PGID      int       `json:"pgid"`
	Start     string    `json:"start,omitempty"`
	StartedAt time.Time `json:"startedAt"`
}

// ToolProcesses is the part of the Store that keeps the process groups of
// running tools. Unlike a run's other writes these are not fenced by the
// environment's lock: a process that exists must stay known whoever holds
// the lock, so the holder can end it.
type ToolProcesses interface {
	// RecordToolProcess records p (RunID, Env, Host and PGID required);
	// recording the same (RunID, Host, PGID) again replaces it. A zero
	// StartedAt is stamped with the store's clock.
	RecordToolProcess(ctx context.Context, p ToolProcess) error
	// ForgetToolProcess removes the record of runID's group pgid on host;
	// none is not an error.
	ForgetToolProcess(ctx context.Context, runID, host string, pgid int) error
	// ListToolProcesses lists env's recorded groups, oldest first.
	ListToolProcesses(ctx context.Context, env string) ([]ToolProcess, error)
}

// Notification is an event waiting for delivery to one sink: its body is
// the sender's (package notify encodes and decodes it), Seq its number in
// its environment's sequence.
type Notification struct {
	ID        int64     `json:"id"`
	Sink      string    `json:"sink"`
	Env       string    `json:"env"`
	Seq       int64     `json:"seq"`
	Body      []byte    `json:"body"`
	CreatedAt time.Time `json:"createdAt"`
}

// Outbox is the part of the Store that keeps notifications until they are
// delivered, so that a restart sends what a shutdown cut off.
type Outbox interface {
	// AddNotification gives an event of env the next number of env's
	// sequence (1, 2, … across restarts) and records body for each of
	// sinks under it, in one transaction. It returns the number and one
	// ID per sink, in sinks' order.
	AddNotification(ctx context.Context, env string, sinks []string, body []byte) (seq int64, ids []int64, err error)
	// DeleteNotification removes a delivered or given-up entry; an unknown
	// ID is not an error.
	DeleteNotification(ctx context.Context, id int64) error
	// PendingNotifications lists the entries waiting, oldest first.
	PendingNotifications(ctx context.Context) ([]Notification, error)
}
