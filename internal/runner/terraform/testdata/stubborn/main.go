// Command stubborn stands in for tofu in the grace-period test: it answers
// `version -json`; any other command starts a child that ignores SIGINT
// (standing in for a provider or a provisioner's process), writes the
// child's pid to child.pid beside the binary, records each SIGINT in
// signals.log and keeps running until it is killed. (A shell script cannot
// do this where SIGINT was ignored on entry: sh cannot trap it then.)
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Println("OpenTofu v1.12.6\non linux_amd64")
		return
	}
	dir := filepath.Dir(os.Args[0])
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	child := exec.Command("sh", "-c", `trap "" INT; exec sleep 3600`)
	if err := child.Start(); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "child.pid"), []byte(strconv.Itoa(child.Process.Pid)), 0o644)
	}
	for range ch {
		f, err := os.OpenFile(filepath.Join(dir, "signals.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, "interrupted")
			f.Close()
		}
	}
}
