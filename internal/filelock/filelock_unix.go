//go:build unix

package filelock

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// Lock takes an exclusive flock on path, creating the file if needed. It
// waits, polling, while another holder (another process, or another open of
// the same file in this one) has it; when ctx ends first it returns
// ctx.Err(). The returned func releases the lock.
func Lock(ctx context.Context, path string) (func(), error) {
	return lock(ctx, path, syscall.LOCK_EX)
}

// LockShared takes a shared flock on path: any number of shared holders at
// once, none while an exclusive one (Lock) holds it, and the reverse. It
// waits and returns like Lock.
func LockShared(ctx context.Context, path string) (func(), error) {
	return lock(ctx, path, syscall.LOCK_SH)
}

func lock(ctx context.Context, path string, how int) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}
