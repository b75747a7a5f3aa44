package knit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"knit.dev/knit/internal/fleet"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// A set's rollout in waves (spec.rollout.waves) is kept in the store as
// the GitOps reconciler decides it (internal/fleet's rules): these are
// its reads and writes, and the operators' actions on it.

// WaveRollout is set id's rollout and the version it was read at (nil and 0:
// none yet).
func (s *ServerState) WaveRollout(ctx context.Context, id string) (*view.WaveRollout, int64, error) {
	rec, err := s.k.store.WaveRollout(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	r, err := decodeRollout(rec)
	return r, rec.Version, err
}

// WaveRolloutIDs are the sets that have a rollout, by ID.
func (s *ServerState) WaveRolloutIDs(ctx context.Context) ([]string, error) {
	recs, err := s.k.store.ListWaveRollouts(ctx, "")
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(recs))
	for _, r := range recs {
		ids = append(ids, r.ID)
	}
	return ids, nil
}

// PutWaveRollout writes r over the version read (0: none yet), with audit
// when non-nil, in one transaction; store.ErrConflict when someone wrote
// since.
func (s *ServerState) PutWaveRollout(ctx context.Context, r *view.WaveRollout, version int64, audit *store.AuditEvent) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if audit != nil && audit.Time.IsZero() {
		audit.Time = s.k.now()
	}
	return s.k.store.PutWaveRollout(ctx, store.WaveRollout{ID: r.Set, Team: r.Team, Version: version, State: data, UpdatedAt: s.k.now()}, audit)
}

func decodeRollout(rec store.WaveRollout) (*view.WaveRollout, error) {
	var r view.WaveRollout
	if err := json.Unmarshal(rec.State, &r); err != nil {
		return nil, fmt.Errorf("the rollout of %s: %w", rec.ID, err)
	}
	return &r, nil
}

// FleetReads are the read models of the sets' rollouts in waves, as the
// caller sees them.
type FleetReads struct{ k *Knit }

// NewFleetReads is k's fleet reads.
func NewFleetReads(k *Knit) *FleetReads { return &FleetReads{k: k} }

// List is the sets with a rollout the caller may see, by ID.
func (rs *FleetReads) List(ctx context.Context) ([]string, error) {
	recs, err := rs.k.store.ListWaveRollouts(ctx, "")
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, r := range recs {
		if visibleTo(ctx, r.Team) {
			ids = append(ids, r.ID)
		}
	}
	return ids, nil
}

// Status is knit fleet status of set ref (team/name, or a name that one
// visible set has): each environment of its rollout with the release it
// runs, its status and its wave, those whose labels sel matches (nil:
// all), and why the next wave waits.
func (rs *FleetReads) Status(ctx context.Context, ref string, sel *spec.Selector) (view.Fleet, error) {
	id, err := rs.id(ctx, ref)
	if err != nil {
		return view.Fleet{}, err
	}
	rec, err := rs.k.store.WaveRollout(ctx, id)
	if err != nil {
		return view.Fleet{}, err
	}
	if !visibleTo(ctx, rec.Team) {
		return view.Fleet{}, fmt.Errorf("%w: set %s belongs to another team", ErrForbidden, id)
	}
	r, err := decodeRollout(rec)
	if err != nil {
		return view.Fleet{}, err
	}
	r.Why = fleet.Why(r, rs.k.now())
	f := view.Fleet{Set: id, Rollout: r, Envs: []view.FleetEnv{}}
	for _, e := range r.Envs {
		if sel != nil && !sel.Matches(e.Labels) {
			continue
		}
		fe := view.FleetEnv{ID: e.ID, Labels: e.Labels, Wave: e.Wave + 1, State: e.State, Message: e.Message}
		if err := rs.release(ctx, &fe); err != nil {
			return view.Fleet{}, err
		}
		f.Envs = append(f.Envs, fe)
	}
	return f, nil
}

