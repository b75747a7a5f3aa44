package procexec

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Identify returns what tells process pid apart from any later process
// given the same PID: on Linux its start time in clock ticks since boot
// (/proc/PID/stat) with the boot's ID, elsewhere the start time ps reports.
func Identify(pid int) (string, error) {
	f, err := procStat(pid)
	if errors.Is(err, os.ErrNotExist) && !procMounted() {
		return identifyPS(pid) // no /proc: the portable way
	}
	if err != nil {
		return "", err
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	return "linux:" + strings.TrimSpace(string(boot)) + ":" + f.start, nil
}

// statFields are the fields of /proc/PID/stat knit reads.
type statFields struct {
	state byte
	pgrp  int
	start string // starttime, clock ticks since boot
}

// procStat reads /proc/pid/stat. The command name (field 2) may hold
// spaces and parentheses: the fields after it are counted from its last ')'.
func procStat(pid int) (statFields, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return statFields{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return statFields{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3 (state)
	if len(f) < 20 || len(f[0]) != 1 {
		return statFields{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil {
		return statFields{}, fmt.Errorf("/proc/%d/stat: pgrp: %w", pid, err)
	}
	return statFields{state: f[0][0], pgrp: pgrp, start: f[19]}, nil
}

func procMounted() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

// groupLive reports whether process group pgid has a member that is not a
// zombie: a zombie waits only for its parent to reap it (which, where PID
// 1 reaps nobody, may be never) and can neither run nor be killed.
func groupLive(pgid int) bool {
	if !signalable(-pgid) {
		return false
	}
	d, err := os.Open("/proc")
	if err != nil {
		return true
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return true
	}
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		f, err := procStat(pid)
		if err == nil && f.pgrp == pgid && f.state != 'Z' && f.state != 'X' {
			return true
		}
	}
	return false
}
