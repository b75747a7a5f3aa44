package helm

import (
	"fmt"
	"strings"
	"sync"
)

// uninstallFailed is how Helm logs the causes of an uninstall it then
// reports only as "failed to delete release: NAME".
const uninstallFailed = "uninstall: Failed to delete release: "

// helmLog is the logger knit gives Helm: it drops everything but the
// causes Helm's errors leave out (a delete the cluster forbade), which
// explain adds to the error. Object names only: Helm logs no values here.
type helmLog struct {
	mu    sync.Mutex
	cause string
}

func (l *helmLog) logf(format string, v ...any) {
	if rest, ok := strings.CutPrefix(format, uninstallFailed); ok {
		l.mu.Lock()
		l.cause = fmt.Sprintf(rest, v...)
		l.mu.Unlock()
	}
}

// explain adds the cause Helm logged to err, once.
func (l *helmLog) explain(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cause == "" {
		return err
	}
	cause := l.cause
	l.cause = ""
	return fmt.Errorf("%w: %s", err, cause)
}