// release fills in what fe's environment runs: its applied revision,
// that revision's commit and verification, and its status.
func (rs *FleetReads) release(ctx context.Context, fe *view.FleetEnv) error {
	env, err := rs.k.store.Environment(ctx, fe.ID)
	if errors.Is(err, store.ErrNotFound) {
		fe.Status = "unknown"
		return nil
	} else if err != nil {
		return err
	}
	fe.Status, fe.Revision = string(env.Status), env.AppliedRevision
	if env.AppliedRevision == 0 {
		return nil
	}
	rev, err := rs.k.store.Revision(ctx, fe.ID, env.AppliedRevision)
	if err != nil {
		return err
	}
	fe.Commit, fe.Verification = rev.Commit, string(rev.Verification)
	return nil
}

// id resolves ref: a set's team/name, or a name only one set the
// caller sees has.
func (rs *FleetReads) id(ctx context.Context, ref string) (string, error) {
	if strings.Contains(ref, "/") {
		return ref, nil
	}
	ids, err := rs.List(ctx)
	if err != nil {
		return "", err
	}
	var found []string
	for _, id := range ids {
		if strings.HasSuffix(id, "/"+ref) {
			found = append(found, id)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%w: no set named %s has a rollout in waves (knit fleet status lists a set whose spec.rollout.waves rolled a change)", store.ErrNotFound, ref)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%w: sets %s are all named %s: write TEAM/%s", store.ErrConflict, strings.Join(found, ", "), ref, ref)
}

// FleetOptions name a set's rollout, the operator's action on it
// (fleet.Actions) and who acts, why.
type FleetOptions struct {
	Set, Action   string
	Actor, Reason string
}

// FleetAction is an operator's resume, retry, skip or abort of a set's
// rollout in waves (audited as Actor, "fleet-ACTION"); a set of a team
// the caller may not see is ErrForbidden, an action that does not apply
// now ErrConflict. The GitOps reconciler carries the change out.
type FleetAction struct {
	k *Knit
	FleetOptions
}

// NewFleetAction is the action opts name on k.
func NewFleetAction(k *Knit, opts FleetOptions) *FleetAction {
	return &FleetAction{k: k, FleetOptions: opts}
}

// Run applies the action and returns the fleet after it.
func (a *FleetAction) Run(ctx context.Context) (view.Fleet, error) {
	rs := NewFleetReads(a.k)
	id, err := rs.id(ctx, a.Set)
	if err != nil {
		return view.Fleet{}, err
	}
	for try := 0; ; try++ {
		rec, err := a.k.store.WaveRollout(ctx, id)
		if err != nil {
			return view.Fleet{}, err
		}
		if !visibleTo(ctx, rec.Team) {
			return view.Fleet{}, fmt.Errorf("%w: set %s belongs to another team", ErrForbidden, id)
		}
		r, err := decodeRollout(rec)
		if err != nil {
			return view.Fleet{}, err
		}
		did, err := fleet.Act(r, a.Action, a.k.now())
		if errors.Is(err, fleet.ErrNotNow) {
			return view.Fleet{}, fmt.Errorf("%w: %v", store.ErrConflict, err)
		} else if err != nil {
			return view.Fleet{}, err
		}
		audit := &store.AuditEvent{Env: id, Actor: a.Actor, Action: "fleet-" + a.Action, Reason: a.Reason,
			Detail: fmt.Sprintf("rollout of commit %s: %s", r.Commit, did)}
		err = a.k.State().PutWaveRollout(ctx, r, rec.Version, audit)
		if errors.Is(err, store.ErrConflict) && try < 5 {
			continue // the reconciler wrote meanwhile: judge the action again
		}
		if err != nil {
			return view.Fleet{}, err
		}
		fleetChanged(a.k)
		return rs.Status(ctx, id, nil)
	}
}

// SetFleetNudge makes an operator's fleet action call fn once it is
// recorded: the GitOps reconciler's nudge, so the action takes effect now
// rather than at its next poll.
func (s *ServerState) SetFleetNudge(fn func()) { s.k.fleetNudge.Store(&fn) }

func fleetChanged(k *Knit) {
	if fn := k.fleetNudge.Load(); fn != nil {
		(*fn)()
	}
}
