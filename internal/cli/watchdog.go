package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sync"

	"knit.dev/knit/internal/procexec"
)

// watchdogCommand runs knit as the tool watchdog of the knit process that
// started it (procexec.Watchdog): not a command for people, so not in
// the command tree.
const watchdogCommand = "__tool-watchdog"

func serveWatchdog(stdin io.Reader, stderr io.Writer) int {
	if err := procexec.ServeWatchdog(stdin); err != nil {
		fmt.Fprintln(stderr, "knit tool watchdog:", err)
		return ExitFailure
	}
	return ExitOK
}

// selfWatchdog starts this binary as the tool watchdog once, when the
// first run's library is opened.
type selfWatchdog struct {
	// args come before the watchdog's command (see Kube.Self).
	args []string
	once sync.Once
	wd   *procexec.Watchdog
	err  error
}

// get returns the watchdog, starting it on first use; a nil s has none.
func (s *selfWatchdog) get() (*procexec.Watchdog, error) {
	if s == nil {
		return nil, nil
	}
	s.once.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			s.err = fmt.Errorf("find knit's binary for the tool watchdog: %w", err)
			return
		}
		s.wd, s.err = procexec.StartWatchdog(exe, append(slices.Clone(s.args), watchdogCommand)...)
	})
	return s.wd, s.err
}

// close ends the protocol: the watchdog keeps the deadlines it has, then exits.
func (s *selfWatchdog) close() {
	if s != nil && s.wd != nil {
		s.wd.Close()
	}
}
