package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// A process's peak RSS as wait4 reports it is not its own: Go starts a
// child with vfork, so the child's high-water mark starts at its parent's
// resident size, and this test binary (race-instrumented, late in the
// package: 2.5 GiB seen) is far bigger than knit. measureRSS starts cmd
// through a fresh copy of this binary instead: the launcher waits for knit
// and writes knit's peak, which then counts at most the launcher's own
// start-up size (about 95 MiB under -race, well under the bounds tested).
const rssLauncherEnv = "KNIT_E2E_RSS_TO"

// measureRSS rewrites cmd to run through the launcher; peak reads the
// result once cmd has exited.
func measureRSS(cmd *exec.Cmd, file string) (peak func() (int64, error)) {
	self, err := os.Executable()
	if err != nil {
		panic(err)
	}
	cmd.Args = append([]string{self}, cmd.Args...)
	cmd.Path = self
	cmd.Env = append(cmd.Env, rssLauncherEnv+"="+file)
	return func() (int64, error) {
		b, err := os.ReadFile(file)
		if err != nil {
			return 0, fmt.Errorf("the launcher wrote no peak RSS: %w", err)
		}
		return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
}

// launchMeasured is TestMain in the launcher: it runs its arguments with
// its own stdio and environment (less its own variable), writes the
// child's peak RSS in bytes to the file, and exits with the child's code.
func launchMeasured(file string) int {
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = without(os.Environ(), rssLauncherEnv+"=")
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		fmt.Fprintln(os.Stderr, "rss launcher:", err)
		return 125
	}
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // KiB on Linux
	if err := os.WriteFile(file, []byte(strconv.FormatInt(rss, 10)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "rss launcher:", err)
		return 125
	}
	return cmd.ProcessState.ExitCode()
}
