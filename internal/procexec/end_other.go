//go:build !unix

package procexec

import (
	"context"
	"time"
)

// EndGroup cannot end what a dead knit left where there are no process
// groups: there, nothing is left to end once knit's own process is gone
// (Windows kills no children either, so this is a known gap).
func EndGroup(context.Context, Group, time.Duration) error { return nil }

func killGroup(int)                {}
func groupLive(int) bool           { return false }
func Identify(int) (string, error) { return "", nil }
