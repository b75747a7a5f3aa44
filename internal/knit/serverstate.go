package knit

import (
	"context"
	"errors"
	"time"

	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// What `knit serve` keeps between restarts goes through these methods, not
// through the store: its settings (the GitOps commit pointer and wants,
// the runs a stop interrupted), the lease of the server that watches the
// repository, and the records GitOps writes and forgets.

// ServerState is what the server's controllers write besides runs: their
// settings, leases, audit entries, expiries and the previews GitOps
// records without a run. Reads are Records'.
type ServerState struct{ k *Knit }

// State is the library's ServerState.
func (k *Knit) State() *ServerState { return &ServerState{k: k} }

// Setting reads one of the server's settings; store.ErrNotFound when unset.
func (rs *Records) Setting(ctx context.Context, key string) (string, error) {
	k := rs.k
	return k.store.Setting(ctx, key)
}

// Settings reads every setting whose key starts with prefix.
func (rs *Records) Settings(ctx context.Context, prefix string) (map[string]string, error) {
	k := rs.k
	return k.store.Settings(ctx, prefix)
}

// SetSettings writes kv in one transaction; an empty value deletes its key.
func (s *ServerState) SetSettings(ctx context.Context, kv map[string]string) error {
	k := s.k
	return k.store.SetSettings(ctx, kv)
}

// HoldLease takes or renews the lease holder names (holder.Env is the
// lease's name) for ttl. A lease whose holder is a process of this host
// that is gone is taken at once; one held by a live process elsewhere
// answers *store.LockedError until it expires.
func (s *ServerState) HoldLease(ctx context.Context, holder store.Lock, ttl time.Duration) error {
	k := s.k
	dead := func(h store.Lock) bool { return h.Host == holder.Host && h.PID != holder.PID && !procexec.Alive(h.PID) }
	_, err := k.store.AcquireLock(ctx, holder, ttl, dead)
	return err
}

// ReleaseLease frees the lease name if runID holds it.
func (s *ServerState) ReleaseLease(ctx context.Context, name, runID string) error {
	k := s.k
	return k.store.ReleaseLock(ctx, name, runID)
}

// ForgetUnapplied removes an environment that was never applied (an
// invalid file's record) and reports whether there was one.
func (s *ServerState) ForgetUnapplied(ctx context.Context, id string) (bool, error) {
	k := s.k
	return k.store.DeleteUnappliedEnvironment(ctx, id)
}

// RecordAudit appends ev to the audit trail (a GitOps warning, say).
func (s *ServerState) RecordAudit(ctx context.Context, ev store.AuditEvent) error {
	k := s.k
	if ev.Time.IsZero() {
		ev.Time = k.now()
	}
	return k.store.AppendAudit(ctx, ev)
}

// InterruptedRun is env's last interrupted run (false when it has none);
// ResumeKind says what resumes it.
func (rs *Records) InterruptedRun(ctx context.Context, env string) (view.Run, bool, error) {
	k := rs.k
	runs, err := k.store.Runs(ctx, env, store.RunFilter{Status: store.StatusInterrupted, Limit: 1})
	if err != nil || len(runs) == 0 {
		return view.Run{}, false, err
	}
	return runRecord(runs[0]), true, nil
}

// CountComponents counts the components in status, over every environment.
func (rs *Records) CountComponents(ctx context.Context, status string) (int, error) {
	k := rs.k
	return k.store.CountComponents(ctx, status)
}

// StrandedRuns lists the runs recorded running that no live process
// carries any more: their environment's lock names another run or none,
// its holder is a process of this host that is gone, or its lease ended
// more than grace ago by this process's clock (grace covers clocks that
// disagree; a run taking the lock over is judged by the store's clock).
// A server sharing its store with others resumes them (internal/jobs).
func (rs *Records) StrandedRuns(ctx context.Context, grace time.Duration) ([]view.Run, error) {
	k := rs.k
	running, err := k.store.Runs(ctx, "", store.RunFilter{Status: store.StatusRunning})
	if err != nil {
		return nil, err
	}
	var out []view.Run
	for _, r := range running {
		l, err := k.store.Lock(ctx, r.Env)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return out, err
		case l.RunID != r.ID:
		case l.Host == k.cfg.Host && l.PID != k.cfg.PID && !procexec.Alive(l.PID):
		case time.Now().After(l.Expires.Add(grace)):
		default:
			continue // carried by a live run
		}
		out = append(out, runRecord(r))
	}
	return out, nil
}
