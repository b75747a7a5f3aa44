//go:build !unix

package filelock

import "context"

// Lock is a no-op where flock is unavailable: callers' in-process mutexes
// still serialise one knit process; separate processes sharing a folder are
// unsafe there.
func Lock(ctx context.Context, path string) (func(), error) {
	return func() {}, ctx.Err()
}

// LockShared is a no-op like Lock.
func LockShared(ctx context.Context, path string) (func(), error) {
	return func() {}, ctx.Err()
}
