package storetest

import (
	"errors"
	"testing"
	"time"

	"knit.dev/knit/internal/store"
)

func testTokens(t *testing.T, s store.Store) {
	ctx := t.Context()
	ci := store.Token{Name: "ci", Hash: "h1", Role: store.RoleOperator, Teams: []string{"pay", "web"}, CreatedBy: "root", CreatedAt: at(0)}
	must(t, s.CreateToken(ctx, ci))
	if err := s.CreateToken(ctx, store.Token{Name: "ci", Hash: "h2", Role: store.RoleViewer}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second live token named ci: %v, want ErrConflict", err)
	}
	got, err := s.TokenByHash(ctx, "h1")
	must(t, err)
	equal(t, "token by hash", got, ci)
	_, err = s.TokenByHash(ctx, "nope")
	wantNotFound(t, err, "unknown hash")
	must(t, s.RevokeToken(ctx, "ci", at(time.Hour)))
	_, err = s.TokenByHash(ctx, "h1")
	wantNotFound(t, err, "revoked token")
	wantNotFound(t, s.RevokeToken(ctx, "ci", at(time.Hour)), "revoking twice")
	must(t, s.CreateToken(ctx, store.Token{Name: "ci", Hash: "h3", Role: store.RoleViewer, CreatedAt: at(2 * time.Hour)}))
	all, err := s.ListTokens(ctx)
	must(t, err)
	if len(all) != 1 || all[0].Hash != "h3" || all[0].Role != store.RoleViewer {
		t.Errorf("tokens %+v", all)
	}

	_, err = s.Setting(ctx, "git.commit")
	wantNotFound(t, err, "unset setting")
	must(t, s.SetSetting(ctx, "git.commit", "abc"))
	must(t, s.SetSetting(ctx, "git.commit", "def"))
	if v, err := s.Setting(ctx, "git.commit"); err != nil || v != "def" {
		t.Errorf("setting %q %v", v, err)
	}

	// Several settings are written in one transaction; "" deletes one.
	must(t, s.SetSettings(ctx, map[string]string{"git.env:a/b": "1", "git.env:c/d": "2", "git.envx": "3"}))
	must(t, s.SetSettings(ctx, map[string]string{"git.env:c/d": "", "git.env:e/f": "4"}))
	kv, err := s.Settings(ctx, "git.env:")
	must(t, err)
	if len(kv) != 2 || kv["git.env:a/b"] != "1" || kv["git.env:e/f"] != "4" {
		t.Errorf("settings with prefix git.env: = %v", kv)
	}
	// A prefix covers exactly the keys that start with it: not the key
	// one byte short of it, nor the next byte's (';' follows ':').
	must(t, s.SetSettings(ctx, map[string]string{"git.env": "5", "git.env;x": "6", "git.env:\u00e9": "7", "git.env:~": "8"}))
	kv, err = s.Settings(ctx, "git.env:")
	must(t, err)
	if len(kv) != 4 || kv["git.env:\u00e9"] != "7" || kv["git.env:~"] != "8" {
		t.Errorf("settings with prefix git.env: = %v", kv)
	}
	if all, err := s.Settings(ctx, ""); err != nil || len(all) != 8 {
		t.Errorf("settings with the empty prefix = %v, %v; want all 8", all, err)
	}
	if none, err := s.Settings(ctx, "nothing:"); err != nil || len(none) != 0 {
		t.Errorf("settings with an unused prefix = %v, %v", none, err)
	}
}
