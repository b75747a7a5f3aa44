package gitops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// Sets generated from environments (spec's environments generator): the
// elements of such a set are the live environments whose labels match,
// read through the library (knit.Fleet) at each commit and each poll.
//
//   - A commit records, beside its wants, what its environments
//     generators read (settingFleet: the teams and a hash of what each
//     read); a poll whose reading differs re-evaluates the last commit, as
//     moved branches do, so an environment applied since gets its
//     generated environment within one poll.
//   - An environment GitOps tears down (its want is a teardown, or the
//     commit no longer declares it) generates nothing from that commit
//     on, so what was generated from it is torn down in the same commit;
//     the producer's own teardown waits until those are (heldTeardown).
//   - Sets are evaluated after every other file of the commit, so that
//     they see which environments the commit tears down.

// settingFleet is the teams whose live environments the last recorded
// commit's environments generators read, with a hash of what they read
// (fleetMemo as JSON; unset: no such generator).
const settingFleet = "git.fleet"

// errDeferred is what a set's live source answers in the first pass of a
// commit: the set is evaluated after the other files.
var errDeferred = errors.New("evaluated after the other files")

// fleetMemo is settingFleet's value.
type fleetMemo struct {
	Teams []string `json:"teams"`
	Sum   string   `json:"sum"`
}

// setInputs is what a set file's generators read: the repository's
// branches, and live(team), the live environments as the set's team reads
// them (nil: none).
type setInputs struct {
	branches []string
	live     func(team string) ([]spec.LiveEnvironment, error)
}

// fleetPass is what one evaluation of a commit's sets read of the fleet:
// the live environments by team, read once each, less those going (torn
// down by GitOps).
type fleetPass struct {
	ctx    context.Context
	fleet  *knit.Fleet
	going  map[string]bool
	byTeam map[string][]spec.LiveEnvironment // as the library answered
}

func newFleetPass(ctx context.Context, f *knit.Fleet, going map[string]bool) *fleetPass {
	return &fleetPass{ctx: ctx, fleet: f, going: going, byTeam: map[string][]spec.LiveEnvironment{}}
}

// live is team's live environments less those going.
func (p *fleetPass) live(team string) ([]spec.LiveEnvironment, error) {
	all, ok := p.byTeam[team]
	if !ok {
		live, err := p.fleet.Live(p.ctx, team)
		if err != nil {
			return nil, fmt.Errorf("read the live environments team %s reads: %w", team, err)
		}
		all = knit.SetInputs(live)
		p.byTeam[team] = all
	}
	return p.without(all), nil
}

func (p *fleetPass) without(all []spec.LiveEnvironment) []spec.LiveEnvironment {
	out := make([]spec.LiveEnvironment, 0, len(all))
	for _, e := range all {
		if !p.going[e.ID()] {
			out = append(out, e)
		}
	}
	return out
}

// memo is what the pass read, as settingFleet records it ("" when it
// read nothing).
func (p *fleetPass) memo() string {
	if len(p.byTeam) == 0 {
		return ""
	}
	m := fleetMemo{}
	h := sha256.New()
	for team := range p.byTeam {
		m.Teams = append(m.Teams, team)
	}
	sort.Strings(m.Teams)
	for _, team := range m.Teams {
		b, _ := json.Marshal(p.without(p.byTeam[team])) // plain values read from JSON: cannot fail
		fmt.Fprintf(h, "%s\x00%s\x00", team, b)
	}
	m.Sum = hex.EncodeToString(h.Sum(nil))
	b, _ := json.Marshal(m)
	return string(b)
}

// tornDownByGit are the environments whose want is a teardown: they
// generate nothing.
func tornDownByGit(wants map[string]gitWant) map[string]bool {
	going := map[string]bool{}
	for id, w := range wants {
		if w.Teardown {
			going[id] = true
		}
	}
	return going
}

// fleetWatch is what the reconciler reads of the fleet: the live
// environments, and which environments were generated from which.
type fleetWatch struct {
	k     *knit.Knit
	fleet *knit.Fleet
	log   *slog.Logger
}

// moved reports whether the live environments the last commit's
// environments generators read (recorded, settingFleet) differ now.
func (f fleetWatch) moved(ctx context.Context, recorded string, wants map[string]gitWant) (bool, error) {
	if recorded == "" {
		return false, nil
	}
	var m fleetMemo
	if err := json.Unmarshal([]byte(recorded), &m); err != nil {
		return true, nil // unreadable: evaluate again, which rewrites it
	}
	pass := newFleetPass(ctx, f.fleet, tornDownByGit(wants))
	for _, team := range m.Teams {
		if _, err := pass.live(team); err != nil {
			return false, err
		}
	}
	return pass.memo() != recorded, nil
}

