//go:build unix

package procexec

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// identifyPS asks ps for process pid's start time (to the second: a PID
// is not reused within a second in practice), the portable fallback of
// Identify.
func identifyPS(pid int) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ps", "-o", "lstart=", "-p", strconv.Itoa(pid)).Output()
	s := strings.Join(strings.Fields(string(out)), " ")
	if err != nil || s == "" {
		return "", fmt.Errorf("ps -p %d: no such process or no start time: %v", pid, err)
	}
	return "ps:" + s, nil
}
