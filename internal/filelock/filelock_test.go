//go:build unix

package filelock_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"knit.dev/knit/internal/filelock"
)

func TestLockExcludesUntilReleased(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "lock")
	unlock, err := filelock.Lock(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	// A second holder waits: its context ends before it gets the lock.
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := filelock.Lock(short, p); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock while held: err = %v, want context.DeadlineExceeded", err)
	}
	unlock()
	again, err := filelock.Lock(context.Background(), p)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	again()
}

func TestSharedHoldersExcludeAnExclusiveOne(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "lock")
	ctx := context.Background()
	a, err := filelock.LockShared(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := filelock.LockShared(ctx, p)
	if err != nil {
		t.Fatalf("second shared holder: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := filelock.Lock(short, p); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("exclusive Lock while shared holders: err = %v, want context.DeadlineExceeded", err)
	}
	a()
	b()
	ex, err := filelock.Lock(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	short2, cancel2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel2()
	if _, err := filelock.LockShared(short2, p); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shared Lock while held exclusively: err = %v, want context.DeadlineExceeded", err)
	}
	ex()
}
