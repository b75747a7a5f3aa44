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
	// fleet is settingFleet ("": unset).
	fleet          string
	policies       bool
	wants          map[string]gitWant
	files, invalid map[string]string
	// valid are environments whose newest revision was read and is not
	// an invalid file's (see wantFor); recording an invalid file's
	// revision drops its environment.
	valid map[string]bool
	// fresh are the pending wants this memo wrote: no run of one can
	// have started that this server did not queue (startedBefore need
	// not ask the store).
	fresh map[string]bool
}

// state is the reconciler's state, read from the store when the memo is
// not loaded. The caller holds g.mu and changes nothing it returns.
func (g *Reconciler) state(ctx context.Context) (*gitMemo, error) {
	return g.memo.read(ctx, g.k)
}

// read returns m, read from k's store first unless loaded.
func (m *gitMemo) read(ctx context.Context, k *knit.Knit) (*gitMemo, error) {
	if m.loaded {
		return m, nil
	}
	loaded, err := loadMemo(ctx, k)
	if err != nil {
		return nil, err
	}
	*m = loaded
	return m, nil
}

func loadMemo(ctx context.Context, k *knit.Knit) (gitMemo, error) {
	m := gitMemo{loaded: true, valid: map[string]bool{}, fresh: map[string]bool{}}
	rs := knit.NewRecords(k)
	var err error
	if m.commit, err = optionalSetting(ctx, rs, settingCommit); err != nil {
		return m, fmt.Errorf("read the last commit: %w", err)
	}
	if m.branches, err = optionalSetting(ctx, rs, settingBranches); err != nil {
		return m, fmt.Errorf("read the last branches: %w", err)
	}
	if m.fleet, err = optionalSetting(ctx, rs, settingFleet); err != nil {
		return m, fmt.Errorf("read what the environments generators read: %w", err)
	}
	policies, err := optionalSetting(ctx, rs, knit.SettingRepoPolicies)
	if err != nil {
		return m, fmt.Errorf("read the repository's policies: %w", err)
	}
	m.policies = policies != ""
	raw, err := rs.Settings(ctx, settingWant)
	if err != nil {
		return m, err
	}
	m.wants = make(map[string]gitWant, len(raw))
	for key, v := range raw {
		var w gitWant
		if err := json.Unmarshal([]byte(v), &w); err != nil {
			return m, fmt.Errorf("setting %s: %w", key, err)
		}
		m.wants[strings.TrimPrefix(key, settingWant)] = w
	}
	if m.files, err = settingsByName(ctx, k, settingFile); err != nil {
		return m, err
	}
	if m.invalid, err = settingsByName(ctx, k, settingInvalid); err != nil {
		return m, err
	}
	return m, nil
}

func optionalSetting(ctx context.Context, rs *knit.Records, key string) (string, error) {
	v, err := rs.Setting(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return v, err
}

// write writes kv to k's store ("" deletes a key) in one transaction and
// keeps m as the store now is; a write that fails forgets m. The caller
// holds g.mu.
func (m *gitMemo) write(ctx context.Context, k *knit.Knit, kv map[string]string) error {
	if err := k.State().SetSettings(ctx, kv); err != nil {
		*m = gitMemo{}
		return err
	}
	if !m.loaded {
		return nil
	}
	for key, v := range kv {
		switch {
		case key == settingCommit:
			m.commit = v
		case key == settingBranches:
			m.branches = v
		case key == settingFleet:
			m.fleet = v
		case key == knit.SettingRepoPolicies:
			m.policies = v != ""
		case strings.HasPrefix(key, settingWant):
			if err := m.setWant(strings.TrimPrefix(key, settingWant), v); err != nil {
				*m = gitMemo{}
				return nil // written; the memo is read again
			}
		case strings.HasPrefix(key, settingFile):
			setOrDelete(m.files, strings.TrimPrefix(key, settingFile), v)
		case strings.HasPrefix(key, settingInvalid):
			setOrDelete(m.invalid, strings.TrimPrefix(key, settingInvalid), v)
		}
	}
	return nil
}

func (m *gitMemo) setWant(id, v string) error {
	if v == "" {
		delete(m.wants, id)
		delete(m.fresh, id)
		return nil
	}
	var w gitWant
	if err := json.Unmarshal([]byte(v), &w); err != nil {
		return err
	}
	m.wants[id] = w
	if w.Pending {
		m.fresh[id] = true
	} else {
		delete(m.fresh, id)
	}
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

// pendingWant is a want no run of which started yet; fresh: this memo
// wrote it (gitMemo.fresh).
type pendingWant struct {
	gitWant
	fresh bool
}

// pending are the wants no run of which started yet.
func (m *gitMemo) pending() map[string]pendingWant {
	out := map[string]pendingWant{}
	for id, w := range m.wants {
		if w.Pending {
			out[id] = pendingWant{w, m.fresh[id]}
		}
	}
	return out
}
