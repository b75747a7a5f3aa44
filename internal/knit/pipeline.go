package knit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// Audit actions of promotion pipelines.
const (
	AuditPromote        = "promote"         // a release entered, passed or failed a stage
	AuditPromoteApprove = "promote-approve" // a person approved a release entering a stage
	AuditPromoteForce   = "promote-force"   // an admin promoted past the gates
)

// ErrOwnRelease is the author of a release approving its entry into a
// stage that requires another approver.
var ErrOwnRelease = fmt.Errorf("%w: the stage requires another approver than the release's author", ErrForbidden)

// PipelineFacts is everything the promotion rules read of one pipeline.
type PipelineFacts struct {
	Def       spec.Pipeline
	Record    view.PipelineRecord
	Releases  []view.ReleaseRecord // newest first
	States    []view.StageState
	Approvals []view.PromotionApproval
	// Envs are the stage environments' IDs, by stage (as the controller
	// last resolved them; empty until it did).
	Envs map[string]string
	// Files are what the controller knows of each stage's own file, by
	// stage (none until it read one).
	Files map[string]view.StageFileRecord
}

// PutPipeline records a pipeline's definition as read from commit.
//
// Every stage's environment must be of the pipeline's team: a pipeline's
// operators promote and roll back its stages, so a stage in another team
// would let them act on environments they cannot see (ErrForbidden).
func (k *Knit) PutPipeline(ctx context.Context, p *spec.Pipeline, commit string, envs map[string]string) error {
	for stage, env := range envs {
		if team, _, _ := strings.Cut(env, "/"); team != p.Spec.TeamName {
			return fmt.Errorf("%w: stage %s of pipeline %s is environment %s, not one of team %s", ErrForbidden, stage, p.Metadata.Name, env, p.Spec.TeamName)
		}
	}
	def, err := json.Marshal(struct {
		Def  *spec.Pipeline    `json:"def"`
		Envs map[string]string `json:"envs"`
	}{p, envs})
	if err != nil {
		return err
	}
	return k.store.PutPipeline(ctx, store.Pipeline{Name: p.Metadata.Name, Team: p.Spec.TeamName, Definition: def, Commit: commit, UpdatedAt: k.now()})
}

// AddRelease records a release (once: releases are content-addressed);
// created is false for one known already. A release a caller's token
// adds is that token's: its name is the author, verified; else the
// author is as r says (the promotion controller's: a commit's signer,
// verified, or the name an unsigned commit claims, not verified).
func (k *Knit) AddRelease(ctx context.Context, r store.Release) (view.ReleaseRecord, bool, error) {
	if t, ok := caller(ctx); ok {
		r.Author, r.AuthorVerified = t.Name, true
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = k.now()
	}
	rec, created, err := k.store.AddRelease(ctx, r)
	return releaseRecord(rec), created, err
}

// SetStage records a release's state in a stage, from the state the
// caller saw (store.ErrConflict when it changed), audited on env.
func (k *Knit) SetStage(ctx context.Context, s view.StageState, from, env string) error {
	if s.ChangedAt.IsZero() {
		s.ChangedAt = k.now()
	}
	detail := fmt.Sprintf("release %s %s in stage %s of pipeline %s", s.Release, s.State, s.Stage, s.Pipeline)
	if s.Reason != "" {
		detail += " (" + s.Reason + ")"
	}
	return k.store.SetStage(ctx, store.StageState(s), from, &store.AuditEvent{Env: env, Actor: s.Actor, Action: AuditPromote, RunID: s.RunID,
		Reason: s.Reason, Detail: detail, Time: s.ChangedAt})
}

