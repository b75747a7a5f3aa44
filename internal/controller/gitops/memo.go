package gitops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// gitMemo is what the reconciler's settings hold (the last commit, the
// branches, the wants, the files' environments, the invalid files'
// records), kept in memory while this server holds the watcher's lease:
// the holder is the one writer of them, so a poll that finds the branch
// where it was reads no row of the store. It is read from the store
// whenever this server takes the lease, and after a write of them fails
// (the store may or may not hold it). g.mu guards it.
type gitMemo struct {
	loaded bool
	// commit and branches are settingCommit and settingBranches ("":
	// unset); policies: SettingRepoPolicies is set.
	commit, branches string
	policies         bool
	wants            map[string]gitWant
	files, invalid   map[string]string
	// valid are environments whose newest revision was read and is not
	// an invalid file's (see wantFor); recording an invalid file's
	// revision drops its environment.
	valid map[string]bool
}

// forgetMemo makes the next read of the reconciler's state come from the
// store: this server has just taken the lease (another may have written
// meanwhile) or lost it.
func (g *Reconciler) forgetMemo() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.memo = gitMemo{}
}

// state is the reconciler's state, read from the store when the memo is
// not loaded. The caller holds g.mu and changes nothing it returns.
func (g *Reconciler) state(ctx context.Context) (*gitMemo, error) {
	if g.memo.loaded {
		return &g.memo, nil
	}
	m := gitMemo{loaded: true, valid: map[string]bool{}}
	rs := knit.NewRecords(g.k)
	var err error
	if m.commit, err = optionalSetting(ctx, rs, settingCommit); err != nil {
		return nil, fmt.Errorf("read the last commit: %w", err)
	}
	if m.branches, err = optionalSetting(ctx, rs, settingBranches); err != nil {
		return nil, fmt.Errorf("read the last branches: %w", err)
	}
	policies, err := optionalSetting(ctx, rs, knit.SettingRepoPolicies)
	if err != nil {
		return nil, fmt.Errorf("read the repository's policies: %w", err)
	}
	m.policies = policies != ""
	raw, err := rs.Settings(ctx, settingWant)
	if err != nil {
		return nil, err
	}
	m.wants = make(map[string]gitWant, len(raw))
	for k, v := range raw {
		var w gitWant
		if err := json.Unmarshal([]byte(v), &w); err != nil {
			return nil, fmt.Errorf("setting %s: %w", k, err)
		}
		m.wants[strings.TrimPrefix(k, settingWant)] = w
	}
	if m.files, err = settingsByName(ctx, g.k, settingFile); err != nil {
		return nil, err
	}
	if m.invalid, err = settingsByName(ctx, g.k, settingInvalid); err != nil {
		return nil, err
	}
	g.memo = m
	return &g.memo, nil
}

func optionalSetting(ctx context.Context, rs *knit.Records, key string) (string, error) {
	v, err := rs.Setting(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return v, err
}

// writeSettings writes kv ("" deletes a key) in one transaction and keeps
// the memo as the store now is; a write that fails forgets the memo. The
// caller holds g.mu.
func (g *Reconciler) writeSettings(ctx context.Context, kv map[string]string) error {
	if err := g.k.State().SetSettings(ctx, kv); err != nil {
		g.memo = gitMemo{}
		return err
	}
	if !g.memo.loaded {
		return nil
	}
	m := &g.memo
	for k, v := range kv {
		switch {
		case k == settingCommit:
			m.commit = v
		case k == settingBranches:
			m.branches = v
		case k == knit.SettingRepoPolicies:
			m.policies = v != ""
		case strings.HasPrefix(k, settingWant):
			if err := m.setWant(strings.TrimPrefix(k, settingWant), v); err != nil {
				g.memo = gitMemo{}
				return nil // written; the memo is read again
			}
		case strings.HasPrefix(k, settingFile):
			setOrDelete(m.files, strings.TrimPrefix(k, settingFile), v)
		case strings.HasPrefix(k, settingInvalid):
			setOrDelete(m.invalid, strings.TrimPrefix(k, settingInvalid), v)
		}
	}
	return nil
}

func (m *gitMemo) setWant(id, v string) error {
	if v == "" {
		delete(m.wants, id)
		return nil
	}
	var w gitWant
	if err := json.Unmarshal([]byte(v), &w); err != nil {
		return err
	}
	m.wants[id] = w
	return nil
}

func setOrDelete(m map[string]string, k, v string) {
	if v == "" {
		delete(m, k)
	} else {
		m[k] = v
	}
}

// gitState reads the wants, the files' environments and the invalid
// files' records: copies the caller may keep after it lets g.mu go. The
// caller holds g.mu.
func (g *Reconciler) gitState(ctx context.Context) (wants map[string]gitWant, files, invalid map[string]string, err error) {
	m, err := g.state(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	return maps.Clone(m.wants), maps.Clone(m.files), maps.Clone(m.invalid), nil
}

// pendingWants are the wants no run of which started yet. The caller
// holds g.mu.
func (g *Reconciler) pendingWants(ctx context.Context) (map[string]gitWant, error) {
	m, err := g.state(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]gitWant{}
	for id, w := range m.wants {
		if w.Pending {
			out[id] = w
		}
	}
	return out, nil
}