// held names the environments generated from producer id that are
// not torn down yet: its teardown waits for them. A store that cannot be
// read holds it too (the error says why).
func (f fleetWatch) held(ctx context.Context, id string, wants map[string]gitWant) ([]string, error) {
	var left []string
	for gid, w := range wants {
		if w.Element == nil || w.Element.Producer != id {
			continue
		}
		if !w.Teardown {
			left = append(left, gid)
			continue
		}
		e, err := knit.NewRecords(f.k).ResolveEnv(ctx, gid)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, knit.ErrNotFound) {
			continue // never recorded: nothing to tear down
		}
		if err != nil {
			return nil, fmt.Errorf("read %s, generated from %s: %w", gid, id, err)
		}
		if e.Status != store.EnvTornDown && e.AppliedRevision > 0 {
			left = append(left, gid)
		}
	}
	sort.Strings(left)
	return left, nil
}

// laterSet is a set file whose generators read the live environments:
// evaluated after the commit's other files (recordLater).
type laterSet struct {
	path    string
	content []byte
}

// deferLive is the live source of a commit's first pass over its files.
func deferLive(string) ([]spec.LiveEnvironment, error) { return nil, errDeferred }

// recordLater evaluates the sets of later, after every other file of
// commit c: an environment the commit tears down (no file declares it any
// more, or its want is a teardown already) generates nothing. What they
// read is recorded (settingFleet) as the next poll will read it: without
// the environments they no longer generate either.
func recordLater(ctx context.Context, g *Reconciler, c gitwatch.Commit, branches []string, branchesMoved bool, st setState, wants map[string]gitWant, recorded string, later []laterSet) error {
	going := tornDownByGit(wants)
	undecided := map[string]bool{} // what the later sets generated: they say again
	for _, s := range later {
		for _, k := range elementKeys(st.files, s.path) {
			undecided[st.files[k]] = true
		}
	}
	gone := func() {
		for id := range wants {
			if len(st.declared[id]) == 0 && !st.kept[id] && !undecided[id] {
				going[id] = true
			}
		}
	}
	gone()
	pass := newFleetPass(ctx, g.fleet.fleet, going)
	st.live = pass.live
	for _, s := range later {
		if err := g.recordSet(ctx, c, s.path, s.content, branches, branchesMoved, st); err != nil {
			return err
		}
	}
	undecided = nil
	gone()
	if memo := pass.memo(); memo != recorded {
		st.kv[settingFleet] = memo
	}
	return nil
}

// consumersGoing are the environments reading producer id (its
// consumers, applied and not torn down) whose want is a teardown too:
// the commit tears them down first.
func (f fleetWatch) consumersGoing(ctx context.Context, id string, wants map[string]gitWant) ([]string, error) {
	users, err := knit.NewRecords(f.k).Consumers(ctx, id)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, knit.ErrNotFound) {
		return nil, nil // never recorded: nothing reads it
	}
	if err != nil {
		return nil, fmt.Errorf("read what reads %s: %w", id, err)
	}
	var going []string
	for _, c := range users {
		if w, ok := wants[c]; ok && w.Teardown {
			going = append(going, c)
		}
	}
	return going, nil
}

// teardownWaits reports whether the teardown of id must wait for the
// environments generated from it, or reading it and torn down by the same
// commit, to be torn down first; the log says for which (a later poll
// tries again).
func (f fleetWatch) teardownWaits(ctx context.Context, id string, wants map[string]gitWant) bool {
	left, err := f.held(ctx, id, wants)
	var readers []string
	if err == nil {
		readers, err = f.consumersGoing(ctx, id, wants)
	}
	switch {
	case err != nil:
		if ctx.Err() == nil {
			f.log.Error("git: read what was generated from an environment to tear down, or reads it", "env", id, "err", err)
		}
		return true
	case len(left) > 0:
		f.log.Info("git: the teardown waits for the environments generated from it", "env", id, "generated", left)
		return true
	case len(readers) > 0:
		f.log.Info("git: the teardown waits for the environments reading it that the commit tears down", "env", id, "consumers", readers)
		return true
	}
	return false
}
