package knit_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// TestRevokedTokenRefused: a token is refused the moment it is revoked
// through the same Knit, though it was just accepted (and so remembered);
// revoked by another process on the same data directory, within a second.
func TestRevokedTokenRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: dir, Now: clock.Now}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	other, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: dir, Now: clock.Now}}) // as another process would
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	accepted := func(secret string) bool {
		t.Helper()
		_, err := k.Authenticate(ctx, secret)
		if err != nil && !errors.Is(err, knit.ErrUnauthenticated) {
			t.Fatal(err)
		}
		return err == nil
	}

	here, _, err := knit.NewCreateToken(k, "here", "viewer", nil, "test").Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !accepted(here) || !accepted(here) {
		t.Fatal("a live token refused")
	}
	if err := knit.NewRevokeToken(k, "here", "test").Run(ctx); err != nil {
		t.Fatal(err)
	}
	if accepted(here) {
		t.Error("a token revoked through the same Knit still accepted")
	}

	there, _, err := knit.NewCreateToken(k, "there", "viewer", nil, "test").Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !accepted(there) {
		t.Fatal("a live token refused")
	}
	if err := knit.NewRevokeToken(other, "there", "test").Run(ctx); err != nil {
		t.Fatal(err)
	}
	clock.add(time.Second)
	if accepted(there) {
		t.Error("a token revoked by another process still accepted a second later")
	}
}

// TestTokenNames: lower-case letters, digits, '.', '_' and '-', starting
// with a letter or digit, at most 63 of them.
func TestTokenNames(t *testing.T) {
	ctx := context.Background()
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	long := strings.Repeat("a", 63)
	for name, ok := range map[string]bool{
		"ci": true, "ci-bot.2_x": true, "9lives": true, long: true,
		long + "a": false, "": false, "-ci": false, ".ci": false, "CI": false, "c i": false, "ci/bot": false,
	} {
		_, _, err := knit.NewCreateToken(k, name, "viewer", nil, "test").Run(ctx)
		if (err == nil) != ok {
			t.Errorf("CreateToken(%q): error %v, want accepted %v", name, err, ok)
		}
	}
}