// PipelineNames lists every pipeline the caller may see.
func (rs *Records) PipelineNames(ctx context.Context) ([]string, error) {
	k := rs.k
	ps, err := k.store.ListPipelines(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range ps {
		if visibleTo(ctx, p.Team) {
			out = append(out, p.Name)
		}
	}
	return out, nil
}

// Facts reads everything about pipeline name the rules need; a pipeline
// of a team the caller may not see is ErrForbidden.
func (k *Knit) Facts(ctx context.Context, name string) (*PipelineFacts, error) {
	rec, err := k.store.Pipeline(ctx, name)
	if err != nil {
		return nil, err
	}
	if !visibleTo(ctx, rec.Team) {
		return nil, fmt.Errorf("%w: pipeline %s belongs to another team", ErrForbidden, name)
	}
	f := &PipelineFacts{Record: pipelineRecord(rec)}
	var def struct {
		Def  spec.Pipeline     `json:"def"`
		Envs map[string]string `json:"envs"`
	}
	if err := json.Unmarshal(rec.Definition, &def); err != nil {
		return nil, fmt.Errorf("pipeline %s: %w", name, err)
	}
	f.Def, f.Envs = def.Def, def.Envs
	rs, err := k.store.Releases(ctx, name)
	if err != nil {
		return nil, err
	}
	f.Releases = mapAll(rs, releaseRecord)
	states, err := k.store.StageStates(ctx, name)
	if err != nil {
		return nil, err
	}
	approvals, err := k.store.PromotionApprovals(ctx, name)
	if err != nil {
		return nil, err
	}
	f.States, f.Approvals = mapAll(states, stageStateRecord), mapAll(approvals, promotionApprovalRecord)
	files, err := k.store.StageFiles(ctx, name)
	if err != nil {
		return nil, err
	}
	f.Files = map[string]view.StageFileRecord{}
	for _, sf := range files {
		f.Files[sf.Stage] = stageFileRecord(sf)
	}
	return f, nil
}

// PipelineStatus is the status of pipeline name now.
func (rs *Records) PipelineStatus(ctx context.Context, name string) (view.Pipeline, error) {
	k := rs.k
	f, err := k.Facts(ctx, name)
	if err != nil {
		return view.Pipeline{}, err
	}
	p := f.Status(k.now())
	for i, st := range p.Stages {
		e, err := k.store.Environment(ctx, st.Env)
		if errors.Is(err, store.ErrNotFound) {
			continue // never applied
		} else if err != nil {
			return p, fmt.Errorf("pipeline %s: stage %s: %w", name, st.Name, err)
		}
		p.Stages[i].EnvStatus = e.Status
	}
	return p, nil
}

// Releases lists pipeline name's releases, newest first, each with its
// history and approvals; with stage set, only releases that reached it.
func (rs *Records) Releases(ctx context.Context, name, stage string) ([]view.Release, error) {
	k := rs.k
	f, err := k.Facts(ctx, name)
	if err != nil {
		return nil, err
	}
	if stage != "" && f.stageIndex(stage) < 0 {
		return nil, fmt.Errorf("%w: pipeline %s has no stage %q (stages: %s)", store.ErrNotFound, name, stage, f.stageNames())
	}
	hist, err := k.store.StageHistory(ctx, name)
	if err != nil {
		return nil, err
	}
	out := []view.Release{}
	for _, r := range f.Releases {
		v := view.Release{ID: r.ID, Seq: r.Seq, Template: r.Template, Params: json.RawMessage(r.Params), Commit: r.Commit,
			Author: r.Author, AuthorVerified: r.AuthorVerified, Message: r.Message, CreatedAt: r.CreatedAt, Stages: map[string]view.StageRelease{},
			History: []view.ReleaseEvent{}, Approvals: []view.ReleaseApproval{}}
		for _, s := range f.States {
			if s.Release == r.ID {
				v.Stages[s.Stage] = stageRelease(s)
			}
		}
		if _, ok := v.Stages[stage]; stage != "" && !ok {
			continue
		}
		for _, e := range hist {
			if e.Release == r.ID {
				v.History = append(v.History, view.ReleaseEvent{Stage: e.Stage, State: e.State, Reason: e.Reason,
					Message: e.Message, RunID: e.RunID, Actor: e.Actor, At: e.ChangedAt})
			}
		}
		for _, a := range f.Approvals {
			if a.Release == r.ID {
				v.Approvals = append(v.Approvals, view.ReleaseApproval{Stage: a.Stage, Actor: a.Actor, Reason: a.Reason, At: a.ApprovedAt})
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// inTeam refuses to act on a stage whose environment is not of the
// pipeline's team (a definition recorded before PutPipeline checked it).
func (f *PipelineFacts) inTeam(stage string) error {
	if env := f.Envs[stage]; env != "" && !strings.HasPrefix(env, f.Record.Team+"/") {
		return fmt.Errorf("%w: stage %s of pipeline %s is environment %s of another team than %s", ErrForbidden, stage, f.Record.Name, env, f.Record.Team)
	}
	return nil
}

func (f *PipelineFacts) stageIndex(name string) int {
	for i, s := range f.Def.Spec.Stages {
		if s.Name == name {
			return i
		}
	}
	return -1
}

func (f *PipelineFacts) stageNames() string {
	var names []string
	for _, s := range f.Def.Spec.Stages {
		names = append(names, s.Name)
	}
	return fmt.Sprint(names)
}

func (f *PipelineFacts) release(id string) *view.ReleaseRecord {
	for i := range f.Releases {
		if f.Releases[i].ID == id {
			return &f.Releases[i]
		}
	}
	return nil
}

func (f *PipelineFacts) state(release, stage string) *view.StageState {
	for i := range f.States {
		if f.States[i].Release == release && f.States[i].Stage == stage {
			return &f.States[i]
		}
	}
	return nil
}

func (f *PipelineFacts) seq(release string) int64 {
	if r := f.release(release); r != nil {
		return r.Seq
	}
	return 0
}

func stageRelease(s view.StageState) view.StageRelease {
	return view.StageRelease{Release: s.Release, State: s.State, Reason: s.Reason, Message: s.Message, RunID: s.RunID,
		ChangedAt: s.ChangedAt, VerifiedAt: s.VerifiedAt}
}

// Status applies the promotion rules at now: for each stage the release it
// holds, the last one tried, and the one next in line with why it waits.
func (f *PipelineFacts) Status(now time.Time) view.Pipeline {
	p := view.Pipeline{Name: f.Record.Name, Team: f.Record.Team, Commit: f.Record.Commit, Stages: []view.Stage{}}
	for i, st := range f.Def.Spec.Stages {
		v := view.Stage{Name: st.Name, Env: f.Envs[st.Name], Soak: st.Soak, Windows: st.Windows.Words()}
		if st.Approval != nil {
			v.Approvals, v.RequireOtherApprover = st.Approval.Required, st.Approval.RequireOtherApprover
		}
		// Last is the release that changed here last, Current the one
		// verified last (a rollback makes an older release current again);
		// newest is the newest release ever tried here.
		var newest int64
		var busy *view.StageRelease
		for _, s := range f.States {
			if s.Stage != st.Name {
				continue
			}
			sr, seq := stageRelease(s), f.seq(s.Release)
			newest = max(newest, seq)
			if v.Last == nil || s.ChangedAt.After(v.Last.ChangedAt) || s.ChangedAt.Equal(v.Last.ChangedAt) && seq > f.seq(v.Last.Release) {
				v.Last = &sr
			}
			if s.State == store.StageSucceeded && (v.Current == nil || s.VerifiedAt.After(v.Current.VerifiedAt)) {
				v.Current = &sr
			}
			if s.State == store.StageApplying || s.State == store.StageQueued {
				busy = &sr
			}
		}
		v.RollbackTo = f.rollbackTarget(st.Name, v.Current)
		v.ApplyStageChanges, v.StageChange = spec.StageChangesImmediate, f.stageChange(i, busy != nil)
		if f.Def.StageChangesWait(i) {
			v.ApplyStageChanges = spec.StageChangesPending
		}
		if c := v.StageChange; busy == nil && c != nil && c.State == view.StageChangeApplying {
			busy = &view.StageRelease{Release: c.Release, State: store.StageApplying, RunID: c.RunID, Reason: c.Reason, Message: c.Message}
		}
		// One release applies at a time; a newer one verified in the stage
		// before replaces one that failed here (which never moves on).
		switch {
		case busy != nil:
			reason, msg := view.WaitApplying, "run "+busy.RunID+" applies it"
			if busy.RunID == "" && st.IsFleet() { // its rollout in waves says where it is
				msg = busy.Message
			}
			if v.StageChange != nil && busy.RunID == v.StageChange.RunID && busy.RunID != "" {
				msg = "run " + busy.RunID + " applies stage change " + v.StageChange.ID + " to it"
			}
			switch {
			case busy.State == store.StageQueued:
				msg = "queued: " + busy.Message
			case busy.Reason == view.WaitPaused: // its rollout waits for a person
				reason, msg = view.WaitPaused, busy.Message
			case busy.Reason == view.WaitAwaitingApproval: // its run waits at the environment's gate
				reason, msg = view.WaitAwaitingApproval, busy.Message
			}
			v.Waiting = &view.Waiting{Release: busy.Release, Reason: reason, Message: msg}
		case i > 0:
			v.Waiting = f.candidate(i, newest, now)
			if c := v.StageChange; v.Waiting != nil && v.Waiting.Reason == view.WaitReady && c != nil && c.Reason == view.WaitAwaitingApproval {
				// A release never carries a change of the stage's file
				// nobody approved: the change goes first.
				v.Waiting.Reason = view.WaitAwaitingApproval
				v.Waiting.Message = fmt.Sprintf("the change %s of %s's own file is pending: approve it first (knit promote %s --change %s --to %s)",
					c.ID, st.Name, f.Record.Name, c.ID, st.Name)
			}
		}
		if v.Waiting == nil && v.Last != nil && v.Last.State == store.StageFailed {
			v.Waiting = &view.Waiting{Release: v.Last.Release, Reason: v.Last.Reason, Message: v.Last.Message}
		}
		p.Stages = append(p.Stages, v)
	}
	return p
}

// candidate is the newest release verified in stage i-1 and newer than
// any tried in stage i, and why it does not enter stage i yet (Ready when
// nothing holds it back); nil when there is none.
func (f *PipelineFacts) candidate(i int, newest int64, now time.Time) *view.Waiting {
	prev, st := f.Def.Spec.Stages[i-1], f.Def.Spec.Stages[i]
	var c *view.StageState
	for j := range f.States {
		s := &f.States[j]
		if s.Stage == prev.Name && s.State == store.StageSucceeded && f.seq(s.Release) > newest &&
			(c == nil || f.seq(s.Release) > f.seq(c.Release)) {
			c = s
		}
	}
	if c == nil {
		return nil
	}
	w := &view.Waiting{Release: c.Release}
	var approvers []string
	rule := approvalOf(st, f.release(c.Release))
	w.Approval = rule.view()
	for _, a := range f.Approvals {
		if a.Release != c.Release || a.Stage != st.Name {
			continue
		}
		w.Approvals = append(w.Approvals, a.Actor)
		w.Forced = w.Forced || a.Forced
		if rule.counts(a.Actor) {
			approvers = append(approvers, a.Actor)
		}
	}
	soakEnd := c.VerifiedAt.Add(prev.SoakDuration())
	switch {
	case w.Forced:
		w.Reason, w.Message = view.WaitReady, "forced past its gates"
	case now.Before(soakEnd):
		w.Reason, w.Until = view.WaitSoaking, soakEnd
		w.Message = fmt.Sprintf("soaking in %s until %s", prev.Name, soakEnd.UTC().Format(time.RFC3339))
	case !st.Windows.Open(now):
		w.Reason, w.Until = view.WaitWindowClosed, st.Windows.NextChange(now)
		w.Message = "no promotion window of " + st.Name + " is open"
	case len(approvers) < rule.required:
		w.Reason, w.Message = view.WaitAwaitingApproval, rule.waitMessage(len(approvers))
	default:
		w.Reason, w.Message = view.WaitReady, "every gate is open"
	}
	return w
}

// IsFleet reports whether stage name rolls releases across a selector's
// environments in waves (spec.StageFleet).
func (f *PipelineFacts) IsFleet(name string) bool {
	i := f.stageIndex(name)
	return i >= 0 && f.Def.Spec.Stages[i].IsFleet()
}

// StageIndex is the index of stage name (-1: none).
func (f *PipelineFacts) StageIndex(name string) int { return f.stageIndex(name) }

// ReleaseByID is the release of that ID (nil: none).
func (f *PipelineFacts) ReleaseByID(id string) *view.ReleaseRecord { return f.release(id) }
