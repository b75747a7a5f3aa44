//go:build unix

package procexec

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// EndGroup makes sure process group g is gone: a group left by a knit
// that died (recorded through a Tracker) gets SIGTERM, and SIGKILL once
// grace has passed with members left; EndGroup returns when none is left.
// A group that is already gone, or whose ID now belongs to another process
// (its leader runs with another identity: a group's ID is never reused
// while the group lives, so the recorded group is gone), is left alone and
// nil is returned. It fails with ErrUnknownLeader when a process with the
// group's ID runs and its identity cannot be compared, ErrGroupSurvived
// when members outlive SIGKILL, or ctx's error.
func EndGroup(ctx context.Context, g Group, grace time.Duration) error {
	if g.ID <= 1 {
		return fmt.Errorf("end process group %d: not a group knit started", g.ID)
	}
	if signalable(g.ID) {
		start, err := Identify(g.ID)
		switch {
		case err != nil || g.Start == "" || start == "":
			return fmt.Errorf("end process group %d: %w", g.ID, ErrUnknownLeader)
		case start != g.Start:
			return nil // a stranger has the PID: the tool's group is gone
		}
	}
	if !groupLive(g.ID) {
		return nil
	}
	_ = syscall.Kill(-g.ID, syscall.SIGTERM)
	if waitGone(ctx, g.ID, grace) {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("end process group %d: %w", g.ID, err)
	}
	killGroup(g.ID)
	if !waitGone(ctx, g.ID, killWait) {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("end process group %d: %w", g.ID, err)
		}
		return fmt.Errorf("end process group %d: %w", g.ID, ErrGroupSurvived)
	}
	return nil
}

// killGroup sends SIGKILL to process group pgid.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
