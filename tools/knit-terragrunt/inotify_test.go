//go:build linux

package main

import (
	"bytes"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// opens watches folders (not their subfolders) for files being opened,
// with inotify: the proof that the import read nothing there.
type opens struct {
	fd    int
	names map[int32]string
}

func watchOpens(t *testing.T, dirs ...string) *opens {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	w := &opens{fd: fd, names: map[int32]string{}}
	for _, d := range dirs {
		wd, err := unix.InotifyAddWatch(fd, d, unix.IN_OPEN|unix.IN_ACCESS)
		if err != nil {
			t.Fatal(err)
		}
		w.names[int32(wd)] = d
	}
	return w
}

// opened is every file (not folder) opened in the watched folders since
// the watch began.
func (w *opens) opened() []string {
	var out []string
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if err != nil || n <= 0 {
			return out
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			if ev.Mask&unix.IN_ISDIR == 0 {
				out = append(out, w.names[ev.Wd]+"/"+string(bytes.TrimRight(name, "\x00")))
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}
