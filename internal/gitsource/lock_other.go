//go:build !unix

package gitsource

import "context"

// lockFile is a no-op where flock is unavailable: the in-process mutex still
// serialises one knit process; separate processes sharing a cache are unsafe.
func lockFile(ctx context.Context, path string) (func(), error) {
	return func() {}, ctx.Err()
}
