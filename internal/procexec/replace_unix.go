//go:build unix

package procexec

import (
	"fmt"
	"os"
	"syscall"
)

// Replace makes this process run the program at path with argv (argv[0]
// included) and this process's environment: the same process ID, streams
// and parent, so signals sent to it reach the new program. It returns only
// when the program cannot be started.
func Replace(path string, argv []string) error {
	if err := syscall.Exec(path, argv, os.Environ()); err != nil {
		return fmt.Errorf("run %s: %w", path, err)
	}
	return nil
}
